"""Table views: spend an admitted table's share of the budget on what makes it answerable.

A sentence seed in a cell knows its row and column labels, but not its row's position,
its neighbours or the column it competes in, so similarity ranking finds the rows that
share the question's words, not the row the question points at ("the last ...", "who is
listed after X", "which ... the most"). A reader answers such questions by looking at the
table as a table. :func:`table_views` does that after aggregation: for the best-ranked
data tables of the result pages it delivers *views*: the table's columns that matter (its
key column, the columns the question names, the columns of admitted cells; the others
while they fit) for the rows that matter (the admitted rows and the row holding the
question's rarest words, their neighbours, the first and last rows, the extremes of a
numeric column the question names, then the rest, nearest those rows and the ends first),
as many as fit the views' share of the budget. Lower-ranked seeds make room for them when
the budget is full, the lowest-scored first (a passage's members, which share its score,
from its last admitted). A view of a table the question does not name (by a column label)
never displaces a better-scored citation of another page: on a large corpus, a table the
ranking merely touched would otherwise push out the page that answers. A table the ranking
did not reach at all (no admitted seeds) is *pointed at* only when the question names one of
its column labels by a word no result holds ("who weighed the most?" while nothing admitted
mentions weight: the ranking missed what the question names); otherwise its view displaces
no citation of its own page either. A manual whose every table has a "Package" column would
else spend the budget on views of tables the ranking never reached whenever a question says
"package", and drop the sentence that answers it (:func:`_pointed_at`).

Which tables: the seed ranking finds a page, and often a table on it, but among a page's
tables it favours those sharing the question's topic words (the page title, a column
label everywhere) over the one holding the row the question names ("the film after
<title>", "the team coached by <name>"). So the tables are ranked by
what the question names in them, weighted by rarity among the candidate tables
(:class:`_Lexicon`): its column labels, caption and headings, plus its best row (whole
stems, those naming the table or its columns left out), plus its admitted seeds' best
score (a similarity in [0, 1], :func:`~spire_core.query.fusion.rrf` when fused). A table
without admitted seeds competes only when the question names one of its column labels or,
if the ranking admitted table cells at all, two words of one of its rows; so a prose
question does not lose its sentences to tables that merely share a common word.

Every delivered cell is a path set of the page (the cell's subtree), the view is rendered
by :func:`spire_core.document.render` as a Markdown table under its labels, and it becomes one
more citation of its page.

No word of the question decides which rows a view shows: there is no list of "first",
"after" or "highest" in any language. Every view holds what a positional or superlative
question needs, as far as it fits (:func:`_row_order`). The question's words only name
things: a table's columns, caption and headings, a row. They are matched as the words of
the table's page are, by the page's language (:attr:`Document.language
<spire_core.document.tree.Document.language>`, English when undeclared): its stop words left
out and the rest stemmed by its Snowball stemmer, from where the lexical index takes its own
(:func:`spire_core.reading.language.stop_words`, NLTK's full list;
:func:`~spire_core.reading.language.stem_words`). Rows are matched by whole stems, labels and
a table's names also by a stem beginning the other (:func:`_naming`).
Numbers are read in either decimal convention, a column's own deciding what its ambiguous
cells mean (:func:`_column_numbers`: ``1,5`` is one and a half).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from spire_core.context import HTML, Policy
from spire_core.context.headers import headings
from spire_core.context.policy import Table, inherited
from spire_core.document.render import render_indices
from spire_core.document.tables import CELL_TAGS, Grid, grid, grid_table
from spire_core.document.tree import Document, Memo, Path
from spire_core.errors import BudgetError
from spire_core.options import DEFAULT_TABLE_SHARE, DEFAULT_TABLE_VIEWS, Fmt
from spire_core.query.aggregate import own_context, seed_indices
from spire_core.reading.language import script_words, stem_words, stop_words
from spire_core.size import SizeFn, approx_tokens
from spire_core.values import Citation, Subdocument, document_lookup

#: Tokens under which what is left of the views' share is not spent on another table.
MIN_VIEW = 40
_TOKEN = re.compile(r"\w+")


def _terms(text: str, language: str | None) -> frozenset[str]:
    """The words of ``text`` that may name something (a column, a table, a row), as matched:
    casefolded, ``language``'s stop words (:func:`~spire_core.reading.language.stop_words`,
    the full list) and one-letter words but digits left out ("number 9" names a row),
    Snowball-stemmed ("scores" names "Score", "Inseln" names "Insel")."""
    stop = stop_words(language, full=True)
    words = [w for w in script_words(_TOKEN.findall(text.casefold())) if (len(w) > 1 or w.isdigit()) and w not in stop]
    return frozenset(stem_words(words, language))


#: Characters the shorter of two stems needs for one beginning the other to name it.
MIN_PREFIX = 4


def _naming(terms: frozenset[str], names: frozenset[str]) -> frozenset[str]:
    """The ``terms`` (a question's) that name one of ``names`` (a table's labels, caption, headings):
    the same stem, or one beginning the other with at least :data:`MIN_PREFIX` characters (a
    verb names its noun: "weighed" names "Weight", "scored" names "Scorers"; stems "weigh",
    "weight"). Rows are matched by whole stems."""
    return frozenset(t for t in terms if t in names or (len(t) >= MIN_PREFIX and any(_prefixed(t, n) for n in names)))


def _prefixed(a: str, b: str) -> bool:
    return len(b) >= MIN_PREFIX and (a.startswith(b) or b.startswith(a))


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
    """``results`` (from :func:`spire_core.query.aggregate`, with the same ``size``, ``policy`` and ``fmt``)
    with views of their best-ranked tables.

    The result pages' data tables are ranked by what the question names in them, then by
    their admitted seeds (see the module docstring); each of the first ``tables`` gets a
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
    candidates = _all_tables(results, docs)
    if not candidates:
        return list(results)
    views: dict[str, list[Citation]] = {}
    renderings = _Renderings(results, docs, size, policy, fmt)
    left = int(share * budget)
    lexicon = _Lexicon(question, [(docs[t.doc_id], t.table) for t in candidates])
    held = frozenset().union(*(_terms(r.text, docs[r.doc_id].language) for r in results))
    for t, rank in _ranked(candidates, docs, lexicon):
        if sum(len(v) for v in views.values()) >= tables:
            break
        doc = docs[t.doc_id]
        room = min(left, _room(results, views, None if _pointed_at(t, doc, lexicon, held) else t, budget, renderings))
        if room < MIN_VIEW:
            continue  # what outranks the table on other pages fills the budget
        cells, text = _view_cells(doc, grid(doc, t.table), t.cells, lexicon, room, size, policy, fmt)
        paths = doc.to_paths(_subtrees(doc, cells))
        views.setdefault(t.doc_id, []).append(Citation(t.doc_id, paths, text, rank))
        left -= size(text)
        if left < MIN_VIEW:
            break
    if not views:
        return list(results)
    return _fit(list(results), views, budget, renderings)


