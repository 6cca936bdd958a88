"""Table views: spend an admitted table's share of the budget on what makes it answerable.

A sentence seed in a cell knows its row and column labels, but not its row's position,
its neighbours or the column it competes in, so similarity ranking finds the rows that
share the question's words, not the row the question points at ("the last ...", "who is
listed after X", "which ... the most"). A reader answers such questions by looking at the
table as a table. :func:`table_views` does that after aggregation: for the best-ranked
data tables among the admitted seeds (then those of the result pages whose column labels
the question names) it delivers *views*: the table's columns that matter (its key column,
the columns the question names, the columns of admitted cells; the others while they fit)
for the rows that matter (the admitted rows and those sharing most words with the
question, their neighbours, the first and last rows, the extremes of a named numeric
column, then the rows the question's shape points at, then the rest), as many as fit the
views' share of the budget. Lower-ranked seeds make room for them when the budget is full.

Every delivered cell is a path set of the page (the cell's subtree), the view is rendered
by :func:`spire_core.render` as a Markdown table under its labels, and it becomes one
more citation of its page.

The question's *shape* (:func:`question_shape`) comes from generic words only: ``next`` /
``previous`` (after, before, following, preceding, above, below), ``first`` / ``last``
(earliest, latest, final), ``most`` / ``least`` (superlatives such as highest, lowest,
largest, smallest), else ``none``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Literal

from .aggregate import Subdocument, document_lookup
from .citation import Citation
from .context import HTML, Policy, global_context
from .document import Document, Path
from .errors import BudgetError
from .options import DEFAULT_TABLE_SHARE, DEFAULT_TABLE_VIEWS, Fmt
from .render import render
from .size import SizeFn, approx_tokens
from .tables import CELL_TAGS, Grid, grid

Shape = Literal["first", "last", "next", "previous", "most", "least", "none"]
#: Tokens under which what is left of the views' share is not spent on another table.
MIN_VIEW = 40
#: Every question shape, in the order :func:`question_shape` tries them.
SHAPES: tuple[Shape, ...] = ("next", "previous", "first", "last", "most", "least", "none")

_WORDS: dict[Shape, frozenset[str]] = {
    "next": frozenset({"next", "after", "following", "below", "subsequent", "succeeding", "behind"}),
    "previous": frozenset({"previous", "before", "preceding", "prior", "above", "ahead"}),
    "first": frozenset({"first", "1st", "earliest", "initial", "opening", "top"}),
    "last": frozenset({"last", "final", "latest", "bottom", "recent"}),
    "most": frozenset(
        {
            "most",
            "highest",
            "largest",
            "biggest",
            "greatest",
            "longest",
            "oldest",
            "fastest",
            "heaviest",
            "tallest",
            "maximum",
            "max",
            "best",
            "more",
            "higher",
            "larger",
            "longer",
            "older",
        }
    ),
    "least": frozenset(
        {
            "least",
            "lowest",
            "smallest",
            "fewest",
            "shortest",
            "youngest",
            "slowest",
            "lightest",
            "minimum",
            "min",
            "worst",
            "less",
            "fewer",
            "lower",
            "smaller",
            "shorter",
            "younger",
        }
    ),
}
_TOKEN = re.compile(r"\w+")
#: words that name no column (question words, articles, the shape words themselves)
_STOP = frozenset(
    {
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "how",
        "many",
        "much",
        "the",
        "and",
        "was",
        "were",
        "is",
        "are",
        "did",
        "does",
        "for",
        "from",
        "with",
        "that",
        "this",
        "than",
        "their",
        "there",
        "listed",
        "list",
        "name",
        "number",
        "chart",
        "table",
        "only",
        "other",
        "same",
    }
).union(*_WORDS.values())


def question_shape(question: str) -> Shape:
    """The shape of ``question``: which rows of a table it points at (see the module docstring)."""
    words = [w.casefold() for w in _TOKEN.findall(question)]
    for i, w in enumerate(words):  # "most recent" is the last one, not the largest
        if w == "most" and i + 1 < len(words) and words[i + 1] == "recent":
            words[i] = "last"
    present = set(words)
    for shape in SHAPES[:-1]:
        if present & _WORDS[shape]:
            return shape
    return "none"


def _stem(word: str) -> str:
    return word[:5] if len(word) >= 4 else word


def _terms(text: str) -> set[str]:
    return {_stem(w) for w in (w.casefold() for w in _TOKEN.findall(text)) if w not in _STOP and len(w) > 1}


@dataclass(frozen=True)
class _Table:
    """A table holding admitted seeds: its page, its element, its best seed score."""

    doc_id: str
    table: int
    score: float
    #: grid cells of the table holding admitted seeds
    cells: frozenset[int]


def table_views(
    question: str,
    results: Sequence[Subdocument],
    documents: Callable[[str], Document] | Mapping[str, Document],
    *,
    budget: int,
    size: SizeFn = approx_tokens,
    policy: Policy = HTML,
    fmt: Fmt = "markdown",
    share: float = DEFAULT_TABLE_SHARE,
    tables: int = DEFAULT_TABLE_VIEWS,
) -> list[Subdocument]:
    """``results`` (from :func:`spire_core.aggregate`) with views of their best-ranked tables.

    Data tables holding admitted seeds are taken by best seed score, then the result pages'
    data tables whose column labels the question names; each of the first ``tables`` gets a
    view of what is left of ``share * budget`` (the first takes what it needs), merged into
    its page's result and cited as one more :class:`Citation`. Then the lowest-scored seeds
    are dropped while the total exceeds ``budget``. Results without such tables come back
    unchanged.
    """
    if budget <= 0:
        raise BudgetError(f"budget must be positive, not {budget}")
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], not {share}")
    get = document_lookup(documents)
    docs = {r.doc_id: get(r.doc_id) for r in results}
    shape = question_shape(question)
    terms = _terms(question)
    views: dict[str, list[Citation]] = {}
    left = int(share * budget)
    for t in chain(_admitted_tables(results, docs), _named_tables(results, docs, terms)):
        if sum(len(v) for v in views.values()) >= tables:
            break
        doc = docs[t.doc_id]
        cells = _view_cells(doc, grid(doc, t.table), t.cells, shape, terms, left, size, policy, fmt)
        paths = doc.to_paths(i for c in cells for i in range(c, doc.end[c]))
        text = render(doc, global_context(doc, paths, policy), fmt=fmt)
        views.setdefault(t.doc_id, []).append(Citation(t.doc_id, paths, text, t.score))
        left -= size(text)
        if left < MIN_VIEW:
            break
    if not views:
        return list(results)
    return _fit(list(results), views, docs, budget, size, policy, fmt)


def _admitted_tables(results: Sequence[Subdocument], docs: Mapping[str, Document]) -> list[_Table]:
    """Data tables (:func:`_is_data`) holding admitted seeds, best seed score first."""
    found: dict[tuple[str, int], tuple[float, set[int]]] = {}
    for r in results:
        doc = docs[r.doc_id]
        for c in r.citations:
            for i in doc.indices(c.paths):
                cell = _cell_of(doc, i)
                if cell is None:
                    continue
                table, node = cell
                score = c.score if c.score is not None else r.score
                best, cells = found.setdefault((r.doc_id, table), (score, set()))
                cells.add(node)
                found[(r.doc_id, table)] = (max(best, score), cells)
                break
    tables = [
        _Table(doc_id, table, score, frozenset(cells))
        for (doc_id, table), (score, cells) in found.items()
        if _is_data(docs[doc_id], grid(docs[doc_id], table))
    ]
    return sorted(tables, key=lambda t: -t.score)


def _named_tables(results: Sequence[Subdocument], docs: Mapping[str, Document], terms: set[str]) -> Iterator[_Table]:
    """Data tables without admitted seeds on the results' pages whose column labels the question names."""
    for r in results:
        doc = docs[r.doc_id]
        held = {i for c in r.citations for i in doc.indices(c.paths)}
        for t in (i for i, tag in enumerate(doc.tag) if tag == "table"):
            g = grid(doc, t)
            if any(t <= i < doc.end[t] for i in held) or not _is_data(doc, g):
                continue
            if _named_columns(doc, g, terms):
                yield _Table(r.doc_id, t, r.score, frozenset())


