"""Document-aware aggregation under a budget (Section 3.1.2).

Hits arrive ranked by similarity. Each is tried in rank order: its seed path set joins
the other seeds of its document, the union is global-contextualized *once* for that
document, rendered and costed; the hit is admitted if the sum over documents still fits
the budget. Shared scaffolding (title, headings, table labels) is therefore paid once per
document (Example 3.1). While the admitted views stay under ``fill * budget`` and the
search may hold more, the prefix of hits is doubled and admission continues, for at most
``max_rounds`` rounds.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from spire_core.context import HTML, Policy
from spire_core.document.render import render_indices
from spire_core.document.tree import LRU, Document, Memo, Path
from spire_core.errors import BudgetError, UnknownPathError
from spire_core.options import DEFAULT_FILL, DEFAULT_FIRST_K, DEFAULT_MAX_ROUNDS, DEFAULT_SIZE, Fmt
from spire_core.reading.sentences import previous_sentences
from spire_core.size import SizeFn
from spire_core.values import Citation, Documents, Follow, Hit, Search, Subdocument, document_lookup

log = logging.getLogger(__name__)


@dataclass
class _Group:
    doc: Document
    rank: int
    score: float
    seeds: set[int] = field(default_factory=set)
    context: set[int] = field(default_factory=set)
    text: str = ""
    cost: int = 0
    citations: list[Citation] = field(default_factory=list)


#: Seeds whose own context and rendering are memoised per document (least recently used forgotten).
OWN_MEMO_SIZE = 4096
_OWN: Memo[LRU[tuple[Policy, str, frozenset[int]], str]] = Memo(lambda doc: LRU(OWN_MEMO_SIZE))
_CLOSED: Memo[LRU[tuple[Policy, frozenset[int]], frozenset[int]]] = Memo(lambda doc: LRU(OWN_MEMO_SIZE))
_LEAST: Memo[LRU[tuple[Policy, SizeFn, frozenset[int]], int]] = Memo(lambda doc: LRU(OWN_MEMO_SIZE))


def own_context(doc: Document, policy: Policy, seed: frozenset[int]) -> frozenset[int]:
    """A seed's own context, memoised per document: the global context (``policy``) of the seed
    with, for each sentence it starts, the sentence before it in the same block
    (:func:`~spire_core.reading.sentences.previous_sentences`: "The default is three." names
    nothing alone). A policy is a closure under per-node contributions and the previous
    sentences are per sentence, so the context of a union of seeds is the union of their own
    contexts."""
    memo = _CLOSED(doc)
    key = (policy, seed)
    got = memo.get(key)
    if got is None:
        got = memo[key] = frozenset(policy.indices(doc, seed | previous_sentences(doc, seed)))
    return got


def own_text(doc: Document, seed: frozenset[int], policy: Policy = HTML, fmt: Fmt = "markdown") -> str:
    """The rendering of a seed's :func:`own_context` (what its citation shows alone), memoised per document."""
    memo = _OWN(doc)
    key = (policy, fmt, seed)
    text = memo.get(key)
    if text is None:
        text = memo[key] = render_indices(doc, own_context(doc, policy, seed), fmt=fmt)
    return text


def own_paths(doc: Document, paths: Iterable[Path], policy: Policy = HTML) -> frozenset[Path]:
    """The path set that shows a citation of ``paths``: :func:`own_context` as paths (what its text renders)."""
    return doc.to_paths(own_context(doc, policy, frozenset(doc.indices(paths))))


#: Seed path sets whose node indices are memoised per document (least recently used forgotten).
INDICES_MEMO_SIZE = 8192
_INDICES: Memo[LRU[frozenset[Path], tuple[set[int], frozenset[int]]]] = Memo(lambda doc: LRU(INDICES_MEMO_SIZE))


def seed_indices(doc: Document, paths: frozenset[Path]) -> tuple[set[int], frozenset[int]]:
    """``doc.indices(paths)`` (never to be mutated: it is shared) and the same indices frozen, memoised per
    document: the same units come back query after query. Raises :class:`UnknownPathError` as ``indices`` does."""
    memo = _INDICES(doc)
    got = memo.get(paths)
    if got is None:
        seed = doc.indices(paths)
        got = memo[paths] = (seed, frozenset(seed))
    return got