def _pointed_at(table: _Table, doc: Document, lexicon: _Lexicon, held: frozenset[str]) -> bool:
    """Whether the question points at ``table`` over what the ranking found: it names one of the
    table's column labels, and the ranking admitted seeds in the table or no result holds one
    of those naming words (``held``: the :func:`_terms` of every result's text)."""
    labels = lexicon.labels(doc, table.table)
    return bool(labels) and (bool(table.cells) or not labels <= held)


def _room(
    results: Sequence[Subdocument],
    views: Mapping[str, list[Citation]],
    table: _Table | None,
    budget: int,
    renderings: _Renderings,
) -> int:
    """What ``budget`` leaves for a view: it never displaces an earlier view, nor, for a ``table``
    the question does not point at (None: one it does, :func:`_pointed_at`), a citation of another
    page scored above it, nor, when the ranking admitted none of the table's cells, any citation
    of its own page (on its own page, the view of a table the ranking reached is preferred)."""
    used = 0
    for r in results:
        kept = [
            c
            for c in r.citations
            if table is not None
            and (
                (r.doc_id == table.doc_id and not table.cells)
                or (r.doc_id != table.doc_id and (c.score if c.score is not None else r.score) > table.score)
            )
        ]
        used += renderings(r.doc_id, [*kept, *views.get(r.doc_id, [])]).cost
    return budget - used


@dataclass(frozen=True)
class _Rendering:
    """A page's rendering of some citations: the union of their own global contexts (as node
    indices; None for a result's own, whose ``paths`` are known), the text and its size."""

    context: set[int] | None
    text: str
    cost: int


