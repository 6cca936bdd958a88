"""Numbered citations for prompts: ``[n]`` in an answer maps back to ``(source, path set)``."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document as LCDocument

from spire_core import Citation, Policy
from spire_core.options import Fmt
from spire_core.query.strength import ranked_evidence_of
from spire_core.results.schema import DOC_ID, from_metadata
from spire_core.results.sources import Sources, cite_sources
from spire_core.size import SizeFn
from spire_core.values import Documents

from ._source import citations_of, source_id


def numbered_citations(documents: Sequence[LCDocument]) -> list[Citation]:
    """The citations of retrieved ``documents`` named as evidence, strongest first; the ``n``-th is
    ``[n]`` (:func:`spire_core.results.sources.numbered`).

    A document without SPIRE citations counts as one citation with an empty path set, after them.
    """
    per_doc = [(doc, citations_of(doc)) for doc in documents]
    plain = [
        Citation(str(doc.metadata.get(DOC_ID) or source_id(doc)), frozenset(), doc.page_content)
        for doc, cited in per_doc
        if not cited
    ]
    return [*ranked_evidence_of([c for _, cited in per_doc for c in cited]), *plain]


def cited_sources(
    documents: Sequence[LCDocument], pages: Documents, *, budget: int, size: SizeFn, policy: Policy, fmt: Fmt
) -> Sources:
    """The prompt sources of SPIRE results: one merged view per page, ``[n]`` after the ``n``-th citation.

    Numbering is :func:`numbered_citations`'; the whole costs at most ``budget`` under ``size``
    (:func:`spire_core.sources.cite_sources`). Raises ``ValueError`` for a document that is no
    SPIRE result.
    """
    results = []
    for doc in documents:
        sub = from_metadata(doc.metadata, doc.page_content, size=size)
        if sub is None or not sub.citations:
            raise ValueError(f"document {doc.id or source_id(doc)!r} is not a SPIRE result: it has no citations")
        results.append(sub)
    return cite_sources(results, pages, budget=budget, size=size, policy=policy, fmt=fmt)