def _undelivered(doc: Document, seed: Iterable[int], context: set[int]) -> list[int]:
    """The text nodes that a rendering of ``seed`` shows and one of ``context`` does not, in
    document order (a rendering shows the subtrees of its nodes). Each ancestor's verdict is
    remembered for the call, so that a large seed under a deep chain walks each node once: the
    work is bounded by the seed's subtrees and ancestors (a page is at most ``MAX_DEPTH`` deep)."""
    parent, tag, end = doc.parent, doc.tag, doc.end
    out: list[int] = []
    last = -1  # the last node of the last subtree taken
    if not context:  # (a group's first seeds: every text of their subtrees, sliced from the page's)
        ranks, texts = _TEXTS(doc)
        for i in sorted(seed):
            if i > last:
                last = end[i] - 1
                out += texts[ranks[i] : ranks[last + 1]]
        return out
    shown: dict[int, bool] = {}
    for i in sorted(seed):
        if i <= last:
            continue
        last = end[i] - 1
        chain: list[int] = []
        j = i
        while True:
            if j < 0:
                verdict = False
                break
            if j in context:
                verdict = True
                break
            known = shown.get(j)
            if known is not None:
                verdict = known
                break
            chain.append(j)
            j = parent[j]
        for c in chain:
            shown[c] = verdict
        if verdict:
            continue
        j = i
        while j <= last:  # i's subtree, less what the context's nodes in it show
            if j != i and j in context:
                j = end[j]
                continue
            if tag[j] is None:
                out.append(j)
            j += 1
    return out


def _texts(doc: Document) -> tuple[array[int], array[int]]:
    """The page's text nodes in document order, and for each node (and the end) how many come before it."""
    ranks, texts = array("l", bytes(8 * (len(doc) + 1))), array("l")
    for i, tag in enumerate(doc.tag):
        ranks[i] = len(texts)
        if tag is None:
            texts.append(i)
    ranks[len(doc)] = len(texts)
    return ranks, texts


_TEXTS: Memo[tuple[array[int], array[int]]] = Memo(_texts)


def _least_added(doc: Document, size: SizeFn, texts: Sequence[int], onto: bool) -> int:
    """A lower bound of what a rendering grows by when it comes to show the text nodes ``texts``
    (from :func:`_undelivered`), ``onto`` an existing rendering or from nothing.

    A rendering shows the texts in document order with only markup, spaces and other text
    between them, and putting characters between never joins two words: the texts joined with
    nothing between cost no more than their rendering (exact for
    :func:`~spire_core.size.approx_tokens`, which counts words and marks; an estimate for a
    model's tokenizer). Onto a rendering, each run of texts that follow each other on the page
    (no other text between) is put in one place, where it may join a word already shown: less
    one per run.
    """
    if not texts:
        return 0
    bound = size("".join(doc.text[i] for i in texts))
    if onto:
        ranks = _TEXTS(doc)[0]
        bound -= 1 + sum(ranks[b] != ranks[a] + 1 for a, b in pairwise(texts))
    return bound