class _Renderings:
    """The renderings of one :func:`table_views` call, one per page and union of cited paths.

    Fitting the views asks for the same pages with the same citations again (a page left
    without citations, often; one in eight renderings, over the bench questions), and a result's
    own citations render as its text: each union is rendered once.
    """

    def __init__(
        self, results: Sequence[Subdocument], docs: Mapping[str, Document], size: SizeFn, policy: Policy, fmt: Fmt
    ) -> None:
        self.docs, self.size, self.policy, self.fmt = docs, size, policy, fmt
        self.done = {(r.doc_id, _cited(r.citations)): _Rendering(None, r.text, r.cost) for r in results}

    def __call__(self, doc_id: str, citations: Sequence[Citation]) -> _Rendering:
        key = (doc_id, _cited(citations))
        got = self.done.get(key)
        if got is None:
            got = self.done[key] = self._render(self.docs[doc_id], citations)
        return got

    def _render(self, doc: Document, citations: Sequence[Citation]) -> _Rendering:
        context: set[int] = set()
        for c in citations:
            context |= own_context(doc, self.policy, seed_indices(doc, c.paths)[1])
        if not context:
            return _Rendering(context, "", 0)
        text = render_indices(doc, context, fmt=self.fmt)
        return _Rendering(context, text, self.size(text))


def _cited(citations: Iterable[Citation]) -> frozenset[Path]:
    return frozenset().union(*(c.paths for c in citations))


def _admitted_tables(results: Sequence[Subdocument], docs: Mapping[str, Document]) -> list[_Table]:
    """Data tables (:func:`_is_data`) holding admitted seeds, best seed score first."""
    found: dict[tuple[str, int], tuple[float, set[int]]] = {}
    for r in results:
        doc = docs[r.doc_id]
        for c in r.citations:
            for i in seed_indices(doc, c.paths)[0]:
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
        if _is_data(docs[doc_id], table, MIN_ADMITTED_ROWS)
    ]
    return sorted(tables, key=lambda t: -t.score)


def _all_tables(results: Sequence[Subdocument], docs: Mapping[str, Document]) -> list[_Table]:
    """Every data table on the results' pages: those holding admitted seeds (best seed score first), then the others.

    A table without admitted seeds scores as its page's result.
    """
    admitted = _admitted_tables(results, docs)
    seen = {(t.doc_id, t.table) for t in admitted}
    rest = []
    for r in results:
        doc = docs[r.doc_id]
        for t in _TABLES(doc):
            if (r.doc_id, t) not in seen and _is_data(doc, t, MIN_ROWS):
                rest.append(_Table(r.doc_id, t, r.score, frozenset()))
    return admitted + rest


#: Rank weight of a table's best seed score (a similarity in [0, 1], fused or cosine; a page's
#: score for a table without seeds), in :class:`_Lexicon` weight units. Tuned on the wtq and
#: docs dev sets at 298481e (first citation and recall, weights 0.5 to 50; 3 to 12 hold wtq's
#: recall and lift its first citation 0.70 -> 0.74; docs/benchmarks.md "Table views on one scale").
SEED_WEIGHT = 5.0
#: Question words one row of a table without admitted seeds must hold for the table to be viewed.
MIN_ROW_WORDS = 2


def _ranked(
    candidates: Sequence[_Table], docs: Mapping[str, Document], lexicon: _Lexicon
) -> list[tuple[_Table, float]]:
    """The tables to view, best first, with their ranking value: what the question names in them,
    their seeds' score (a view's citation carries the value as its score).

    A table without admitted seeds takes part only when the question names one of its
    column labels or, when the ranking admitted some table cells (the question is about
    tables), :data:`MIN_ROW_WORDS` words of one of its rows (a name, a title).
    """
    tabular = any(t.cells for t in candidates)
    scored = []
    for k, t in enumerate(candidates):
        doc = docs[t.doc_id]
        words = lexicon.table_weight(doc, t.table)
        named = bool(lexicon.labels(doc, t.table)) or (tabular and lexicon.row_words(doc, t.table) >= MIN_ROW_WORDS)
        if t.cells or named:
            rank = words + SEED_WEIGHT * t.score
            scored.append((-rank, k, t))
    return [(t, -rank) for rank, _, t in sorted(scored)]


