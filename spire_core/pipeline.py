"""The query pipeline: store hits -> sentence hits -> aggregation -> table views, in one place.

Both adapters' retrievers, both evidence filters and the benchmark runner call it; an adapter
only converts between its framework's objects and the core's (nodes or documents <-> store
hits, metadata <-> subdocuments). The store search and the page lookup are passed in:

- ``search(n)`` returns the ``n`` best store entries (:class:`StoreHit`: a unit's SPIRE
  metadata, its similarity, the hash of the page version it was made from);
- ``pages(doc_id, expected_hash)`` returns the parsed page, or raises
  :class:`~spire_core.errors.MissingSourceError`.

:func:`retrieve` pins each page for the query (read once: a page replaced meanwhile is seen
whole, old or new), validates every hit against the page as read, skips hits of another
version, of a missing page or without SPIRE metadata, searches again when a page changed
under the query, and reports what it skipped (:class:`Report`). :func:`run_query` is the
method's part alone, over hits that are already valid (the benchmark runner's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from spire_core.document.tree import Document
from spire_core.errors import MissingSourceError, PathFormatError, SchemaVersionError, UnknownPathError
from spire_core.options import DEFAULT_TARGET, OnError, QueryOptions
from spire_core.query.aggregate import aggregate, seed_indices
from spire_core.query.evidence import Evidence, aselect_evidence, select_evidence
from spire_core.query.fusion import fused_search
from spire_core.query.lexical import fusion_weight
from spire_core.query.passages import PassageHit, sentence_search
from spire_core.query.references import Resolver, cite_references
from spire_core.query.strength import LEXICAL_WEIGHT, Signals, rank_evidence
from spire_core.query.table_views import table_views
from spire_core.results.schema import filter_report, members_of, subdocuments, unit_of
from spire_core.values import Documents, Hit, Search, Subdocument, document_lookup

log = logging.getLogger("spire")

#: How often a retrieval is tried while pages change under it (a concurrent update): with 3,
#: a page replaced about 30 times a second under two reader threads went missing from a
#: query's results in the suite (tests/llamaindex/test_atomic_update.py), each try overlapping a write.
TRIES = 8
#: A search skipping hits (pages past ``max_pages``, foreign or stale entries) asks the
#: store for up to this many times what a round needs.
OVERFETCH = 8


@dataclass(frozen=True)
class StoreHit:
    """One entry a store returned for a query."""

    #: the unit's metadata (:mod:`spire_core.results.schema` keys; anything else is not a SPIRE unit)
    metadata: Mapping[str, Any]
    #: similarity, higher is better
    score: float
    #: hash of the page version the unit was made from, when the store records it
    page_hash: str | None = None


#: ``n -> the n best store entries`` (fewer when the store holds fewer).
StoreSearch = Callable[[int], Sequence[StoreHit]]
#: ``(doc_id, expected page hash or None) -> the parsed page``; raises MissingSourceError.
Pages = Callable[[str, str | None], Document]


@dataclass
class Report:
    """What one retrieval skipped, and why (the last try's)."""

    #: store entries read
    hits: int = 0
    #: entries without SPIRE metadata, or whose paths do not decode
    foreign: int = 0
    #: pages with hits that the page lookup does not have
    missing: set[str] = field(default_factory=set)
    #: pages with hits of another version than the one read (replaced during the query)
    stale: set[str] = field(default_factory=set)
    #: pages with hits that hold in the page as read
    valid: set[str] = field(default_factory=set)
    #: pages whose best-ranked hit is of another version: what the page is found for is not
    #: what the page as read would show (a hit of another version can still hold in it, at a
    #: path both versions have)
    outranked: set[str] = field(default_factory=set)

    def again(self) -> bool:
        """Whether the retrieval is worth another try: a page was replaced or removed while it ran
        (a page's best hit was of another version, or no hit had its page)."""
        return bool(self.outranked) or bool(self.missing and not self.valid and self.hits)


@dataclass
class Retrieval:
    """The results of one query, best first, and what was skipped on the way."""

    results: list[Subdocument]
    report: Report


#: ``(query, n) -> the n best sentence hits`` of a lexical index (:meth:`LexicalIndex.hits`).
LexicalSearch = Callable[[str, int], Sequence[Hit]]


def run_query(
    query: str,
    passages: Callable[[int], Sequence[PassageHit]],
    documents: Documents,
    options: QueryOptions,
    lexical: LexicalSearch | None = None,
) -> list[Subdocument]:
    """The method's query path over valid passage hits (``n -> the n best``): each passage hit is
    its member sentences (the question's words first); with ``lexical``, that ranking is fused
    with the lexical ranking of single sentences (:func:`~spire_core.query.fusion.fused_search`:
    a sentence naming the question's rare words rises inside and across passages; weighted more
    for a question in Han, kana or Hangul, :func:`~spire_core.query.lexical.fusion_weight`); the hits are
    aggregated per page under the budget, then the best-ranked tables' views are added. Every
    citation is a sentence's path set, and carries the references its text makes; with
    ``options.resolve_refs``, what an admitted sentence's references name in ``documents`` is
    offered right after it (:class:`~spire_core.query.references.Resolver`): a page ``documents``
    lacks, or an anchor gone from its page, is reported on the reference, never guessed at."""
    lookup = document_lookup(documents)
    weight = fusion_weight(query)  # the lexical ranking's, in the fusion and in each citation's strength
    signals = Signals(fused=lexical is not None, lexical_weight=LEXICAL_WEIGHT * weight)

    def scored_passages(n: int) -> Sequence[PassageHit]:
        found = passages(n)
        signals.record_passages(found)
        return found

    def scored_lexical(n: int) -> Sequence[Hit]:
        assert lexical is not None
        found = lexical(query, n)
        signals.record_lexical(found)
        return found

    hits = sentence_search(scored_passages, query=query, documents=lookup, order="overlap")
    if lexical is not None:
        hits = fused_search(hits, scored_lexical, shared_ties=True, weights=(1.0, weight))
    if options.max_pages is not None:
        hits = first_pages(hits, options.max_pages)
    resolver = Resolver(lookup) if options.resolve_refs else None
    results = aggregate(
        hits,
        documents=lookup,
        budget=options.budget,
        size=options.size,
        policy=options.policy,
        fmt=options.fmt,
        first_k=options.first_k,
        max_rounds=options.max_rounds,
        fill=options.fill,
        follow=resolver,
    )
    if options.tables:
        results = table_views(
            query, results, lookup, budget=options.budget, size=options.size, policy=options.policy, fmt=options.fmt
        )
    results = cite_references(results, lookup, resolver)
    return rank_evidence(results, signals, lookup, cut=options.cut, policy=options.policy, fmt=options.fmt)


def first_pages(search: Search, pages: int) -> Search:
    """``search`` keeping the hits of the first ``pages`` pages it ranks (asking it for more while
    hits of other pages are dropped): the budget goes to the best pages."""

    def kept(m: int) -> tuple[int, list[Hit]]:
        found = search(m)
        first: dict[str, None] = {}
        out = []
        for hit in found:
            if hit.doc_id not in first and len(first) >= pages:
                continue
            first[hit.doc_id] = None
            out.append(hit)
        return len(found), out

    return lambda n: _asking_more(n, kept)


def _asking_more(
    n: int, read: Callable[[int], tuple[int, list[T]]], *, first: int | None = None, most: int | None = None
) -> list[T]:
    """The ``n`` best of ``read(m)`` (``(entries read, entries kept)``), asking for twice as many
    (from ``first``, default ``n``) while entries are dropped, the source may hold more and ``m`` is
    under ``most`` (default :data:`OVERFETCH` times ``n``)."""
    m = max(first or n, 1)
    most = OVERFETCH * n if most is None else most
    while True:
        got, kept = read(m)
        if len(kept) >= n or got < m or m >= most:
            return kept[:n]
        m *= 2


#: A post-filtering search looks at this many candidates at most when the store's size is unknown.
MOST_CANDIDATES = 1 << 20


def post_filtered(
    search: Callable[[int, int], Sequence[T]], total: int | None = None, floor: int = 0
) -> Callable[[int], Sequence[T]]:
    """``n -> the n best`` of a store that filters after its search (``search(n, fetch)``: the entries
    passing the filter among its ``fetch`` nearest, as FAISS's ``fetch_k``), looking at more candidates
    (from ``max(floor, n)``, doubling) while it gives fewer than ``n`` and has not looked at all
    ``total`` entries it holds: a filter matching few entries still gets its best ones."""
    most = MOST_CANDIDATES if total is None else max(total, 1)

    def ranked(n: int) -> Sequence[T]:
        def read(fetch: int) -> tuple[int, list[T]]:
            return min(fetch, most), list(search(n, min(fetch, most)))

        return _asking_more(n, read, first=max(floor, n), most=most)

    return ranked


class _Try:
    """One try of a retrieval: its pinned pages and the hits converted so far."""

    def __init__(self, pages: Pages, search: StoreSearch) -> None:
        self.pages = pages
        self.search = search
        self.report = Report()
        self.docs: dict[str, Document] = {}
        self.read: list[StoreHit] = []  # the prefix of the ranking converted so far
        self.found: list[PassageHit] = []

    def document(self, doc_id: str, expected_hash: str | None = None) -> Document:
        doc = self.docs.get(doc_id)
        if doc is None:
            doc = self.docs[doc_id] = self.pages(doc_id, expected_hash)
        return doc

    def convert(self, entries: Sequence[StoreHit]) -> list[PassageHit]:
        """The valid passage hits of ``entries``, a prefix of the ranking; a prefix converted
        before is not converted again (its pages stay pinned for the try). A ranking that is not
        that prefix (the store was queried again) is converted afresh, and so is its report: a
        page found valid in the ranking it replaced may have only stale hits in this one."""
        if len(self.read) > len(entries) or any(a is not b for a, b in zip(self.read, entries, strict=False)):
            self.read, self.found, self.report = [], [], Report()
        report = self.report
        for entry in entries[len(self.read) :]:
            hit = self._hit(entry, report)
            if hit is not None:
                self.found.append(hit)
        self.read = list(entries)
        report.hits = max(report.hits, len(entries))
        return self.found

    def _hit(self, entry: StoreHit, report: Report) -> PassageHit | None:
        try:
            unit = unit_of(entry.metadata)
            members = members_of(entry.metadata, unit[1]) if unit is not None else ()
        except (PathFormatError, SchemaVersionError) as err:
            log.warning("a store entry is skipped: %s", err)
            report.foreign += 1
            return None
        if unit is None:
            report.foreign += 1
            return None
        doc_id, paths = unit
        if doc_id in report.missing:
            return None
        try:
            seed_indices(self.document(doc_id, entry.page_hash), paths)
        except MissingSourceError:
            report.missing.add(doc_id)
            return None
        except UnknownPathError:  # a unit of the version a concurrent update just replaced
            report.stale.add(doc_id)
            if doc_id not in report.valid:
                report.outranked.add(doc_id)
            return None
        report.valid.add(doc_id)
        return PassageHit(doc_id, members, entry.score)

    def lexical(self, search: LexicalSearch) -> LexicalSearch:
        """``search`` whose hits are checked like the store's: a page missing, a unit of another
        version is left out (a lexical index may lag its pages)."""

        def checked(query: str, n: int) -> list[Hit]:
            out = []
            for hit in search(query, n):
                if hit.doc_id in self.report.missing:
                    continue
                try:
                    seed_indices(self.document(hit.doc_id), hit.paths)
                except (MissingSourceError, UnknownPathError):
                    continue
                out.append(hit)
            return out

        return checked

    def passages(self, n: int) -> list[PassageHit]:
        """The ``n`` best valid passage hits, asking the store for more while hits are skipped."""

        def read(m: int) -> tuple[int, list[PassageHit]]:
            entries = self.search(m)
            return len(entries), self.convert(entries)

        return _asking_more(n, read)


def retrieve(
    query: str,
    searches: Callable[[], StoreSearch],
    pages: Pages,
    options: QueryOptions,
    lexical: LexicalSearch | None = None,
) -> Retrieval:
    """The SPIRE results of ``query``: ``searches()`` gives a fresh store search for each try;
    ``lexical`` (a lexical index's search) is fused with it (:func:`run_query`), its hits held to
    the same pages and versions as the store's.

    Tried again (up to :data:`TRIES` times) while a page was replaced or removed during the try.
    Raises :class:`MissingSourceError` when hits were found but none had its page.
    """
    for attempt in range(TRIES):
        state = _Try(pages, searches())
        found = None if lexical is None else state.lexical(lexical)
        results = run_query(query, state.passages, state.document, options, found)
        if not state.report.again():
            break
        if attempt < TRIES - 1:
            changed = state.report.outranked or state.report.missing
            log.debug("pages changed during the query, searching again: %s", changed)
    _check(state.report, results)
    return Retrieval(results, state.report)


#: Runs a coroutine on the event loop of an async retrieval, from the worker thread, and waits for it.
Bridge = Callable[[Coroutine[Any, Any, Any]], Any]


async def aretrieve(
    query: str,
    searches: Callable[[Bridge], StoreSearch],
    pages: Pages,
    options: QueryOptions,
    lexical: LexicalSearch | None = None,
) -> Retrieval:
    """Async :func:`retrieve`: pages are parsed and evidence aggregated on a worker thread (never
    the loop's default executor, which a store's own async search may need), while the store's
    async search runs on the event loop: ``searches(run)`` builds a try's search, calling
    ``run(coroutine)`` for each store query."""
    loop = asyncio.get_running_loop()

    def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    return await loop.run_in_executor(_pool(), retrieve, query, lambda: searches(run), pages, options, lexical)


def store_search(search: Callable[[int], Sequence[T]], convert: Callable[[T], StoreHit]) -> StoreSearch:
    """A :data:`StoreSearch` over a framework's search (``n -> the n best of its objects``): each
    object converted once, so a round's prefix is the same :class:`StoreHit` objects as before."""
    seen: list[T] = []
    made: list[StoreHit] = []

    def ranked(n: int) -> list[StoreHit]:
        found = search(n)
        if len(seen) > len(found) or any(a is not b for a, b in zip(seen, found, strict=False)):
            seen.clear()
            made.clear()
        for item in found[len(seen) :]:
            seen.append(item)
            made.append(convert(item))
        return made[: len(found)]

    return ranked


def _check(report: Report, results: list[Subdocument]) -> None:
    if report.foreign:
        log.warning("%d store entr(ies) without SPIRE metadata skipped (not indexed by SPIRE?)", report.foreign)
    if report.missing:
        missing = ", ".join(sorted(map(repr, report.missing)))
        log.error("source pages missing, their hits skipped: %s", missing)
        if not results and report.hits:
            raise MissingSourceError(
                f"no retrieved unit has its source page (missing: {missing}, on every try): "
                "store the source pages beside the vectors"
            )


T = TypeVar("T")


def searched_once(search: Callable[[int], Sequence[T]], widest: int) -> Callable[[int], Sequence[T]]:
    """``search`` (``n -> the n best``) asked once, for ``widest`` (what the last round could
    need), and sliced for every round: asked again only for a round wanting more than that, while
    the store may hold more (it gave all it was asked for)."""
    asked = 0
    found: Sequence[T] = ()

    def ranked(n: int) -> Sequence[T]:
        nonlocal asked, found
        if n > asked and len(found) >= asked:
            asked = max(n, widest)
            found = search(asked)
        return found[:n]

    return ranked


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="spire-query")


