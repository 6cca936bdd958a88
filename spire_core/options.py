"""One vocabulary of options: the names, types and defaults every layer (core, adapters, CLI) uses.

Adapters and the CLI import their defaults from here, so the same ``budget`` buys the same
evidence everywhere. :class:`QueryOptions` is the one object holding every query option: what
:mod:`spire_core.pipeline` runs with, and what every entry point (both adapters' retrievers,
``spire query``, ``spire serve``, the benchmark) accepts by the same names
(tests/test_options.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from spire_core.context import HTML, Policy
from spire_core.document.render import Fmt as Fmt  # the render format, an option of every entry point
from spire_core.errors import BudgetError
from spire_core.size import SizeFn, approx_tokens

#: What one indexed unit is: a sentence, a whole block leaf, or a passage (consecutive
#: sentences of one section, embedded together and cited sentence by sentence).
Unit = Literal["sentence", "block", "passage"]
#: What the evidence filter does with an answer it cannot use.
OnError = Literal["keep", "raise"]
#: What a bulk indexing call does with a page that fails: stop, or report it and index the rest.
OnPageError = Literal["raise", "skip"]

#: Tokens of evidence delivered per query.
DEFAULT_BUDGET = 1000
#: Size a result is grown toward by local context before filtering.
#: Set at dd44580 without a recorded measurement; docs/tuned-constants.md.
DEFAULT_TARGET = 400
#: Hits fetched in the first search round (the prefix then doubles while under budget).
#: Set at b4f26ad without a recorded measurement; docs/tuned-constants.md.
DEFAULT_FIRST_K = 32
#: Share of the budget under which the search prefix keeps growing.
#: Set at b4f26ad without a recorded measurement; docs/tuned-constants.md.
DEFAULT_FILL = 0.9
#: Search rounds at most (the prefix doubles each round).
#: Set at b4f26ad without a recorded measurement; docs/tuned-constants.md.
DEFAULT_MAX_ROUNDS = 4
#: The size function budgets and targets count with, in the core and both adapters: the same
#: ``budget`` buys the same evidence everywhere, whatever is installed (the benchmark judge counts so too).
DEFAULT_SIZE: SizeFn = approx_tokens
#: The unit the adapters and the ``spire`` CLI index by default.
DEFAULT_UNIT: Unit = "passage"
#: Tokens of own and context text a passage is packed up to (``spire_core.indexing.passages``).
#: Set at d5d79ec without a recorded measurement; docs/tuned-constants.md.
DEFAULT_PASSAGE_TOKENS = 160
#: Tokens the packaged embedding model reads (all-MiniLM-L6-v2): no passage renders longer, bar one sentence.
MODEL_WINDOW = 256
#: Share of the budget the table views may take from lower-ranked seeds (:mod:`spire_core.query.table_views`).
#: Set at d5d79ec; 0.6 checked on wtq dev and tuning manuals-de (9f84519); docs/tuned-constants.md.
DEFAULT_TABLE_SHARE = 0.9
#: Tables that get a view at most, best-ranked first.
#: Set at d5d79ec; 2 checked on wtq dev and tuning manuals-de (9f84519); docs/tuned-constants.md.
DEFAULT_TABLE_VIEWS = 3
#: Follow the references of cited sentences one hop into the corpus (:mod:`spire_core.query.references`).
DEFAULT_RESOLVE_REFS = False
#: The citation cut (:class:`Cut`): at most this many citations are named
#: as evidence, each at least ``DEFAULT_MIN_SCORE`` strong and at least ``DEFAULT_RELATIVE_SCORE``
#: times the strongest (tuned on the docs and wtq dev sets; docs/benchmarks.md, "Ranked evidence").
#: Tuned on docs dev and wtq dev at 6de01af (min_score at d374ea0; relative_score again at 55499a3);
#: docs/tuned-constants.md.
DEFAULT_MAX_CITATIONS: int | None = 16
DEFAULT_MIN_SCORE = 0.0
DEFAULT_RELATIVE_SCORE = 0.25


@dataclass(frozen=True)
class Cut:
    """Which of a query's delivered citations are named as evidence: the strongest, at most
    ``max_citations``, each at least ``min_score`` and ``relative`` times the strongest
    (:mod:`spire_core.query.strength`); the others stay delivered, as context."""

    #: at most this many citations are named (None: no limit)
    max_citations: int | None = DEFAULT_MAX_CITATIONS
    #: a named citation's strength is at least this
    min_score: float = DEFAULT_MIN_SCORE
    #: ... and at least this share of the strongest citation's
    relative: float = DEFAULT_RELATIVE_SCORE

    def __post_init__(self) -> None:
        if self.max_citations is not None and self.max_citations <= 0:
            raise ValueError(f"max_citations must be positive or None, not {self.max_citations}")
        if not 0.0 <= self.min_score <= 1.0 or not 0.0 <= self.relative <= 1.0:
            raise ValueError("min_score and relative must be in [0, 1]")

    def named(self, scores: Sequence[float]) -> int:
        """How many of ``scores`` (best first) are named."""
        if not scores:
            return 0
        floor = max(self.min_score, self.relative * scores[0])
        n = next((i for i, s in enumerate(scores) if s < floor), len(scores))
        return n if self.max_citations is None else min(n, self.max_citations)


def widest(first_k: int = DEFAULT_FIRST_K, max_rounds: int = DEFAULT_MAX_ROUNDS) -> int:
    """The most hits a query's rounds ask a store for (``first_k`` doubled each round): what a
    store's own search width (pgvector's ``hnsw.ef_search``) must be at least."""
    return first_k << (max_rounds - 1)


@dataclass(frozen=True)
class QueryOptions:
    """What one query delivers: the budget, how it is counted and rendered, how the search grows,
    which citations are named as evidence.

    Every field is checked here, at construction (``ValueError``; :class:`~spire_core.errors.BudgetError`
    for the budget), so a bad value fails before any page is read or any query embedded.
    """

    #: tokens of evidence delivered per query, counted by ``size`` (positive)
    budget: int = DEFAULT_BUDGET
    #: ``text -> its size in tokens``: what ``budget`` counts (:data:`DEFAULT_SIZE`, the same in every adapter)
    size: SizeFn = DEFAULT_SIZE
    #: the global context rendered above each passage (title, headings, table labels, ...;
    #: :data:`~spire_core.context.NONE` for none)
    policy: Policy = HTML
    #: how a result's text is rendered: ``"markdown"`` or ``"text"``
    fmt: Fmt = "markdown"
    #: hits asked of the store in the first search round (positive; the prefix then doubles)
    first_k: int = DEFAULT_FIRST_K
    #: search rounds at most, the prefix doubling each round (positive; :func:`widest`)
    max_rounds: int = DEFAULT_MAX_ROUNDS
    #: the prefix keeps growing while the results fill less than this share of the budget (positive)
    fill: float = DEFAULT_FILL
    #: deliver views of the best-ranked tables (:func:`~spire_core.query.table_views.table_views`)
    tables: bool = True
    #: keep hits of the first ``max_pages`` pages found only (positive; None: any number of pages)
    max_pages: int | None = None
    #: follow the references of each admitted sentence one hop into the corpus and deliver what they
    #: name as citations of their own, under the same budget (:mod:`spire_core.query.references`)
    resolve_refs: bool = DEFAULT_RESOLVE_REFS
    #: name at most this many citations as evidence, strongest first (positive; None: no limit); the
    #: others stay delivered as context (:class:`Cut`)
    max_citations: int | None = DEFAULT_MAX_CITATIONS
    #: a citation named as evidence is at least this strong (in [0, 1]; strengths are in [0, 1])
    min_score: float = DEFAULT_MIN_SCORE
    #: ... and at least this share of the strongest citation's strength (in [0, 1])
    relative_score: float = DEFAULT_RELATIVE_SCORE

    def __post_init__(self) -> None:
        if self.budget <= 0:
            raise BudgetError(f"budget must be positive, not {self.budget}")
        if self.fmt not in ("markdown", "text"):
            raise ValueError(f"fmt must be 'markdown' or 'text', not {self.fmt!r}")
        if self.first_k <= 0 or self.max_rounds <= 0 or self.fill <= 0:
            raise ValueError("first_k, max_rounds and fill must be positive")
        if self.max_pages is not None and self.max_pages <= 0:
            raise ValueError(f"max_pages must be positive, not {self.max_pages}")
        self.cut  # noqa: B018 (the cut's fields, checked as the Cut checks them)

    @property
    def cut(self) -> Cut:
        """Which of a query's delivered citations are named as evidence."""
        return Cut(self.max_citations, self.min_score, self.relative_score)

    @property
    def widest(self) -> int:
        """The most hits this query's rounds ask for (:func:`widest`)."""
        return widest(self.first_k, self.max_rounds)

    def but(self, **changes: Any) -> QueryOptions:
        """These options with ``changes`` (e.g. a per-call ``budget``; None leaves a field as it is)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def overridden(self, where: str, overrides: Mapping[str, Any]) -> QueryOptions:
        """These options with an entry point's keyword ``overrides`` (None is a value: no limit):
        a name that is no field raises ``TypeError`` naming ``where`` and the closest field."""
        check_options(where, overrides, OPTION_NAMES)
        return replace(self, **overrides)


#: the fields of :class:`QueryOptions`: the keyword options every entry point takes
OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(QueryOptions))


def check_options(where: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise ``TypeError`` naming the options in ``given`` that ``where`` does not know (a typo such as
    ``budgt=``, with the closest known name) and the ones it does: before any work is done."""
    valid = sorted(set(known))
    unknown = [name for name in given if name not in valid]
    if not unknown:
        return
    hints = [
        f"{name!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(name, valid, 1)) else repr(name)
        for name in unknown
    ]
    raise TypeError(f"{where}: unknown option(s) {', '.join(hints)}; valid: {', '.join(valid)}")
