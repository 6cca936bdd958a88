"""Numbered citations for prompts: ``[n]`` in an answer maps back to ``(page, path set)``, as in
``spire_langchain`` (the same names: :func:`numbered_citations`, ``SpireRetriever.format_citations``)."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import BaseNode, NodeWithScore

from spire_core import Citation, Policy
from spire_core.options import Fmt
from spire_core.query.strength import ranked_evidence_of
from spire_core.results.schema import DOC_ID, citations_from, from_metadata
from spire_core.results.sources import Sources, cite_sources
from spire_core.size import SizeFn
from spire_core.values import Documents


def numbered_citations(nodes: Sequence[NodeWithScore | BaseNode]) -> list[Citation]:
    """The citations of retrieved ``nodes`` named as evidence, strongest first; the ``n``-th is
    ``[n]`` in ``SpireRetriever.format_citations(nodes)`` (:func:`spire_core.results.sources.numbered`).

    A node without SPIRE citations counts as one citation with an empty path set, after them.
    """
    per_node = [(node, citations_from(node.metadata)) for node in (_node(n) for n in nodes)]
    plain = [
        Citation(str(node.metadata.get(DOC_ID) or node.ref_doc_id or node.node_id), frozenset(), node.get_content())
        for node, cited in per_node
        if not cited
    ]
    return [*ranked_evidence_of([c for _, cited in per_node for c in cited]), *plain]


def cited_sources(
    nodes: Sequence[NodeWithScore | BaseNode],
    pages: Documents,
    *,
    budget: int,
    size: SizeFn,
    policy: Policy,
    fmt: Fmt,
) -> Sources:
    """The prompt sources of SPIRE results: one merged view per page, ``[n]`` after the ``n``-th citation.

    Numbering is :func:`numbered_citations`'; the whole costs at most ``budget`` under ``size``
    (:func:`spire_core.results.sources.cite_sources`). Raises ``ValueError`` for a node that is no
    SPIRE result.
    """
    results = []
    for node in map(_node, nodes):
        sub = from_metadata(node.metadata, node.get_content(), size=size)
        if sub is None or not sub.citations:
            raise ValueError(f"node {node.node_id!r} is not a SPIRE result: it has no citations")
        results.append(sub)
    return cite_sources(results, pages, budget=budget, size=size, policy=policy, fmt=fmt)


def _node(node: NodeWithScore | BaseNode) -> BaseNode:
    return node.node if isinstance(node, NodeWithScore) else node
