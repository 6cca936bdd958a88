"""Numbered citations for prompts: ``[n]`` in an answer maps back to ``(source, path set)``."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document as LCDocument

from spire_core import Citation
from spire_core.results import DOC_ID

from ._source import citations_of, source_id


def numbered_citations(documents: Sequence[LCDocument]) -> list[Citation]:
    """The citations of retrieved ``documents`` in order; the ``n``-th is ``[n]``.

    A document without SPIRE citations counts as one citation with an empty path set.
    """
    out: list[Citation] = []
    for doc in documents:
        cited = citations_of(doc)
        out.extend(cited or [Citation(str(doc.metadata.get(DOC_ID) or source_id(doc)), frozenset(), doc.page_content)])
    return out


def format_citations(documents: Sequence[LCDocument]) -> str:
    """The citations as a numbered list for a prompt: ``[1] (source)`` then the cited text."""
    return "\n\n".join(
        f"[{n}] ({c.doc_id})\n{c.text.strip()}" for n, c in enumerate(numbered_citations(documents), start=1)
    )