class _Lexicon:
    """The question's words as they fall in the candidate tables, weighted by rarity.

    A row word weighs ``log(1 + N / n)``: ``n`` of the candidate tables' ``N`` body rows
    hold it (words are matched whole, by their stems: :func:`_terms`; the question's are
    read in each table's page language). Words of a table's page title,
    headings and caption name the table, not a row, so they do not count in its rows; nor
    do the words of its column labels (they name columns). A table's own words (its labels,
    caption, headings and title) weigh ``log(1 + M / m)``: ``m`` of the
    ``M`` candidate tables have them.
    """

    def __init__(self, question: str, tables: Sequence[tuple[Document, int]]) -> None:
        self._question = question
        self._terms: dict[str | None, frozenset[str]] = {}
        self._rows: dict[tuple[int, int], list[frozenset[str]]] = {}
        self._labels: dict[tuple[int, int], frozenset[str]] = {}
        self._names: dict[tuple[int, int], frozenset[str]] = {}
        row_count: dict[str, int] = {}
        name_count: dict[str, int] = {}
        n_rows = 0
        for doc, table in tables:
            key = (id(doc), table)
            if key in self._rows:
                continue
            terms = self.question_terms(doc)
            label_terms, context_terms = _table_terms(doc, table)
            labels = _naming(terms, label_terms)
            names = labels | _naming(terms, context_terms)
            rows = [(row & terms) - names for row in _row_terms(doc, table)]
            self._rows[key], self._labels[key], self._names[key] = rows, labels, names
            n_rows += len(rows)
            for row in rows:
                for w in row:
                    row_count[w] = row_count.get(w, 0) + 1
            for w in names:
                name_count[w] = name_count.get(w, 0) + 1
        n_tables = len(self._rows)
        self._row_idf = {w: math.log(1 + n_rows / n) for w, n in row_count.items()}
        self._name_idf = {w: math.log(1 + n_tables / n) for w, n in name_count.items()}

    def question_terms(self, doc: Document) -> frozenset[str]:
        """The question's :func:`_terms` in the language of ``doc`` (the question is taken to be in its pages')."""
        got = self._terms.get(doc.language)
        if got is None:
            got = self._terms[doc.language] = _terms(self._question, doc.language)
        return got

    def row_weights(self, doc: Document, table: int) -> list[float]:
        """The weight of each body row of ``table`` (in order): the question's words it holds."""
        rows = self._rows.get((id(doc), table))
        if rows is None:
            return [0.0] * len(_row_terms(doc, table))
        return [sum(self._row_idf[w] for w in words) for words in rows]

    def row_words(self, doc: Document, table: int) -> int:
        """The most question words one body row of ``table`` holds."""
        return max(map(len, self._rows.get((id(doc), table), ())), default=0)

    def labels(self, doc: Document, table: int) -> frozenset[str]:
        """The question's words naming the table's column labels."""
        return self._labels.get((id(doc), table), frozenset())

    def table_weight(self, doc: Document, table: int) -> float:
        """The question's words among the table's own words (labels, caption, headings, title), plus its best row."""
        names = sum(self._name_idf[w] for w in self._names.get((id(doc), table), ()))
        return names + max(self.row_weights(doc, table), default=0.0)


def _body(g: Grid) -> list[int]:
    return [r for r in range(len(g.rows)) if r not in g.header_rows]


#: table element -> the words of each of its body rows
_ROW_TERMS: Memo[dict[int, list[frozenset[str]]]] = Memo(lambda doc: {})


def _row_terms(doc: Document, table: int) -> list[frozenset[str]]:
    """The (memoised) :func:`_terms` of each body row of ``table``, in order."""
    memo = _ROW_TERMS(doc)
    rows = memo.get(table)
    if rows is None:
        g = grid(doc, table)
        rows = memo[table] = [_terms(_row_text(doc, g, r), doc.language) for r in _body(g)]
    return rows


def _row_text(doc: Document, g: Grid, r: int) -> str:
    """The text of row ``r`` of the grid, a spanning cell counted in every row it covers."""
    cells = dict.fromkeys(g.at[(r, col)] for col in range(g.width) if (r, col) in g.at)
    return " ".join(doc.subtree_text(c) for c in cells)


#: table element -> the stems of its column labels, and of the words that name it
_TABLE_TERMS: Memo[dict[int, tuple[frozenset[str], frozenset[str]]]] = Memo(lambda doc: {})


