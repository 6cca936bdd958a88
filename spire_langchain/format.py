"""Numbered citations for prompts: ``[n]`` in an answer maps back to ``(source, path set)``."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document as LCDocument

from spire_core import Citation, Policy
from spire_core.options import Fmt
from spire_core.results.sources import Retrieved, Sources, cite_retrieved, numbered_retrieved
from spire_core.size import SizeFn
from spire_core.values import Documents

from ._source import source_id


def numbered_citations(documents: Sequence[LCDocument]) -> list[Citation]:
    """The citations of retrieved ``documents`` named as evidence, strongest first; the ``n``-th is
    ``[n]`` (:func:`spire_core.results.sources.numbered_retrieved`: a document without SPIRE
    citations counts as one citation with an empty path set, after them)."""
    return numbered_retrieved(_retrieved(documents))


def cited_sources(
    documents: Sequence[LCDocument], pages: Documents, *, budget: int, size: SizeFn, policy: Policy, fmt: Fmt
) -> Sources:
    """The prompt sources of SPIRE results: one merged view per page, ``[n]`` after the ``n``-th
    citation, costing at most ``budget`` (:func:`spire_core.results.sources.cite_retrieved`).
    Raises ``ValueError`` for a document that is no SPIRE result."""
    return cite_retrieved(_retrieved(documents), pages, budget=budget, size=size, policy=policy, fmt=fmt)


def _retrieved(documents: Sequence[LCDocument]) -> list[Retrieved]:
    return [(source_id(doc), doc.metadata, doc.page_content) for doc in documents]
