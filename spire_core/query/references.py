"""References on citations: what each cited sentence's text refers to, recorded beside it.

Recording is free and safe ("What a Sentence Forgets", remediation 5): each citation carries the
references its own path set makes (:func:`~spire_core.document.links.references`), read from the
page's link table, which is built once per page. Nothing is ranked, rendered or substituted
differently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from spire_core.document.links import references
from spire_core.document.tree import Document
from spire_core.query.aggregate import Subdocument, seed_indices
from spire_core.query.citation import Citation


def with_references(doc: Document, citations: Sequence[Citation]) -> list[Citation]:
    """``citations`` of page ``doc``, each carrying the references its text makes."""
    out = []
    for c in citations:
        refs = references(doc, seed_indices(doc, c.paths)[1])
        out.append(replace(c, references=refs) if refs != c.references else c)
    return out


def cite_references(results: Sequence[Subdocument], documents: Callable[[str], Document]) -> list[Subdocument]:
    """``results`` whose citations carry the references their text makes (:func:`with_references`)."""
    out = []
    for sub in results:
        cited = with_references(documents(sub.doc_id), sub.citations)
        same = all(a is b for a, b in zip(cited, sub.citations, strict=True))
        out.append(sub if same else replace(sub, citations=cited))
    return out
