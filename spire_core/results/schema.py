"""The one result schema both adapters (and the benchmark) share.

A *unit* (one indexed seed) and a *result* (one page's :class:`Subdocument`) travel through a
framework as text plus flat metadata under the keys below (one ``spire_`` prefix). Path
sets are encoded with :func:`~spire_core.encode_paths`, citations with
:meth:`Citation.to_dict`. Ids are ``uuid5`` of the page id and the *full* path set, so
re-indexing a page replaces its units and two units never share an id.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from spire_core.context import HTML, Policy
from spire_core.document.links import Reference, decode_references, encode_references
from spire_core.document.paths import (
    DECODED_MEMO_SIZE,
    LEGACY_PATH_SEPARATOR,
    PATH_SEPARATOR,
    decode_paths,
    decoded_paths,
    encode_path_sets,
    encode_paths,
)
from spire_core.document.render import render
from spire_core.document.tree import Path
from spire_core.errors import PathFormatError, SchemaVersionError
from spire_core.indexing.passages import decode_members, encode_members
from spire_core.indexing.units import Seed
from spire_core.options import DEFAULT_SIZE, Fmt
from spire_core.query.aggregate import own_paths
from spire_core.query.evidence import Selection
from spire_core.query.references import with_references
from spire_core.size import SizeFn
from spire_core.values import Citation, Documents, Subdocument, citation_key, document_lookup

#: the page (source document) id
DOC_ID = "spire_doc_id"
#: the encoded path set: a unit's seed paths, or the rendered paths of a result
PATHS = "spire_paths"
#: a unit's begin path (a sentence's first node, a block's element)
BEGIN = "spire_begin"
#: a passage unit's member sentences: their path counts in ``PATHS``' sorted order (``"4,3,5"``)
MEMBERS = "spire_members"
#: a result's merged seed paths (without their global context)
SEEDS = "spire_seeds"
#: what a result's rendering costs under the size function
COST = "spire_cost"
#: a result's score: its strongest citation's strength as evidence, in [0, 1] (:mod:`spire_core.query.strength`)
SCORE = "spire_score"
#: a result's citations, one :meth:`Citation.to_dict` each
CITATIONS = "spire_citations"
#: what the evidence filter did: ``{"ok", "labels", "unknown", "error", "empty_reason"}``
FILTER = "spire_filter"
#: the ids of a stored page's units (to delete them when the page changes)
UNIT_IDS = "spire_ids"
#: the references a unit's text makes (:func:`~spire_core.document.links.encode_references`: a
#: compact JSON list in one string, flat metadata); absent when it makes none. A citation carries its own
#: under ``references`` in its :meth:`Citation.to_dict`.
REFERENCES = "spire_refs"
#: the version of this schema a unit or result was written with (absent: version 1)
SCHEMA = "spire_schema"
#: the schema this SPIRE writes and the newest it reads; bumped when a key changes meaning
#: (2: path sets are separated by ``,``, shell-safe; version 1's ``;`` is still read)
SCHEMA_VERSION = 2
#: every key SPIRE writes; stripped from a source's metadata and hidden from embedded/LLM text
SPIRE_KEYS = (DOC_ID, PATHS, BEGIN, MEMBERS, SEEDS, COST, SCORE, CITATIONS, FILTER, UNIT_IDS, REFERENCES, SCHEMA)

#: Namespace of unit ids (a later collection may bring its own).
UNIT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/spire-retrieval/spire/unit")
#: Namespace of result ids (a result and the unit with the same paths never share an id).
RESULT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/spire-retrieval/spire/result")


def unit_namespace(name: str) -> uuid.UUID:
    """The id namespace of the units of collection ``name`` (``""``: :data:`UNIT_NAMESPACE`).

    The same page indexed into two collections sharing one table (LangChain ``PGVector``
    collections do) then gets distinct unit ids, so neither upsert overwrites the other.
    """
    return uuid.uuid5(UNIT_NAMESPACE, name) if name else UNIT_NAMESPACE


def unit_id(doc_id: str, paths: Iterable[Path], *, namespace: uuid.UUID = UNIT_NAMESPACE) -> str:
    """The deterministic id of path set ``paths`` of page ``doc_id``: ``uuid5(namespace, "doc_id#paths")``."""
    return _id(namespace, doc_id, encode_paths(paths))


def result_id(metadata: Mapping[str, Any]) -> str:
    """The id of the result whose :func:`to_metadata` is ``metadata``: the :func:`unit_id` of its page
    and path set in :data:`RESULT_NAMESPACE`, from the path set encoded there (not encoded again)."""
    return _id(RESULT_NAMESPACE, metadata[DOC_ID], metadata[PATHS])


def _id(namespace: uuid.UUID, doc_id: str, encoded_paths: str) -> str:
    # hashed in schema version 1's spelling: a unit keeps its id across the separator change
    legacy = encoded_paths.replace(PATH_SEPARATOR, LEGACY_PATH_SEPARATOR)
    return str(uuid.uuid5(namespace, f"{doc_id}#{legacy}"))


def user_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` without the keys SPIRE writes."""
    return {k: v for k, v in metadata.items() if k not in SPIRE_KEYS}