# -- the evidence filter over retrieved results (Section 3.2) ----------------------------
@dataclass
class Filtered:
    """What the evidence filter made of one query's results."""

    evidence: Evidence
    #: the ``spire_filter`` metadata value (:func:`~spire_core.results.schema.filter_report`)
    report: dict[str, Any]
    #: page id -> its result restricted to the chosen evidence; None when the filter could not
    #: be used (the input results stand, with ``report["ok"]`` False)
    kept: dict[str, Subdocument] | None


def filter_results(
    query: str,
    results: Sequence[Subdocument],
    documents: Documents,
    ask: Callable[[str], str],
    *,
    options: QueryOptions,
    target: int = DEFAULT_TARGET,
    on_error: OnError = "keep",
) -> Filtered:
    """Filter ``results`` with one ``ask`` call (:func:`~spire_core.query.evidence.select_evidence`)
    and render each page's chosen citations as its new result."""
    evidence = select_evidence(
        query, results, documents, ask, target=target, size=options.size, policy=options.policy, on_error=on_error
    )
    return _filtered(results, documents, evidence, options)


async def afilter_results(
    query: str,
    results: Sequence[Subdocument],
    documents: Documents,
    ask: Callable[[str], Awaitable[str]],
    *,
    options: QueryOptions,
    target: int = DEFAULT_TARGET,
    on_error: OnError = "keep",
) -> Filtered:
    """:func:`filter_results` with an async ``ask``."""
    evidence = await aselect_evidence(
        query, results, documents, ask, target=target, size=options.size, policy=options.policy, on_error=on_error
    )
    return _filtered(results, documents, evidence, options)


