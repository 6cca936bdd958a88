"""Table layout: a real grid (``rowspan``/``colspan``), header rows, group rows and the caption.

Used by rendering (Markdown tables) and by the tables rule of global context
(:mod:`spire_core.context.tables`, which documents how cells get their labels).

* ``rowspan``/``colspan`` are laid out as in the HTML table model, so a cell's column is
  its grid column, not its index in its row (spans are capped at :data:`MAX_SPAN`, and a
  rowspan ends at the last row).
* Cost bound: a grid holds at most :data:`MAX_GRID_CELLS` slots beyond one per cell. Once
  spans have filled that many, the remaining cells of the table are laid out 1 x 1 (the
  documented fallback, recorded in :attr:`Grid.capped`), so layout time and memory are
  linear in the number of cells however the spans are chosen.
* *Header rows* are the rows of ``<thead>`` and rows made only of ``<th>``. When a table
  has no ``<th>`` and no ``<thead>`` at all, its first row is the header row (if the table
  has another row), unless a cell of it reads as a sentence (:data:`SENTENCE_WORDS`): option
  tables written without ``<th>`` (texi2html, Asciidoctor) begin with their first option.
* A header row below the top made of one cell across the whole table is a *group row*.
* A table without ``<caption>`` takes as caption a ``<p class="title">`` just before it or
  its wrapper (DocBook output such as the PostgreSQL manual).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spire_core.document.tree import Document, Memo, ends_sentence

CELL_TAGS = frozenset({"td", "th"})
MAX_SPAN = 1000
#: Grid slots the spans of one table may fill (see the module docstring).
MAX_GRID_CELLS = 100_000


@dataclass
class Grid:
    """The layout of one table."""

    table: int
    caption: int | None = None
    rows: list[int] = field(default_factory=list)  # tr indices, in order
    #: the table's own caption elements, in order: a browser shows each (the first is :attr:`caption`)
    captions: list[int] = field(default_factory=list)
    cells: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)  # cell -> (row, col, colspan, rowspan)
    at: dict[tuple[int, int], int] = field(default_factory=dict)  # (row, col) -> cell
    header_rows: set[int] = field(default_factory=set)
    #: full-width rows of one header cell below the top, each heading the rows under it
    group_rows: set[int] = field(default_factory=set)
    body_th: bool = False
    #: header rows in order (for labelling, with :attr:`header_rows`)
    header_order: list[int] = field(default_factory=list)
    #: row -> the ``th`` cells covering it, as sorted ``(first column, cell)``
    row_th: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    #: :attr:`group_rows` in order
    group_order: list[int] = field(default_factory=list)
    #: True when the spans hit :data:`MAX_GRID_CELLS` and later cells were laid out 1 x 1
    capped: bool = False
    #: columns: one past the last column any cell covers
    width: int = 0


def grid(doc: Document, table: int) -> Grid:
    """The (memoised) grid of the table element at ``table``."""
    grids = _GRIDS(doc)
    g = grids.get(table)
    if g is None:
        g = grids[table] = _layout(doc, table)
    return g


#: table element -> its grid
_GRIDS: Memo[dict[int, Grid]] = Memo(lambda doc: {})


def grid_table(doc: Document, cell: int) -> int | None:
    """The table whose grid holds the cell element ``cell``: its nearest table, if that table's grid has it."""
    for anc in doc.ancestors(cell):
        if doc.tag[anc] == "table":
            return anc if cell in grid(doc, anc).cells else None
    return None


def boxed(doc: Document, table: int) -> bool:
    """Whether ``table`` is a box, not a grid: one cell and no caption (a code listing or a
    note framed by a table of one cell). It is rendered as what it holds."""
    g = grid(doc, table)
    return len(g.cells) == 1 and not g.captions


def _own_rows(doc: Document, table: int) -> tuple[list[int], set[int], list[int]]:
    rows: list[int] = []
    in_head: set[int] = set()
    captions: list[int] = []
    stack = [(c, False) for c in reversed(doc.children[table])]
    while stack:
        i, head = stack.pop()
        tag = doc.tag[i]
        if tag == "tr":
            rows.append(i)
            if head:
                in_head.add(i)
        elif tag == "caption":
            captions.append(i)
        elif tag in ("thead", "tbody", "tfoot"):
            stack.extend((c, tag == "thead") for c in reversed(doc.children[i]))
    return rows, in_head, captions