def _table_terms(doc: Document, table: int) -> tuple[frozenset[str], frozenset[str]]:
    """The (memoised) :func:`_label_terms` and :func:`_context_terms` of ``table``."""
    memo = _TABLE_TERMS(doc)
    terms = memo.get(table)
    if terms is None:
        g = grid(doc, table)
        terms = memo[table] = (_label_terms(doc, g), _context_terms(doc, g))
    return terms


def _label_terms(doc: Document, g: Grid) -> frozenset[str]:
    """Words of the table's column labels (its header rows)."""
    cells = dict.fromkeys(g.at[(r, col)] for r in g.header_order for col in range(g.width) if (r, col) in g.at)
    return _terms(" ".join(doc.subtree_text(c) for c in cells), doc.language)


def _context_terms(doc: Document, g: Grid) -> frozenset[str]:
    """Words of the page title, the headings over the table and its caption: they name the table, not a row."""
    parts = [doc.title or ""]
    parts += [doc.subtree_text(h) for h in headings(doc).chain(g.table)]
    if g.caption is not None:
        parts.append(doc.subtree_text(g.caption))
    return _terms(" ".join(parts), doc.language)


def _is_data(doc: Document, table: int, min_rows: int) -> bool:
    """Whether the table holds data a view can order: ``min_rows`` body rows, no cell holding a table, mostly filled.

    Pull quotes and score boxes are tables of a row or two (a table of two rows still gets
    a view when the ranking admitted one of its cells, :data:`MIN_ADMITTED_ROWS`, if a header
    row labels them); layout
    tables hold tables; genealogy charts and tournament brackets draw their lines with
    empty cells.
    """
    memo = _DATA_ROWS(doc)
    rows = memo.get(table)
    if rows is None:
        rows = memo[table] = _data_rows(doc, grid(doc, table))
    return rows >= min_rows


def _data_rows(doc: Document, g: Grid) -> int:
    """The table's body rows, or 0 when it is a layout table or mostly empty (see :func:`_is_data`)."""
    if any(doc.tag[j] == "table" for c in g.cells for j in range(c + 1, doc.end[c])):
        return 0
    filled = {c: bool(doc.subtree_text(c).strip()) for c in g.cells}
    if sum(filled[c] for c in g.at.values()) < MIN_FILLED * len(g.at):
        return 0
    if not g.header_rows and len(g.rows) < MIN_ROWS:  # no labels and a row or two: a box, not data
        return 0
    return len(g.rows) - len(g.header_rows)


#: table -> :func:`_data_rows`, per page
_DATA_ROWS: Memo[dict[int, int]] = Memo(lambda doc: {})
#: the page's tables, in document order
_TABLES: Memo[list[int]] = Memo(lambda doc: [i for i, tag in enumerate(doc.tag) if tag == "table"])
#: (size function, cell) -> the size of the cell's text (what a view's estimate counts)
_CELL_WORDS: Memo[dict[tuple[SizeFn, int], int]] = Memo(lambda doc: {})


#: Body rows a table needs for a view (fewer leave nothing to order).
MIN_ROWS = 3
#: Body rows a table holding admitted seeds needs for a view (the row next to an admitted one may be the answer).
MIN_ADMITTED_ROWS = 2
#: Share of a table's grid places that must hold text for it to get a view.
MIN_FILLED = 0.5


def _cell_of(doc: Document, node: int) -> tuple[int, int] | None:
    """``(table, cell)`` of the innermost grid cell holding ``node``, if any."""
    found = _GRID_CELLS(doc)[node]
    return (found[0], found[1]) if found else None


def _grid_cell(doc: Document, cell: int) -> tuple[int, ...]:
    """``(table, cell)`` when ``cell`` (a cell element) is a cell of its nearest table's grid, else ``()``."""
    table = grid_table(doc, cell)
    return () if table is None else (table, cell)


#: Each node's :func:`_grid_cell` of its innermost cell element (``()`` outside any), per page:
#: every node of every admitted seed is looked up, query after query.
_GRID_CELLS: Memo[Table] = Memo(lambda doc: inherited(doc, CELL_TAGS, _grid_cell))


def _key_column(doc: Document, g: Grid) -> int:
    """The row-label column: where body ``<th>`` cells stand, else the first column."""
    if g.body_th:
        counts: dict[int, int] = {}
        for c, (r, col, _, _) in g.cells.items():
            if doc.tag[c] == "th" and r not in g.header_rows:
                counts[col] = counts.get(col, 0) + 1
        return max(counts, key=lambda col: (counts[col], -col))
    return 0


