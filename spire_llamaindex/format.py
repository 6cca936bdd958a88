"""Numbered citations for prompts: ``[n]`` in an answer maps back to ``(page, path set)``, as in
``spire_langchain`` (the same names: :func:`numbered_citations`, ``SpireRetriever.format_citations``);
both read the results through :mod:`spire_core.results.sources`."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import BaseNode, NodeWithScore

from spire_core import Citation, Policy
from spire_core.options import Fmt
from spire_core.results.sources import Retrieved, Sources, cite_retrieved, numbered_retrieved
from spire_core.size import SizeFn
from spire_core.values import Documents


def numbered_citations(nodes: Sequence[NodeWithScore | BaseNode]) -> list[Citation]:
    """The citations of retrieved ``nodes`` named as evidence, strongest first; the ``n``-th is
    ``[n]`` in ``SpireRetriever.format_citations(nodes)``
    (:func:`spire_core.results.sources.numbered_retrieved`: a node without SPIRE citations counts
    as one citation with an empty path set, after them)."""
    return numbered_retrieved(_retrieved(nodes))


def cited_sources(
    nodes: Sequence[NodeWithScore | BaseNode],
    pages: Documents,
    *,
    budget: int,
    size: SizeFn,
    policy: Policy,
    fmt: Fmt,
) -> Sources:
    """The prompt sources of SPIRE results: one merged view per page, ``[n]`` after the ``n``-th
    citation, costing at most ``budget`` (:func:`spire_core.results.sources.cite_retrieved`).
    Raises ``ValueError`` for a node that is no SPIRE result."""
    return cite_retrieved(_retrieved(nodes), pages, budget=budget, size=size, policy=policy, fmt=fmt)


def _retrieved(nodes: Sequence[NodeWithScore | BaseNode]) -> list[Retrieved]:
    out: list[Retrieved] = []
    for n in nodes:
        node = n.node if isinstance(n, NodeWithScore) else n
        out.append((node.ref_doc_id or node.node_id, node.metadata, node.get_content()))
    return out
