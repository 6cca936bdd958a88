"""Table rule (Section 2.3.4): a cell's row label, column label(s) and the table caption.

The layout (grid, spans, header and group rows, caption) is :mod:`spire_core.document.tables`.
Labels, the documented rule:

* A cell's *column labels* are the header-row cells above it that cover its columns (the
  nearest :data:`MAX_HEADER_ROWS` header rows, and at most :data:`MAX_COLUMN_LABELS` cells,
  from the upper rows and the left first: cost bounds for tables of many or wide header rows).
* A group row (a full-width header row below the top) labels the rows under it up to the
  next group row (only the nearest one counts).
* A body cell's *row label* is the nearest ``<th>`` to its left in its row (for a ``<th>``,
  the row's first one). When the row has none and the table has no ``<th>`` outside header
  rows, the row's first cell is the row label (the key column of most data tables).
* Header cells get only the header cells above them in the table's first
  :data:`MAX_HEADER_ROWS` header rows; the caption labels every cell.

A label's own labels are its context too (a policy is a closure), so the rule keeps every
chain of labels short: each ``<th>`` of a row labelled by the one to its left, or each of
2,000 stacked header rows by the rows above it, made every cell's context hold the whole
row or stack (a 60 KB page: 1,000x the page in passages, 10-40 s).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from spire_core.context.headers import unlabelled_headings
from spire_core.context.policy import PageRule, Table, inherited
from spire_core.document.tables import CELL_TAGS, Grid, grid, grid_table
from spire_core.document.tree import Memo

if TYPE_CHECKING:
    from spire_core.document.tree import Document


#: At most this many header rows above a cell label it, the nearest ones (see the module docstring).
MAX_HEADER_ROWS = 16
#: At most this many column labels per cell, the upper rows' first: a cell spanning 1,000 columns
#: under 16 header rows would otherwise be labelled by 16,000 cells. (The bench pages' most
#: labelled cell has 19 labels in all.)
MAX_COLUMN_LABELS = 32


def _labels(doc: Document, g: Grid, cell: int) -> list[int]:
    r, col, span = g.cells[cell][:3]
    out: list[int] = [] if g.caption is None else [g.caption]
    if r in g.group_rows:
        return out
    stop = bisect_left(g.header_order, r)
    header = r in g.header_rows
    seen = set(out)
    room = MAX_COLUMN_LABELS
    # a header cell: the table's first header rows, each labelled by the rows above it (not a chain to the top)
    above = (
        g.header_order[: min(stop, MAX_HEADER_ROWS)]
        if header
        else g.header_order[max(0, stop - MAX_HEADER_ROWS) : stop]
    )
    for hr in above:
        for c in range(col, col + span):
            label = g.at.get((hr, c))
            if label is not None and label != cell and label not in seen:
                seen.add(label)
                out.append(label)
                room -= 1
                if not room:
                    break
        if not room:
            break
    k = bisect_left(g.group_order, r)
    group = g.at.get((g.group_order[k - 1], 0)) if k else None
    if group is not None and not header:
        out.append(group)
    if header:
        return out
    ths = g.row_th.get(r, [])
    k = bisect_left(ths, (col, -1))
    if k:
        out.append(ths[0 if doc.tag[cell] == "th" else k - 1][1])
        return out
    if not g.body_th:
        first = g.at.get((r, 0))
        if first is not None and first != cell:
            out.append(first)
    return out


_CELL_LABELS: Memo[Table] = Memo(lambda doc: unlabelled_headings(doc, inherited(doc, CELL_TAGS, _cell_labels)))


class TablesRule(PageRule):
    name = "tables"
    per_page = _CELL_LABELS


def _cell_labels(doc: Document, cell: int) -> tuple[int, ...]:
    table = grid_table(doc, cell)
    return () if table is None else tuple(_labels(doc, grid(doc, table), cell))
