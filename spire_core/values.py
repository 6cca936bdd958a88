"""The values the layers above the document model pass one another.

A search yields :class:`Hit` values (:data:`Search`); aggregation turns them into one
:class:`Subdocument` per page, each with its :class:`Citation` values; pages are looked up
through :data:`Documents`. Below the code that makes them (``indexing``, ``query``) and the
code that reads them (``results``, ``pipeline``, the adapters), so no layer reaches up for them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from spire_core.document.links import Reference
from spire_core.document.paths import decoded_paths, encode_paths
from spire_core.document.tree import Document, Path


@dataclass(frozen=True)
class Hit:
    """One ranked search result: a seed path set of a document and its similarity.

    ``referenced_by`` is set on a hit that follows a reference (``resolve_refs``): the key of the
    citation making it, which its own citation then names.
    """

    doc_id: str
    paths: frozenset[Path]
    score: float
    referenced_by: str | None = field(default=None, compare=False)


class Follow(Protocol):
    """What :func:`aggregate` offers after an admitted hit (query-time resolution of references)."""

    def __call__(self, hit: Hit) -> Sequence[Hit]:
        """The hits ``hit``'s references name, offered right after it once it is admitted."""
        ...

    def wants(self, hit: Hit) -> bool:
        """Whether ``hit`` may name anything (else a run of hits is admitted as usual)."""
        ...


@dataclass
class Subdocument:
    """One document's share of the result: merged seeds, their context, the delivered text."""

    doc_id: str
    #: union of the admitted seed path sets
    seeds: frozenset[Path]
    #: ``global_context(seeds)``: the paths that are rendered
    paths: frozenset[Path]
    #: the rendering delivered (and charged against the budget)
    text: str
    cost: int
    #: once ranked (:func:`~spire_core.query.strength.rank_evidence`, as every entry point does), its
    #: strongest citation's strength in [0, 1]; straight from ``aggregate``, its best hit's search score
    score: float
    #: one per admitted seed: its own paths and its own rendering with its own global context
    citations: list[Citation] = field(default_factory=list)


#: A search returns the top ``k`` hits (any fewer when the index has fewer).
Search = Callable[[int], Sequence[Hit]]
Documents = Callable[[str], Document] | Mapping[str, Document]


def document_lookup(documents: Documents) -> Callable[[str], Document]:
    """``documents`` as a ``doc_id -> Document`` callable (a mapping is indexed, a callable called)."""
    return documents.__getitem__ if isinstance(documents, Mapping) else documents


@dataclass(frozen=True)
class Citation:
    """One citable piece of evidence: ``paths`` of document ``doc_id``, rendered as ``text``.

    ``score`` is its strength as evidence for the question, in [0, 1] (:mod:`spire_core.query.strength`);
    ``evidence`` says whether the query names it as evidence (within the citation cut) or delivers
    it as context only. ``references`` are the references its text makes (:mod:`spire_core.document.links`), recorded
    beside the text and never substituted into it; ``referenced_by`` is, for a citation delivered
    by following a reference (``resolve_refs``), the key of the citation that makes the reference.
    """

    doc_id: str
    paths: frozenset[Path]
    text: str
    score: float | None = field(default=None, compare=False)
    references: tuple[Reference, ...] = field(default=(), compare=False)
    referenced_by: str | None = field(default=None, compare=False)
    evidence: bool = field(default=True, compare=False)

    def key(self) -> str:
        """A stable identifier: ``doc_id#encoded-paths`` (:func:`citation_key`)."""
        return self._key

    @cached_property
    def _key(self) -> str:
        # once per citation: a merged citation's key is asked for each of its sentences
        return citation_key(self.doc_id, encode_paths(self.paths))

    def to_dict(self, *, encoded: str | None = None) -> dict[str, Any]:
        """The citation as JSON-ready data; ``encoded``: its paths' :func:`encode_paths`, when known."""
        paths = encode_paths(self.paths) if encoded is None else encoded
        out: dict[str, Any] = {"doc_id": self.doc_id, "paths": paths, "text": self.text}
        if self.score is not None:
            out["score"] = self.score
        if self.references:
            out["references"] = [r.to_dict() for r in self.references]
        if self.referenced_by is not None:
            out["referenced_by"] = self.referenced_by
        if not self.evidence:
            out["evidence"] = False
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Citation:
        paths = data["paths"]
        decoded = decoded_paths(paths) if isinstance(paths, str) else frozenset(tuple(p) for p in paths)
        refs = data.get("references") or ()
        by = data.get("referenced_by")
        return cls(
            str(data["doc_id"]),
            decoded,
            str(data["text"]),
            data.get("score"),
            tuple(Reference.from_dict(r) for r in refs if isinstance(r, dict)),
            by if isinstance(by, str) else None,
            data.get("evidence", True) is not False,
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Citation:
        return cls.from_dict(json.loads(text))


def citation_key(doc_id: str, encoded: str) -> str:
    """A citation's identifier from its page id and its path set's :func:`encode_paths`."""
    return f"{doc_id}#{encoded}"