def _named_columns(doc: Document, g: Grid, terms: frozenset[str]) -> list[int]:
    """Columns whose header labels share a word with the question."""
    named = []
    for col in range(g.width):
        label = " ".join(doc.subtree_text(g.at[(r, col)]) for r in g.header_order if (r, col) in g.at)
        if _naming(terms, _terms(label, doc.language)):
            named.append(col)
    return named


#: a number: digits, separated by decimal marks, digit-group separators or ``:`` (``h:mm:ss``)
_NUMBER = re.compile(r"[-\u2212]?\d+(?:[,.:\u00a0\u202f']\d+)*")
#: what only ever separates digit groups (no-break spaces, the Swiss apostrophe)
_GROUP_ONLY = re.compile("[\u00a0\u202f']")


def _parts(text: str) -> tuple[float, list[str]] | None:
    """The sign and the ``:``-separated parts (digits and ``,``/``.`` marks) of the first number in ``text``."""
    m = _NUMBER.search(text)
    if m is None:
        return None
    token = _GROUP_ONLY.sub("", m.group())
    sign = -1.0 if token[0] in "-\u2212" else 1.0
    return sign, token.lstrip("-\u2212").split(":")


def _decimal_mark(part: str) -> str | None:
    """The decimal mark ``part`` shows (``,`` or ``.``), None when it may be either or has none.

    ``1.234,5`` and ``1,5`` show ``,``; ``1,234.5`` and ``3.25`` show ``.``; ``1.234.567`` (groups of
    three) shows ``,`` and ``1,234,567`` shows ``.``; ``1,500`` or ``1.500`` shows nothing.
    """
    marks = [ch for ch in part if ch in ",."]
    if not marks:
        return None
    if len(set(marks)) == 2:
        return marks[-1] if marks.count(marks[-1]) == 1 else None
    mark = marks[0]
    groups = part.split(mark)
    if len(groups) > 2:
        grouped = 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])
        return ("." if mark == "," else ",") if grouped else None
    return mark if len(groups[1]) != 3 else None


def _read(part: str, decimal: str) -> float:
    """``part`` (digits and marks) read with ``decimal`` as its decimal mark, the other mark separating groups."""
    if part.count(decimal) > 1:  # no decimal mark in this convention: a date, a version
        return float("".join(ch for ch in part if ch.isdigit()))
    return float(part.replace("," if decimal == "." else ".", "").replace(decimal, "."))


def _number(text: str, decimal: str | None = None) -> float | None:
    """The first number in ``text``: ``h:mm:ss`` read as one quantity (in seconds), its marks read
    with ``decimal`` as the decimal mark (``,`` or ``.``), else with the one the number shows
    (:func:`_decimal_mark`: ``1,5`` is one and a half, ``1.234,5`` and ``1,234.5`` the same
    quantity), else with ``.`` (``1,500`` is fifteen hundred, ``1.500`` one and a half)."""
    got = _parts(text)
    if got is None:
        return None
    sign, parts = got
    value = 0.0
    for part in parts:
        value = value * 60 + _read(part, decimal or _decimal_mark(part) or ".")
    return sign * value


def _column_numbers(texts: Iterable[str]) -> list[float | None]:
    """The numbers of a column's cells (:func:`_number`), read with the column's decimal mark:
    the one its cells show most (``1,5``, ``2,25`` and ``1,500`` are all below three in a column
    of decimal commas); where they show none or as many of each, every cell reads its own."""
    texts = list(texts)
    votes = {",": 0, ".": 0}
    for text in texts:
        got = _parts(text)
        for part in got[1] if got else ():
            mark = _decimal_mark(part)
            if mark is not None:
                votes[mark] += 1
    decimal = None if votes[","] == votes["."] else max(votes, key=lambda m: votes[m])
    return [_number(text, decimal) for text in texts]


#: Rows a view takes at most for one end of a named column when several share the extreme value.
MAX_TIED = 3