def unit_metadata(
    doc_id: str,
    paths: Iterable[Path],
    begin: Path,
    members: Sequence[frozenset[Path]] = (),
    references: Sequence[Reference] = (),
) -> dict[str, Any]:
    """The SPIRE metadata of one indexed unit (seed); a passage's ``members`` when it has several,
    the ``references`` its text makes when it makes any."""
    meta: dict[str, Any] = {
        DOC_ID: doc_id,
        PATHS: encode_paths(paths),
        BEGIN: encode_paths([begin]),
        SCHEMA: SCHEMA_VERSION,
    }
    if len(members) > 1:
        meta[MEMBERS] = encode_members(members)
    if references:
        meta[REFERENCES] = encode_references(references, doc_id)
    return meta


def seed_metadata(doc_id: str, seed: Seed) -> dict[str, Any]:
    """:func:`unit_metadata` of an indexed :class:`~spire_core.Seed` (what both adapters store)."""
    return unit_metadata(doc_id, seed.paths, seed.begin, seed.members, seed.references)


def references_of(metadata: Mapping[str, Any]) -> tuple[Reference, ...]:
    """The references a unit's metadata records (empty when none, or when they do not decode)."""
    text, doc_id = metadata.get(REFERENCES), metadata.get(DOC_ID)
    if not isinstance(text, str) or not text:
        return ()
    try:
        return decode_references(text, doc_id if isinstance(doc_id, str) else None)
    except PathFormatError:
        return ()


@lru_cache(maxsize=DECODED_MEMO_SIZE)
def _members(paths: frozenset[Path], members: str) -> tuple[frozenset[Path], ...]:
    return decode_members(paths, members)


def members_of(metadata: Mapping[str, Any], paths: frozenset[Path]) -> tuple[frozenset[Path], ...]:
    """The sentence path sets a hit on a unit with seed ``paths`` cites: a passage's members, else ``(paths,)``.

    Raises :class:`~spire_core.PathFormatError` when the member counts do not split ``paths``.
    """
    members = metadata.get(MEMBERS)
    return _members(paths, members) if isinstance(members, str) and members else (paths,)


def unit_of(metadata: Mapping[str, Any]) -> tuple[str, frozenset[Path]] | None:
    """``(doc_id, seed paths)`` of a unit's metadata; None when it carries no SPIRE unit.

    Raises :class:`~spire_core.PathFormatError` when the path set cannot be decoded and
    :class:`~spire_core.errors.SchemaVersionError` for metadata of a newer schema.
    """
    doc_id, paths = metadata.get(DOC_ID), metadata.get(PATHS)
    if not isinstance(doc_id, str) or not isinstance(paths, str):
        return None
    version = metadata.get(SCHEMA, 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"metadata of SPIRE schema {version!r}; this SPIRE reads up to {SCHEMA_VERSION}: upgrade it", doc_id=doc_id
        )
    return doc_id, decoded_paths(paths)