class _Admission:
    def __init__(
        self, documents: Documents, budget: int, size: SizeFn, policy: Policy, fmt: Fmt, follow: Follow | None = None
    ) -> None:
        self.get = document_lookup(documents)
        self.follow = follow
        self.budget = budget
        self.size = size
        self.policy = policy
        self.fmt = fmt
        self.groups: dict[str, _Group] = {}
        self.seen: set[tuple[str, frozenset[Path]]] = set()
        self.total = 0
        self.tried = 0
        #: hits left out because they do not fit the budget (with their global context)
        self.over = 0

    def offer_run(self, hits: Sequence[Hit]) -> None:
        """Consecutive hits of one document (a passage's members), tried in order as :meth:`offer`
        would, with fewer renderings: the longest prefix that fits is found by bisection and
        admitted with one rendering of its union, the hit after it is rejected, the rest are
        offered one by one. A rendering only grows with its path set, so the same hits are admitted.
        With ``follow``, a run holding a hit that may name something is offered hit by hit, so that
        what each names comes right after it."""
        # following references offers what each admitted hit names right after it: one by one
        follow = self.follow
        alone = follow is not None and any(follow.wants(hit) for hit in hits)
        done = self._admit_prefix(hits) if len(hits) > 1 and not alone else 0
        for hit in hits[done:]:
            self.offer(hit)

    def _admit_prefix(self, hits: Sequence[Hit]) -> int:
        """Admit the longest prefix of ``hits`` that fits, reject the hit after it: how many were
        tried (0: a repeated or unknown hit among them, left to :meth:`offer`)."""
        doc_id = hits[0].doc_id
        keys = [(doc_id, hit.paths) for hit in hits]
        if len(set(keys)) < len(keys) or any(key in self.seen for key in keys):
            return 0
        group = self.groups.get(doc_id)
        doc = group.doc if group else self.get(doc_id)
        try:
            frozen = [seed_indices(doc, hit.paths) for hit in hits]
        except UnknownPathError:
            return 0  # one by one: the unknown hit is logged and skipped
        seeds = [f for _, f in frozen]
        before = group.cost if group else 0
        base = group.context if group else set()
        tried: dict[int, tuple[set[int], str, int] | None] = {}

        def fits(m: int) -> tuple[set[int], str, int] | None:
            """The union with the first ``m`` hits, its rendering and cost, if it fits the budget."""
            if m not in tried:
                added = set().union(*(own_context(doc, self.policy, f) for f in seeds[:m]))
                least = _least_added(doc, self.size, _undelivered(doc, added, base), bool(base))
                if least > self.budget - self.total:
                    tried[m] = None  # cannot fit: not rendered
                else:
                    merged = self.merged(doc, group, seeds[:m])
                    tried[m] = merged if self.total - before + merged[2] <= self.budget else None
            return tried[m]

        n = len(hits)
        if fits(n) is not None:
            m = n
        else:
            lo, hi = 0, n  # the first lo hits fit together, the first hi do not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if fits(mid) is not None:
                    lo = mid
                else:
                    hi = mid
            m = lo
        if m == 0:
            return 0  # the first hit alone does not fit: offer() tries each, as it must
        admitted = fits(m)
        assert admitted is not None  # m = n fits, or the bisection's lo, which fits
        context, text, cost = admitted
        if group is None:
            group = self.groups[doc_id] = _Group(doc, self.tried, hits[0].score)
        consumed = min(n, m + 1)  # the hit after the prefix does not fit with it
        self.tried += consumed
        self.seen.update(keys[:consumed])
        self.total += cost - before
        for hit, (seed, f) in zip(hits[:m], frozen, strict=False):
            group.seeds |= seed
            own_text = self.own_text(doc, f)
            group.citations.append(Citation(doc_id, hit.paths, own_text, hit.score, referenced_by=hit.referenced_by))
        group.context, group.text, group.cost = context, text, cost
        for hit in hits[:m]:
            self.followed(hit)
        return consumed

    def offer(self, hit: Hit) -> None:
        rank = self.tried
        self.tried += 1
        if (hit.doc_id, hit.paths) in self.seen:
            return
        self.seen.add((hit.doc_id, hit.paths))
        group = self.groups.get(hit.doc_id)
        doc = group.doc if group else self.get(hit.doc_id)
        try:
            seed, frozen = seed_indices(doc, hit.paths)
        except UnknownPathError as err:
            log.warning("hit skipped: %s (index out of date with the document?)", err)
            return
        if group is None:
            group = _Group(doc, rank, hit.score)
        # a policy is a closure under per-node contributions, so the closure of a union is
        # the union of the closures: the group's context is never re-closed
        room = self.budget - self.total
        if self.least(doc, frozen) > room + group.cost or (
            group.context and _least_added(doc, self.size, self.undelivered(doc, frozen, group.context), True) > room
        ):
            self.over += 1
            return  # its text and its global context's (headings, labels) cannot fit: not rendered
        context, text, cost = self.merged(doc, group, [frozen])
        if self.total - group.cost + cost > self.budget:
            self.over += 1
            return
        own_text = self.own_text(doc, frozen)
        self.total += cost - group.cost
        group.seeds |= seed
        group.context, group.text, group.cost = context, text, cost
        group.citations.append(Citation(hit.doc_id, hit.paths, own_text, hit.score, referenced_by=hit.referenced_by))
        self.groups.setdefault(hit.doc_id, group)
        self.followed(hit)

    def followed(self, hit: Hit) -> None:
        """Offer what the admitted ``hit``'s references name, right after it (``follow``)."""
        if self.follow is not None:
            for more in self.follow(hit):
                self.offer(more)

    def merged(self, doc: Document, group: _Group | None, seeds: Sequence[frozenset[int]]) -> tuple[set[int], str, int]:
        """``group``'s context with the own contexts of ``seeds`` added, its rendering and cost:
        the group's when nothing is added, a lone seed's own rendering when it starts the group
        (own renderings are made only for the seeds admitted or starting a group)."""
        base = group.context if group is not None else set()
        context = set(base)
        for seed in seeds:
            context |= own_context(doc, self.policy, seed)
        if group is not None and len(context) == len(base):
            return group.context, group.text, group.cost
        if not base and len(seeds) == 1:
            own_text = self.own_text(doc, seeds[0])
            return context, own_text, self.size(own_text)
        text = render_indices(doc, context, fmt=self.fmt)
        return context, text, self.size(text)

    def undelivered(self, doc: Document, frozen: frozenset[int], context: set[int]) -> list[int]:
        """:func:`_undelivered` of a seed's own context onto ``context``."""
        return _undelivered(doc, own_context(doc, self.policy, frozen), context)

    def least(self, doc: Document, frozen: frozenset[int]) -> int:
        """A lower bound of the cost of any rendering that shows a seed's own context (the
        bound from nothing of :func:`_least_added`), memoised per document: a seed offered
        to a group whose rendering would grow little may still never fit."""
        memo = _LEAST(doc)
        key = (self.policy, self.size, frozen)
        got = memo.get(key)
        if got is None:
            got = memo[key] = _least_added(doc, self.size, self.undelivered(doc, frozen, set()), False)
        return got

    def own_text(self, doc: Document, frozen: frozenset[int]) -> str:
        """:func:`own_text` under this admission's policy and format."""
        return own_text(doc, frozen, self.policy, self.fmt)

    def result(self) -> list[Subdocument]:
        ordered = sorted(self.groups.items(), key=lambda kv: kv[1].rank)
        return [
            Subdocument(
                doc_id=doc_id,
                seeds=g.doc.to_paths(g.seeds),
                paths=g.doc.to_paths(g.context),
                text=g.text,
                cost=g.cost,
                score=g.score,
                citations=list(g.citations),
            )
            for doc_id, g in ordered
        ]


