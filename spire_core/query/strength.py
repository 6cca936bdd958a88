"""Ranked evidence: each citation's own score for the question, best first, and the cut that names it.

Aggregation admits sentence hits in fused rank order and pays for them per page; what it
admits is the delivered text. Which of it is the *evidence* is decided here, after the
table views, for what a reader sees first:

- **Citations are what the search scored.** The sentences admitted from one passage (the
  unit that was embedded and found) are one citation: their path sets' union, rendered with
  its own global context (a passage's sentences read together: a parameter's description,
  then "The default is five minutes."). A table view, a followed reference and a sentence
  found by the lexical ranking alone stay citations of their own.
- **Each citation's strength** is in [0, 1]: ``(dense + w * lexical) / (1 + w)``, ``w`` the
  :data:`LEXICAL_WEIGHT` (scaled as the fusion scales the lexical ranking for a question in
  Han, kana or Hangul: :attr:`Signals.lexical_weight`), where ``dense`` is its passage's
  similarity to the question (cosine, below 0 read as 0) and ``lexical`` its best sentence's
  BM25 score over the question's best
  (:class:`Signals`; 1 for the sentence naming the question's rare words best; without a
  lexical ranking, ``dense`` alone: the same scale). A table view (ranked among the views
  by :func:`~spire_core.query.table_views.table_views`: what the question names in its
  table) holds every admitted cell of its table under its row and column labels: it is as
  strong as the strongest citation it holds (a view of a table no seed reached: as the
  weakest of its page), and never weaker than a view ranked below it; the best-ranked view
  of the query is as strong as its page's strongest citation when the page's evidence is
  tabular: at least :data:`TABULAR_SHARE` of the sentences admitted from its page lie in
  its viewed tables (a table page: the table the question names is where a reader looks
  first; a manual page with a table beside the prose that answers is not one). Among equal
  strengths a view comes first, unless it holds none of its page's admitted sentences (the
  table ranking named it, no seed reached it): then after the citations as strong.
- **A citation another shows whole is folded into it**: a heading or a definition's term cited
  alone, a table row cited beside its table's view, a sentence cited beside a longer citation
  holding it, the same text twice. The other renders its sentences, or its text (global
  context included) holds the other's, so a reader would read it twice; the one showing it
  holds both path sets, keeps its text and is as strong as both.
- **Results and citations come best first**: a result's score is its best citation's, and
  a result lists its citations by strength (its text keeps the page's reading order).
- **The cut** (:class:`~spire_core.options.Cut`) names as evidence the strongest citations: at most
  ``max_citations``, each at least ``min_score`` and at least ``relative`` times the best
  one's strength; the others stay delivered, as context (``Citation.evidence`` False). The
  delivered text and its cost are what aggregation paid for: the cut changes what is cited,
  not what a model reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from spire_core.context import HTML, Policy
from spire_core.document.tree import HEADING_LEVELS, Document, Path, block_of
from spire_core.options import Cut, Fmt
from spire_core.query.aggregate import own_text, seed_indices
from spire_core.query.passages import PassageHit
from spire_core.values import Citation, Hit, Subdocument

#: How much a sentence's lexical match counts against its passage's similarity: tuned on the
#: first citation holding the answer over the dev and tuning sets (0.35, 0.5, 0.6, 0.75, 1.0 at
#: 2b717dc; docs/benchmarks.md, docs/tuned-constants.md).
LEXICAL_WEIGHT = 0.6

#: The share of a page's admitted sentences that must lie in its viewed tables for the
#: best-ranked view to be as strong as the page's strongest citation (module docstring).
#: Tuned on the docs and wtq dev sets and the manuals tuning sets (first citation; 0.2, 0.25, 0.3);
#: docs/tuned-constants.md.
TABULAR_SHARE = 0.2

Key = tuple[str, frozenset[Path]]


@dataclass
class Signals:
    """What the query's rankings said of each sentence (a page and a sentence path set)."""

    #: sentence -> (its passage's members, the passage's similarity to the question), from the
    #: first (best) passage listing it
    passages: dict[Key, tuple[tuple[frozenset[Path], ...], float]] = field(default_factory=dict)
    #: sentence -> its lexical (BM25) score, for the sentences the lexical ranking returned
    lexical: dict[Key, float] = field(default_factory=dict)
    #: whether a lexical ranking took part (without one a strength is its passage's similarity alone)
    fused: bool = True
    #: the best lexical score recorded
    top: float = 0.0
    #: how much the lexical match counts against the passage's similarity: :data:`LEXICAL_WEIGHT`
    #: times the question's weight in the rank fusion (more for a question in Han, kana or Hangul,
    #: which the packaged English-trained model reads poorly:
    #: :func:`~spire_core.query.lexical.fusion_weight`)
    lexical_weight: float = LEXICAL_WEIGHT

    def record_passages(self, hits: Sequence[PassageHit]) -> None:
        """Note each passage hit's members and similarity."""
        for hit in hits:
            for m in hit.members:
                self.passages.setdefault((hit.doc_id, m), (tuple(hit.members), float(hit.score)))

    def record_lexical(self, hits: Sequence[Hit]) -> None:
        """Note the lexical ranking's scores."""
        for hit in hits:
            self.lexical.setdefault((hit.doc_id, hit.paths), float(hit.score))
            self.top = max(self.top, float(hit.score))

    def strength(self, doc_id: str, members: Sequence[frozenset[Path]]) -> float:
        """The strength of a citation of ``members`` (sentence path sets) of page ``doc_id``, in [0, 1]."""
        top = self.top
        dense = lexical = 0.0
        for m in members:
            found = self.passages.get((doc_id, m))
            if found is not None:
                dense = max(dense, found[1])
            if top > 0:
                lexical = max(lexical, self.lexical.get((doc_id, m), 0.0) / top)
        if not self.fused:
            return min(dense, 1.0)
        weight = self.lexical_weight
        return (min(dense, 1.0) + weight * min(lexical, 1.0)) / (1.0 + weight)


