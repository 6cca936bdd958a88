"""Citations: a document id, a path set and the text a reader sees for it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from spire_core.document.links import Reference
from spire_core.document.paths import decoded_paths, encode_paths
from spire_core.document.tree import Path


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