def _docbook_title(doc: Document, table: int) -> int | None:
    """A ``<p class="title">`` just before the table or one of its two wrappers (DocBook tables)."""
    node = table
    for _ in range(3):
        parent = doc.parent[node]
        if parent < 0:
            return None
        k = doc.pos[node]
        if k > 0:
            prev = doc.children[parent][k - 1]
            if doc.tag[prev] == "p" and "title" in doc.attrs[prev].get("class", "").split():
                return prev
            return None
        node = parent
    return None


def _span(value: str | None) -> int:
    try:
        n = int((value or "1").strip())
    except ValueError:
        return 1
    return min(max(n, 1), MAX_SPAN)


#: A cell of at least this many words that ends as a sentence ends (``.``, ``!``, ``?``, ...) is no column label.
#: Tuned on benchmarks/tuning/manuals3, manuals4, manuals-de3 at f67ab73; docs/tuned-constants.md.
SENTENCE_WORDS = 4
#: Nor is a cell of more nodes than this (a table in a cell): reading one is bounded, so nested
#: tables' first rows are read in time linear in the page.
MAX_LABEL_NODES = 256


def _reads_as_data(doc: Document, tr: int) -> bool:
    """Whether a row holds a cell that reads as a sentence (see :data:`SENTENCE_WORDS`): a
    headerless table's first row like that is data, not its column labels."""
    for cell in doc.children[tr]:
        if doc.tag[cell] in CELL_TAGS:
            if doc.end[cell] - cell > MAX_LABEL_NODES:
                return True
            text = doc.subtree_text(cell).strip()
            if ends_sentence(text) and len(text.split()) >= SENTENCE_WORDS:
                return True
    return False


def _layout(doc: Document, table: int) -> Grid:
    rows, in_head, captions = _own_rows(doc, table)
    caption = captions[0] if captions else _docbook_title(doc, table)
    g = Grid(table=table, caption=caption, rows=rows, captions=captions)
    any_th = False
    spare = MAX_GRID_CELLS  # slots the spans may still fill
    for r, tr in enumerate(rows):
        col = 0
        cells = [c for c in doc.children[tr] if doc.tag[c] in CELL_TAGS]
        all_th = bool(cells)
        for cell in cells:
            while (r, col) in g.at:
                col += 1
            rs = min(_span(doc.attrs[cell].get("rowspan")), len(rows) - r)
            cs = _span(doc.attrs[cell].get("colspan"))
            if rs * cs > 1:
                if rs * cs - 1 > spare:
                    rs = cs = 1
                    g.capped = True
                spare -= rs * cs - 1
            g.cells[cell] = (r, col, cs, rs)
            th = doc.tag[cell] == "th"
            for dr in range(rs):
                for dc in range(cs):
                    g.at.setdefault((r + dr, col + dc), cell)
                if th:
                    g.row_th.setdefault(r + dr, []).append((col, cell))
            col += cs
            if th:
                any_th = True
            else:
                all_th = False
        if tr in in_head or all_th:
            g.header_rows.add(r)
    if not any_th and not in_head and len(rows) > 1 and not _reads_as_data(doc, rows[0]):
        g.header_rows.add(0)
    for row in g.row_th.values():
        row.sort()
    g.width = 1 + max((c for _, c in g.at), default=-1)
    last = g.width - 1
    for r in sorted(g.header_rows):
        first = g.at.get((r, 0))
        if r and last > 0 and first is not None and first == g.at.get((r, last)):
            g.group_rows.add(r)
    g.header_rows -= g.group_rows
    g.header_order = sorted(g.header_rows)
    g.group_order = sorted(g.group_rows)
    labelled = g.header_rows | g.group_rows
    g.body_th = any(doc.tag[c] == "th" and g.cells[c][0] not in labelled for c in g.cells)
    return g