def _is_data(doc: Document, g: Grid) -> bool:
    """Whether the table holds data a view can order: rows enough, no cell holding a table, mostly filled.

    Pull quotes and score boxes are tables of a row or two; layout tables hold tables;
    genealogy charts and tournament brackets draw their lines with empty cells.
    """
    if len(g.rows) - len(g.header_rows) < MIN_ROWS:
        return False
    if any(doc.tag[j] == "table" for c in g.cells for j in range(c + 1, doc.end[c])):
        return False
    filled = {c: bool(doc.subtree_text(c).strip()) for c in g.cells}
    return sum(filled[c] for c in g.at.values()) >= MIN_FILLED * len(g.at)


#: Body rows a table needs for a view (fewer leave nothing to order).
MIN_ROWS = 3
#: Share of a table's grid places that must hold text for it to get a view.
MIN_FILLED = 0.5


def _cell_of(doc: Document, node: int) -> tuple[int, int] | None:
    """``(table, cell)`` of the innermost grid cell holding ``node``, if any."""
    cell = None
    for anc in (node, *doc.ancestors(node)):
        tag = doc.tag[anc]
        if cell is None and tag in CELL_TAGS:
            cell = anc
        elif cell is not None and tag == "table":
            return (anc, cell) if cell in grid(doc, anc).cells else None
    return None