def rank_evidence(
    results: Sequence[Subdocument],
    signals: Signals,
    documents: Callable[[str], Document],
    *,
    cut: Cut | None = None,
    policy: Policy = HTML,
    fmt: Fmt = "markdown",
) -> list[Subdocument]:
    """``results`` with their citations merged per passage, scored, ranked best first and cut
    (module docstring); results ordered by their best citation."""
    cut = cut or Cut()
    merged = [_merged(sub, signals, documents(sub.doc_id), policy, fmt) for sub in results]
    _rekey(results, merged)
    scored = [
        [(c if m is None else replace(c, score=signals.strength(sub.doc_id, m)), m is None) for c, m in page]
        for sub, page in zip(results, merged, strict=True)
    ]
    _score_views(scored, [_tabular(sub, page) for sub, page in zip(results, merged, strict=True)])
    keys: dict[str, str] = {}
    scored = [_fold(page, keys) for page in scored]
    ranked: list[Subdocument] = []
    for sub, page in zip(results, scored, strict=True):
        citations = [_pointed(page[n][0], keys) for n in _strongest_first(page)]
        seeds = frozenset().union(*(c.paths for c in citations)) if citations else sub.seeds
        ranked.append(
            replace(sub, seeds=seeds, citations=citations, score=citations[0].score or 0.0 if citations else 0.0)
        )
    ranked.sort(key=lambda s: -s.score)  # stable: the aggregation's order among equals
    strengths = sorted(
        ((c.score or 0.0, -r, -i) for r, sub in enumerate(ranked) for i, c in enumerate(sub.citations)), reverse=True
    )
    named = {(-r, -i) for _, r, i in strengths[: cut.named([s for s, _, _ in strengths])]}
    return [
        replace(sub, citations=[replace(c, evidence=(r, i) in named) for i, c in enumerate(sub.citations)])
        for r, sub in enumerate(ranked)
    ]