def _extreme_rows(doc: Document, g: Grid, body: list[int], cols: Iterable[int]) -> set[int]:
    """The rows holding the largest and the smallest number of each column that is mostly numbers
    (every row sharing the extreme value, :data:`MAX_TIED` at most, in table order: "the last
    park established" may be any of two founded the same year)."""
    out: set[int] = set()
    for col in cols:
        rows = [r for r in body if (r, col) in g.at]
        values = _column_numbers(doc.subtree_text(g.at[(r, col)]) for r in rows)
        numbers = {r: v for r, v in zip(rows, values, strict=True) if v is not None}
        if numbers and len(numbers) * 2 >= len(body):
            for extreme in (max(numbers.values()), min(numbers.values())):
                out.update([r for r, v in numbers.items() if v == extreme][:MAX_TIED])
    return out


def _matching_rows(doc: Document, g: Grid, body: list[int], lexicon: _Lexicon) -> set[int]:
    """The rows holding the question's rarest words (the row it names: "after X", "the game in Houston")."""
    weights = lexicon.row_weights(doc, g.table)
    most = max(weights, default=0.0)
    return {r for r, w in zip(body, weights, strict=True) if w == most} if most > 0 else set()


def _row_order(body: list[int], named: set[int], extremes: set[int], admitted: set[int]) -> list[int]:
    """Body rows, most useful first, whatever the question asks of them.

    First the rows holding the question's rarest words (the row it names), then the extremes
    of the columns it names (what a superlative asks: cheap, two rows a column, and no longer
    crowded out of a small view by the many rows the ranking admitted), then the admitted
    rows; then what a positional question needs: their neighbours and the first and last
    rows; then the rest, nearest one of the anchors (the ends, the admitted and named rows)
    first, ties in table order. No word of the question decides the order. (Extremes before
    the admitted rows: wtq dev recall 0.91 -> 0.95 and first citation 0.74 -> 0.79 at
    1639d85; docs dev and the tuning manuals unchanged.)
    """
    if not body:
        return []
    pos = {r: k for k, r in enumerate(body)}
    hits = sorted(pos[r] for r in named | admitted if r in pos)
    n = len(body)
    anchors = [0, n - 1, *hits]

    def key(k: int) -> tuple[int, int, int]:
        row = body[k]
        if row in named:
            return (0, 0, k)
        if row in extremes:
            return (0, 1, k)
        if row in admitted:
            return (0, 2, k)
        near = min(abs(k - a) for a in anchors)
        return (1, 0, k) if near <= 1 else (2, near, k)

    return [body[k] for k in sorted(range(n), key=key)]


def _view_cells(
    doc: Document,
    g: Grid,
    admitted: frozenset[int],
    lexicon: _Lexicon,
    budget: int,
    size: SizeFn,
    policy: Policy,
    fmt: Fmt,
) -> tuple[set[int], str]:
    """The cells of the view (priority columns for priority rows, within ``budget``; more columns
    while they fit) and its rendering."""
    body = _body(g)
    key, named = _key_column(doc, g), _named_columns(doc, g, lexicon.question_terms(doc))
    extremes = _extreme_rows(doc, g, body, [c for c in named if c != key])
    rows = _row_order(body, _matching_rows(doc, g, body, lexicon), extremes, {g.cells[c][0] for c in admitted})
    first = list(dict.fromkeys([key, *named, *sorted(g.cells[c][1] for c in admitted)]))
    rest = [c for c in range(g.width) if c not in first]
    words = _CELL_WORDS(doc)

    def cells_of(rs: Iterable[int], cols: Iterable[int]) -> set[int]:
        return {g.at[(r, col)] for r in rs for col in cols if (r, col) in g.at}

    def counted(cells: Iterable[int]) -> int:
        """The cells' words (each cell's memoised per page)."""
        total = 0
        for c in cells:
            n = words.get((size, c))
            if n is None:
                n = words[(size, c)] = size(doc.subtree_text(c))
            total += n
        return total

    def estimate(cell_words: int, rows: int, cols: int) -> int:
        """Cell words, a pipe per cell and row, the header line and its rule (the Markdown table's cost)."""
        return cell_words + (rows + 1) * (cols + 1) + 4 * cols + 1

    cols, top = first, rows[:1]
    while len(cols) > 1 and estimate(counted(cells_of([*g.header_rows, *top], cols)), len(top), len(cols)) > budget:
        cols = cols[:-1]
    # rows, then columns, are taken while the view fits: its cells and words grow by each one's new cells
    shown = cells_of(g.header_rows, cols)
    shown_words = counted(shown)
    taken: list[int] = []
    for r in rows:
        new = cells_of([r], cols) - shown
        more = counted(new)
        if estimate(shown_words + more, len(taken) + 1, len(cols)) > budget:
            break
        taken.append(r)
        shown |= new
        shown_words += more
    if len(taken) == len(rows):
        for col in rest:
            new = cells_of([*g.header_rows, *taken], [col]) - shown
            more = counted(new)
            if estimate(shown_words + more, len(taken), len(cols) + 1) <= budget:
                cols = [*cols, col]
                shown |= new
                shown_words += more
    cells = cells_of(taken, cols)
    text = _view_text(doc, cells, policy, fmt)
    while len(taken) > 1 and size(text) > budget:
        taken = taken[: max(1, int(len(taken) * 0.9))]
        cells = cells_of(taken, cols)
        text = _view_text(doc, cells, policy, fmt)
    return cells, text