def _key_column(doc: Document, g: Grid) -> int:
    """The row-label column: where body ``<th>`` cells stand, else the first column."""
    if g.body_th:
        counts: dict[int, int] = {}
        for c, (r, col, _, _) in g.cells.items():
            if doc.tag[c] == "th" and r not in g.header_rows:
                counts[col] = counts.get(col, 0) + 1
        return max(counts, key=lambda col: (counts[col], -col))
    return 0


def _named_columns(doc: Document, g: Grid, terms: set[str]) -> list[int]:
    """Columns whose header labels share a word with the question."""
    named = []
    for col in range(g.width()):
        label = " ".join(doc.subtree_text(g.at[(r, col)]) for r in sorted(g.header_rows) if (r, col) in g.at)
        if terms & _terms(label):
            named.append(col)
    return named


_NUMBER = re.compile(r"-?\d[\d,]*(?::\d+)*(?:\.\d+)?")


def _number(text: str) -> float | None:
    """The first number in ``text``: thousands separators dropped, ``h:mm:ss`` read as one quantity."""
    m = _NUMBER.search(text)
    if m is None:
        return None
    value = 0.0
    for part in m.group().replace(",", "").split(":"):
        value = value * 60 + float(part)
    return value


def _extreme_rows(doc: Document, g: Grid, body: list[int], cols: Iterable[int]) -> set[int]:
    """The rows holding the largest and the smallest number of each column that is mostly numbers."""
    out: set[int] = set()
    for col in cols:
        values = {r: _number(doc.subtree_text(g.at[(r, col)])) for r in body if (r, col) in g.at}
        numbers = {r: v for r, v in values.items() if v is not None}
        if numbers and len(numbers) * 2 >= len(body):
            out.add(max(numbers, key=lambda r: numbers[r]))
            out.add(min(numbers, key=lambda r: numbers[r]))
    return out


def _matching_rows(doc: Document, g: Grid, body: list[int], terms: set[str]) -> set[int]:
    """The rows sharing most words with the question (the row it names: "after X", "the game in Houston")."""
    shared = {r: len(terms & _terms(doc.subtree_text(g.rows[r]))) for r in body}
    most = max(shared.values(), default=0)
    return {r for r, n in shared.items() if n == most} if most else set()


def _row_order(body: list[int], admitted: set[int], shape: Shape, extremes: set[int]) -> list[int]:
    """Body rows, most useful first for a question of ``shape``."""
    if not body:
        return []
    pos = {r: k for k, r in enumerate(body)}
    hits = sorted(pos[r] for r in admitted if r in pos)
    n = len(body)

    def distance(k: int) -> int:
        return min((abs(k - h) for h in hits), default=n)

    def key(k: int) -> tuple[int, int]:
        if k in hits:
            return (0, 0)
        if distance(k) == 1 or k in (0, n - 1) or body[k] in extremes:
            return (1, k)
        if shape == "first":
            return (2, k)
        if shape == "last":
            return (2, n - 1 - k)
        if shape in ("next", "previous"):
            return (2, distance(k) * n + k)
        return (2, k)

    return [body[k] for k in sorted(range(n), key=key)]