def _fold(page: list[tuple[Citation, bool]], keys: dict[str, str]) -> list[tuple[Citation, bool]]:
    """``page``'s scored citations with each one that another shows whole (:func:`_shows`: a
    heading or a definition's term cited alone, a row of a viewed table, the same text twice)
    folded into the strongest one showing it: that one holds both path sets, keeps its text and
    is as strong as both (module docstring). ``keys`` gains each changed citation's old key ->
    its new one."""
    # a followed reference's citation stays as it is: a reference names its key (``Reference.cited``)
    order = [n for n in _strongest_first(page) if page[n][0].referenced_by is None]
    cited = [(c.text.strip(), c.paths) for c, _ in page]
    into: dict[int, int] = {}  # folded -> the one it went into (never itself folded by then: no circle)
    for at, n in enumerate(order):
        if cited[n][0]:
            by = next((m for k, m in enumerate(order) if m not in into and _shows(cited[m], cited[n], k < at)), -1)
            if by >= 0:
                into[n] = by
    if not into:
        return page
    ends = {}  # folded -> the end of its chain, the one holding it at last
    for n in into:
        end = into[n]
        while end in into:
            end = into[end]
        ends[n] = end
    out = list(page)
    for n in order:  # strongest first
        if n in ends:
            (c, view), (held, _) = out[ends[n]], out[n]
            refs = tuple(dict.fromkeys((*c.references, *held.references)))
            score = max(c.score or 0.0, held.score or 0.0)
            out[ends[n]] = (replace(c, paths=c.paths | held.paths, score=score, references=refs), view)
    for n, (c, _) in enumerate(page):
        if out[ends.get(n, n)][0].paths != c.paths:
            keys[c.key()] = out[ends.get(n, n)][0].key()
    return [out[n] for n in range(len(page)) if n not in into]


def _strongest_first(page: Sequence[tuple[Citation, bool]]) -> list[int]:
    """The places of ``page``'s scored citations, strongest first; among equals one flagged
    first (a view holding cells, :func:`_score_views`), then the aggregation's order."""
    return sorted(range(len(page)), key=lambda n: (-(page[n][0].score or 0.0), not page[n][1], n))


def _shows(cited: tuple[str, frozenset[Path]], other: tuple[str, frozenset[Path]], before: bool) -> bool:
    """Whether a citation (its text, global context included, and its path set) shows ``other``
    whole: it renders every sentence of the other (a proper superset of its paths), or its text
    holds the other's and is longer (or the same, and ``before``: listed first)."""
    (text, paths), (other_text, other_paths) = cited, other
    if other_paths < paths:
        return True
    return (len(text) > len(other_text) or (before and text == other_text)) and other_text in text


def _pointed(c: Citation, keys: dict[str, str]) -> Citation:
    """``c`` with its ``referenced_by`` following ``keys`` (old key -> the key of the citation now
    holding that one: merged per passage, :func:`_rekey`, or folded, :func:`_fold`)."""
    return replace(c, referenced_by=keys[c.referenced_by]) if c.referenced_by in keys else c


def _rekey(results: Sequence[Subdocument], merged: list[list[tuple[Citation, list[frozenset[Path]] | None]]]) -> None:
    """Point a followed reference's citation (``referenced_by``) at the merged citation now holding
    the sentence that makes the reference, in place."""
    keys = {}
    for sub, page in zip(results, merged, strict=True):
        for c, members in page:
            for m in members or ():
                if m != c.paths:
                    keys[Citation(sub.doc_id, m, "").key()] = c.key()
    if not keys:
        return
    for page in merged:
        for n, (c, members) in enumerate(page):
            page[n] = (_pointed(c, keys), members)


def _tabular(sub: Subdocument, merged: Sequence[tuple[Citation, list[frozenset[Path]] | None]]) -> bool:
    """Whether at least :data:`TABULAR_SHARE` of the sentences admitted from ``sub``'s page lie
    in its viewed tables (``merged``: its citations as :func:`_merged` gives them)."""
    views = [c.paths for c, members in merged if members is None]
    sentences = [c.paths for c in sub.citations if c.paths not in views]
    if not views or not sentences:
        return False
    inside = sum(1 for s in sentences if any(s <= v for v in views))
    return inside >= TABULAR_SHARE * len(sentences)