def _view_text(doc: Document, cells: Iterable[int], policy: Policy, fmt: Fmt) -> str:
    """The rendering of whole ``cells`` with their global context (memoised: fitting the views
    under the budget needs the same context again, as the view citation's own)."""
    return render_indices(doc, own_context(doc, policy, frozenset(_subtrees(doc, cells))), fmt=fmt)


def _subtrees(doc: Document, cells: Iterable[int]) -> set[int]:
    return {i for c in cells for i in range(c, doc.end[c])}


def _fit(
    results: list[Subdocument], views: Mapping[str, list[Citation]], budget: int, renderings: _Renderings
) -> list[Subdocument]:
    """Merge the views into their pages' results, then drop lowest-scored seed citations while over ``budget``.

    The fewest drops that fit are found by bisection over the drop order (dropping shrinks
    every rendering), each page rendered once per set of its citations kept.
    """
    viewed = {d: frozenset().union(*(v.paths for v in vs)) for d, vs in views.items()}
    # lowest score first; among equal scores (a passage's members) the last admitted first
    order = sorted(
        (
            (c.score if c.score is not None else r.score, -n, r.doc_id, c)
            for r in results
            for n, c in enumerate(r.citations)
        ),
        key=lambda t: t[:2],
    )
    drops = [(d, c) for _, _, d, c in order if not c.paths <= viewed.get(d, frozenset())]  # a view delivers the rest
    pages = {
        r.doc_id: _Page(r, views.get(r.doc_id, []), [c for d, c in drops if d == r.doc_id], renderings) for r in results
    }

    def dropped(m: int) -> dict[str, int]:
        counts = dict.fromkeys(pages, 0)
        for d, _ in drops[:m]:
            counts[d] += 1
        return counts

    def total(m: int) -> int:
        return sum(pages[d].cost(n) for d, n in dropped(m).items())

    m = 0
    if total(0) > budget:
        lo, hi = 0, len(drops)  # total(lo) > budget; hi fits, or drops every droppable citation
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if total(mid) <= budget:
                hi = mid
            else:
                lo = mid
        m = hi
    counts = dropped(m)
    return [s for s in (pages[r.doc_id].result(counts[r.doc_id]) for r in results) if s]


class _Page:
    """One page's result with its views, and its renderings with its ``n`` lowest-scored droppable citations dropped."""

    def __init__(
        self, base: Subdocument, views: list[Citation], drops: list[Citation], renderings: _Renderings
    ) -> None:
        self.base, self.views, self.drops, self.renderings = base, views, drops, renderings

    def kept(self, n: int) -> list[Citation]:
        gone = {id(c) for c in self.drops[:n]}
        return [c for c in self.base.citations if id(c) not in gone]

    def cost(self, n: int) -> int:
        return self.renderings(self.base.doc_id, [*self.kept(n), *self.views]).cost

    def result(self, n: int) -> Subdocument | None:
        """The page's result with ``n`` citations dropped (None when nothing is left)."""
        if n == 0 and not self.views:
            return self.base
        citations = [*self.kept(n), *self.views]
        if not citations:
            return None
        rendering = self.renderings(self.base.doc_id, citations)
        # no context: the citations are the result's own (a view of a table its seeds fill)
        paths = (
            self.base.paths
            if rendering.context is None
            else self.renderings.docs[self.base.doc_id].to_paths(rendering.context)
        )
        return replace(
            self.base,
            seeds=_cited(citations),
            paths=paths,
            text=rendering.text,
            cost=rendering.cost,
            citations=citations,
        )