def _view_cells(
    doc: Document,
    g: Grid,
    admitted: frozenset[int],
    shape: Shape,
    terms: set[str],
    budget: int,
    size: SizeFn,
    policy: Policy,
    fmt: Fmt,
) -> set[int]:
    """The cells of the view: priority columns for priority rows, within ``budget``; more columns while they fit."""
    body = [r for r in range(len(g.rows)) if r not in g.header_rows]
    key, named = _key_column(doc, g), _named_columns(doc, g, terms)
    extremes = _extreme_rows(doc, g, body, [c for c in named if c != key]) if shape in ("most", "least") else set()
    rows = _row_order(body, {g.cells[c][0] for c in admitted} | _matching_rows(doc, g, body, terms), shape, extremes)
    first = list(dict.fromkeys([key, *named, *sorted(g.cells[c][1] for c in admitted)]))
    rest = [c for c in range(g.width()) if c not in first]
    words: dict[int, int] = {}

    def cells_of(rs: Iterable[int], cols: Iterable[int]) -> set[int]:
        return {g.at[(r, col)] for r in rs for col in cols if (r, col) in g.at}

    def estimate(rs: Sequence[int], cols: Sequence[int]) -> int:
        """Cell words, a pipe per cell and row, the header line and its rule (the Markdown table's cost)."""
        for c in cells_of([*g.header_rows, *rs], cols):
            if c not in words:
                words[c] = size(doc.subtree_text(c))
        text = sum(words[c] for c in cells_of([*g.header_rows, *rs], cols))
        return text + (len(rs) + 1) * (len(cols) + 1) + 4 * len(cols) + 1

    cols = first
    while len(cols) > 1 and estimate(rows[:1], cols) > budget:
        cols = cols[:-1]
    taken: list[int] = []
    for r in rows:
        if estimate([*taken, r], cols) > budget:
            break
        taken.append(r)
    if len(taken) == len(rows):
        for col in rest:
            if estimate(taken, [*cols, col]) <= budget:
                cols = [*cols, col]
    cells = cells_of(taken, cols)
    while len(taken) > 1:
        paths = doc.to_paths(i for c in cells for i in range(c, doc.end[c]))
        if size(render(doc, global_context(doc, paths, policy), fmt=fmt)) <= budget:
            break
        taken = taken[: max(1, int(len(taken) * 0.9))]
        cells = cells_of(taken, cols)
    return cells


def _fit(
    results: list[Subdocument],
    views: Mapping[str, list[Citation]],
    docs: Mapping[str, Document],
    budget: int,
    size: SizeFn,
    policy: Policy,
    fmt: Fmt,
) -> list[Subdocument]:
    """Merge the views into their pages' results, then drop lowest-scored seed citations while over ``budget``."""
    base = {r.doc_id: r for r in results}
    kept = {r.doc_id: list(r.citations) for r in results}
    out = {d: _rebuild(r, kept[d], views.get(d, []), docs[d], size, policy, fmt) for d, r in base.items()}
    viewed = {d: frozenset().union(*(v.paths for v in vs)) for d, vs in views.items()}
    order = sorted(
        ((c.score if c.score is not None else r.score, r.doc_id, c) for r in results for c in r.citations),
        key=lambda t: t[0],
    )
    for _, doc_id, c in order:
        if sum(r.cost for r in out.values() if r is not None) <= budget:
            break
        if c.paths <= viewed.get(doc_id, frozenset()):
            continue  # the view delivers it anyway
        kept[doc_id].remove(c)
        out[doc_id] = _rebuild(base[doc_id], kept[doc_id], views.get(doc_id, []), docs[doc_id], size, policy, fmt)
    return [r for r in (out[d] for d in kept) if r is not None]


def _rebuild(
    base: Subdocument,
    citations: list[Citation],
    views: list[Citation],
    doc: Document,
    size: SizeFn,
    policy: Policy,
    fmt: Fmt,
) -> Subdocument | None:
    """``base`` re-rendered for the union of ``citations`` and ``views`` (None when both are empty)."""
    if not citations and not views:
        return None
    seeds: frozenset[Path] = frozenset().union(*(c.paths for c in [*citations, *views]))
    paths = global_context(doc, seeds, policy)
    text = render(doc, paths, fmt=fmt)
    return replace(base, seeds=seeds, paths=paths, text=text, cost=size(text), citations=[*citations, *views])