def to_metadata(sub: Subdocument) -> dict[str, Any]:
    """The SPIRE metadata of one result (its text is ``sub.text``)."""
    # the seeds are paths of the context, the citations' paths seeds: each path is formatted once
    paths, seeds, *cited = encode_path_sets([sub.paths, sub.seeds, *(c.paths for c in sub.citations)])
    return {
        DOC_ID: sub.doc_id,
        PATHS: paths,
        SEEDS: seeds,
        COST: sub.cost,
        SCORE: sub.score,
        CITATIONS: [c.to_dict(encoded=e) for c, e in zip(sub.citations, cited, strict=True)],
        SCHEMA: SCHEMA_VERSION,
    }


def citations_from(metadata: Mapping[str, Any]) -> list[Citation]:
    """The citations a result's metadata carries (empty for anything else)."""
    return [Citation.from_dict(c) for c in metadata.get(CITATIONS) or ()]


def citation_records(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """:func:`citations_from` as JSON-ready data, each with its ``id`` (:meth:`Citation.key`).

    :func:`to_metadata` writes each citation as :meth:`Citation.to_dict` does, its path set in
    canonical form, so a record is read as it is, without decoding and encoding again; one that
    is not (metadata written by hand) goes through :class:`Citation`.
    """
    out = []
    for c in metadata.get(CITATIONS) or ():
        doc_id, paths = c.get("doc_id"), c.get("paths")
        if not (isinstance(doc_id, str) and isinstance(paths, str) and isinstance(c.get("text"), str)):
            c = Citation.from_dict(c).to_dict()
            doc_id, paths = c["doc_id"], c["paths"]
        out.append({"id": citation_key(doc_id, paths), **c})
    return out


def from_metadata(
    metadata: Mapping[str, Any], text: str, *, score: float | None = None, size: SizeFn = DEFAULT_SIZE
) -> Subdocument | None:
    """The :class:`Subdocument` a result's ``text`` and ``metadata`` stand for; None for other metadata.

    ``score`` (a framework's own score) wins over the stored one; a missing cost is ``size(text)``.
    Raises :class:`~spire_core.PathFormatError` when a path set cannot be decoded.
    """
    unit = unit_of(metadata)
    if unit is None:
        return None
    doc_id, paths = unit
    seeds = metadata.get(SEEDS)
    cost = metadata.get(COST)
    stored = metadata.get(SCORE)
    if score is None:
        score = float(stored) if isinstance(stored, int | float) else 0.0
    return Subdocument(
        doc_id=doc_id,
        seeds=decode_paths(seeds) if isinstance(seeds, str) and seeds else paths,
        paths=paths,
        text=text,
        cost=cost if isinstance(cost, int) else size(text),
        score=score,
        citations=citations_from(metadata),
    )


def subdocuments(
    citations: Sequence[Citation],
    documents: Documents,
    *,
    policy: Policy = HTML,
    fmt: Fmt = "markdown",
    size: SizeFn = DEFAULT_SIZE,
    scores: Mapping[str, float] | None = None,
) -> list[Subdocument]:
    """Chosen ``citations`` as one :class:`Subdocument` per page, in order of first citation.

    A page's cited path sets are merged, given their own context once
    (:func:`~spire_core.query.aggregate.own_paths`: as aggregation shows them), rendered and sized;
    its score is ``scores[doc_id]`` (e.g. the retrieved result's), else its best citation's.
    """
    get = document_lookup(documents)
    by_doc: dict[str, list[Citation]] = {}
    for c in citations:
        by_doc.setdefault(c.doc_id, []).append(c)
    out: list[Subdocument] = []
    for doc_id, cited in by_doc.items():
        doc = get(doc_id)
        seeds = frozenset(p for c in cited for p in c.paths)
        paths = own_paths(doc, seeds, policy)
        text = render(doc, paths, fmt=fmt)
        best = max((c.score for c in cited if c.score is not None), default=0.0)
        score = scores[doc_id] if scores is not None and doc_id in scores else best
        out.append(Subdocument(doc_id, seeds, paths, text, size(text), score, with_references(doc, cited)))
    return out


def filter_report(selection: Selection) -> dict[str, Any]:
    """The :data:`FILTER` metadata value: what the evidence filter's model chose."""
    return {
        "ok": selection.ok,
        "labels": list(selection.labels),
        "unknown": list(selection.unknown),
        "error": selection.error,
        "empty_reason": selection.empty_reason,
    }
