"""The indexing surface (Section 3.1): one seed per sentence, block or passage, rendered with context.

The seed's path set is its identity; ``text`` is only what gets embedded. A table cell is
a block leaf like a paragraph: its sentences are seeds, rendered under their row and
column labels.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from threading import Lock
from typing import get_args

from spire_core.context import HTML, Policy
from spire_core.document.links import Reference, references
from spire_core.document.render import rendered
from spire_core.document.tree import INLINE_TAGS, Document, Path
from spire_core.indexing.passages import ContextBudget, passages
from spire_core.options import Fmt, Unit
from spire_core.reading.decoding import DEFAULT_MAX_BYTES
from spire_core.reading.parse import parse_page
from spire_core.reading.sentences import sentence_indices, sentences

UNITS: tuple[Unit, ...] = get_args(Unit)
#: A page that redirects at once (:attr:`Document.redirect`) and shows at most this many characters
#: of its own ("Redirecting to the new page...") is a redirect stub: it has no units.
REDIRECT_STUB_CHARS = 200

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Seed:
    """One unit of the indexing surface."""

    doc_id: str | None
    #: the seed path set ``S_b`` (the unit's identity)
    paths: frozenset[Path]
    #: the begin path (for a block: the block element's path)
    begin: Path
    #: ``render(global_context(S_b))``, its context's nearest part where that is over the bounds
    #: (:meth:`~spire_core.context.Policy.nearest`): the text to embed
    text: str
    #: the unit's own words, without context
    own_text: str
    #: the sentence path sets a hit on this seed cites (a passage's members; else the seed itself)
    members: tuple[frozenset[Path], ...] = ()
    #: the references its text makes (:mod:`spire_core.document.links`): recorded, never embedded
    references: tuple[Reference, ...] = ()


def seeds(doc: Document, *, policy: Policy = HTML, fmt: Fmt = "markdown", unit: Unit = "sentence") -> list[Seed]:
    """The seeds of ``doc``: each sentence (``unit="sentence"``), block leaf (``"block"``) or
    passage (``"passage"``, :func:`spire_core.passages.passages`, cap and window by default).

    A page's seeds' texts hold at most its :class:`~spire_core.indexing.passages.ContextBudget`
    of context in all: past it, units are embedded with their own words only. A redirect stub
    (:func:`redirect_stub`) has none: it is logged at info and skipped."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    if redirect_stub(doc):
        log.info("page %r skipped: a redirect to %r with no content of its own", doc.doc_id, doc.redirect)
        return []
    if unit == "passage":
        by_paths = {s.paths: s.text for s in sentences(doc)}
        return [
            Seed(
                doc_id=doc.doc_id,
                paths=p.paths,
                begin=p.begin,
                text=p.text,
                own_text=" ".join(by_paths[m] for m in p.members),
                members=p.members,
                references=p.references,
            )
            for p in passages(doc, policy=policy, fmt=fmt)
        ]
    groups: list[tuple[int, list[int], str]] = []
    for s in sentences(doc):
        nodes = sentence_indices(doc, *s.span)
        anchor = _block_of(doc, s.span[0]) if unit == "block" else s.span[0]
        if unit == "block" and groups and groups[-1][0] == anchor:
            groups[-1][1].extend(nodes)
            groups[-1] = (anchor, groups[-1][1], groups[-1][2] + " " + s.text)
            continue
        groups.append((anchor, nodes, s.text))
    budget = ContextBudget(doc)  # past it, a unit is embedded without context
    out: list[Seed] = []
    for anchor, nodes, own in groups:
        closed = set(nodes) if budget.low else policy.nearest(doc, nodes)
        paths = doc.to_paths(nodes)
        out.append(
            Seed(
                doc_id=doc.doc_id,
                paths=paths,
                begin=doc.path(anchor),
                text=budget.spend(*rendered(doc, closed, fmt=fmt)),
                own_text=own,
                members=(paths,),
                references=references(doc, nodes),
            )
        )
    return out


def redirect_stub(doc: Document) -> bool:
    """Whether ``doc`` is a redirect, not content: a ``<meta http-equiv="refresh">`` with a URL,
    and at most :data:`REDIRECT_STUB_CHARS` characters of text outside ``<head>`` (its title is
    no content: it names the page it sends to)."""
    if doc.redirect is None or not len(doc):
        return False
    shown = 0
    for i in doc.children[0]:
        if doc.tag[i] != "head":
            shown += len(" ".join(doc.subtree_text(i).split()))
            if shown > REDIRECT_STUB_CHARS:
                return False
    return True


def _block_of(doc: Document, node: int) -> int:
    for anc in doc.ancestors(node):
        if doc.tag[anc] not in INLINE_TAGS:
            return anc
    return 0


class DocumentCache:
    """A bounded LRU of parsed documents: ``cache(doc_id)`` parses ``load(doc_id)`` once (with :func:`parse_page`)."""

    def __init__(
        self,
        load: Callable[[str], str | bytes],
        *,
        maxsize: int = 64,
        segment: bool = True,
        boilerplate: bool = True,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        self.load = load
        self.maxsize = maxsize
        #: the :func:`parse_page` options every page is parsed with
        self.segment, self.boilerplate, self.max_bytes = segment, boilerplate, max_bytes
        self._docs: OrderedDict[str, Document] = OrderedDict()
        #: doc id -> invalidations so far: a parse that overlapped one is not stored (stale)
        self._versions: dict[str, int] = {}
        self._lock = Lock()

    def __call__(self, doc_id: str) -> Document:
        with self._lock:
            doc = self._docs.get(doc_id)
            if doc is not None:
                self._docs.move_to_end(doc_id)
                return doc
            version = self._versions.get(doc_id, 0)
        doc = parse_page(
            self.load(doc_id),
            doc_id=doc_id,
            segment=self.segment,
            boilerplate=self.boilerplate,
            max_bytes=self.max_bytes,
        )
        with self._lock:
            if self._versions.get(doc_id, 0) == version:
                self._docs[doc_id] = doc
                while len(self._docs) > self.maxsize:
                    self._docs.popitem(last=False)
        return doc

    def cached(self, doc_id: str) -> Document | None:
        """The parsed ``doc_id`` if it is held (marked recently used), else None: nothing is loaded."""
        with self._lock:
            doc = self._docs.get(doc_id)
            if doc is not None:
                self._docs.move_to_end(doc_id)
            return doc

    def invalidate(self, doc_id: str) -> None:
        """Forget ``doc_id`` (after its source changed); a parse of it still running is not kept."""
        with self._lock:
            self._docs.pop(doc_id, None)
            self._versions[doc_id] = self._versions.get(doc_id, 0) + 1