def aggregate(
    hits: Sequence[Hit] | Search,
    *,
    documents: Documents,
    budget: int,
    size: SizeFn = DEFAULT_SIZE,
    policy: Policy = HTML,
    fmt: Fmt = "markdown",
    first_k: int = DEFAULT_FIRST_K,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    fill: float = DEFAULT_FILL,
    follow: Follow | None = None,
) -> list[Subdocument]:
    """Merge ranked ``hits`` per document under ``budget`` (measured by ``size`` on renderings).

    ``hits`` is a ranked sequence or a search callable ``k -> top-k hits``; the prefix
    considered starts at ``first_k`` and doubles while the result is under
    ``fill * budget`` (at most ``max_rounds`` rounds). ``documents`` maps a document id to
    its :class:`Document`. With ``follow``, the hits ``follow(hit)`` returns for each admitted
    hit are offered right after it, under the same budget (query-time resolution of references:
    :class:`~spire_core.query.references.Resolver`). Returns one :class:`Subdocument` per
    document, best rank first.
    """
    if budget <= 0:
        raise BudgetError(f"budget must be positive, not {budget}")
    if first_k <= 0 or max_rounds <= 0:
        raise ValueError("first_k and max_rounds must be positive")
    state = _Admission(documents, budget, size, policy, fmt, follow)
    k = first_k
    done = 0
    ranked: Sequence[Hit] = ()
    for _ in range(max_rounds):
        ranked = hits[:k] if isinstance(hits, Sequence) else hits(k)
        fresh = ranked[done:]
        start = 0
        for end in range(1, len(fresh) + 1):
            if end == len(fresh) or fresh[end].doc_id != fresh[start].doc_id:
                state.offer_run(fresh[start:end])
                start = end
        done = len(ranked)
        if state.total >= fill * budget or len(ranked) < k:
            break
        k *= 2
    if state.over and not state.groups:
        log.warning(
            "no evidence: none of %d hits fits the budget of %d tokens with its global context (the best: page %r)",
            len(ranked),
            budget,
            ranked[0].doc_id,
        )
    return state.result()