def _score_views(pages: list[list[tuple[Citation, bool]]], tabular: Sequence[bool]) -> None:
    """Give each table view (``(citation, True)``, scored by its table's ranking) its strength, in
    place (module docstring; ``tabular``: whether each page's evidence is tabular, :func:`_tabular`).
    The flag beside each citation then says whether it leads among equal strengths: a view
    holding none of its page's admitted sentences does not."""
    views = []  # (the table's ranking value, the page, the view's place, its strength alone, as strong as can be,
    #             whether it holds an admitted sentence)
    for page, table_page in zip(pages, tabular, strict=True):
        runs = [c.score or 0.0 for c, view in page if not view]
        for n, (v, view) in enumerate(page):
            if view:
                held = [c.score or 0.0 for c, other in page if not other and c.paths <= v.paths]
                alone = max(held) if held else min(runs, default=0.0)
                best = max(runs, default=0.0) if table_page else alone
                views.append((v.score or 0.0, page, n, alone, best, bool(held)))
    views.sort(key=lambda t: -t[0])
    floor = 0.0
    for rank in range(len(views) - 1, -1, -1):
        _, page, n, alone, best, holds = views[rank]
        floor = max(floor, best if rank == 0 else alone)
        page[n] = (replace(page[n][0], score=floor), holds)


def ranked_evidence(results: Sequence[Subdocument], *, context: bool = False) -> list[Citation]:
    """The citations of ``results`` across pages, strongest first: the named evidence (with
    ``context``, the citations delivered as context after it)."""
    return ranked_evidence_of([c for sub in results for c in sub.citations], context=context)


def ranked_evidence_of(citations: Sequence[Citation], *, context: bool = False) -> list[Citation]:
    """:func:`ranked_evidence` of citations listed page by page (stable among equal strengths)."""
    cited = [c for c in citations if context or c.evidence]
    return sorted(cited, key=lambda c: (not c.evidence, -(c.score or 0.0)))


def _merged(
    sub: Subdocument, signals: Signals, doc: Document, policy: Policy, fmt: Fmt
) -> list[tuple[Citation, list[frozenset[Path]] | None]]:
    """``sub``'s citations with those of one passage's sentences merged into one (in the place
    of the first), each merged one rendered with its own global context; with each, the
    sentence path sets it is made of (None for a table view: a whole the rankings did not score)."""
    groups: dict[object, list[Citation]] = {}
    for n, c in enumerate(sub.citations):
        found = signals.passages.get((sub.doc_id, c.paths)) if c.referenced_by is None else None
        groups.setdefault(n if found is None else found[0], []).append(c)
    out: list[tuple[Citation, list[frozenset[Path]] | None]] = []
    for group in groups.values():
        if len(group) > 1:  # a heading among a passage's sentences is their global context, not evidence
            group = [c for c in group if not _heading(doc, c.paths)] or group
        members = [c.paths for c in group]
        if len(group) == 1:
            c = group[0]
            sentence = (sub.doc_id, c.paths) in signals.passages or (sub.doc_id, c.paths) in signals.lexical
            out.append((c, members if sentence or c.referenced_by is not None else None))
            continue
        paths = frozenset().union(*members)
        refs = tuple(dict.fromkeys(r for c in group for r in c.references))
        text = own_text(doc, seed_indices(doc, paths)[1], policy, fmt)
        out.append((Citation(sub.doc_id, paths, text, references=refs), members))
    return out


def _heading(doc: Document, paths: frozenset[Path]) -> bool:
    """Whether a sentence stands in a heading (``h1`` to ``h6``)."""
    block = block_of(doc, min(seed_indices(doc, paths)[1]))
    return block >= 0 and doc.tag[block] in HEADING_LEVELS