def _filtered(
    results: Sequence[Subdocument], documents: Documents, evidence: Evidence, options: QueryOptions
) -> Filtered:
    report = filter_report(evidence.selection)
    if not evidence.selection.ok:  # degraded: select_evidence logged why; the input stands
        return Filtered(evidence, report, None)
    scores = {sub.doc_id: sub.score for sub in reversed(results)}  # the first result's score per page
    chosen = subdocuments(
        evidence.citations, documents, policy=options.policy, fmt=options.fmt, size=options.size, scores=scores
    )
    if not chosen:
        log.info("the evidence filter's model selected no evidence (%r)", evidence.selection.raw[:200])
    return Filtered(evidence, report, {sub.doc_id: sub for sub in chosen})


def arrange(
    items: Sequence[T], result_of: Callable[[T], Subdocument | None], filtered: Filtered
) -> list[tuple[T, Subdocument | None]]:
    """The filter's output in the input's order: ``(item, None)`` for an item that stands as it is
    (not a SPIRE result, or the filter could not be used), ``(item, result)`` for a page's chosen
    evidence; a page with none is left out."""
    kept = None if filtered.kept is None else dict(filtered.kept)
    out: list[tuple[T, Subdocument | None]] = []
    for item in items:
        sub = result_of(item)
        if sub is None or kept is None:
            out.append((item, None))
        elif (chosen := kept.pop(sub.doc_id, None)) is not None:
            out.append((item, chosen))
    return out
