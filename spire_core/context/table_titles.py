"""Two table idioms the tables rule (:mod:`spire_core.context.tables`) does not read.

**Table titles** (:class:`TableTitleRule`). Many pages title a table with a line of its own
just above it instead of a ``<caption>``: a bold or emphasised line, or a short paragraph
("**Table 2. Exit codes**", "Supported formats:"). A table without a caption of its own
(nor the DocBook ``<p class="title">`` the grid already takes) is titled by the block just
before it, or before the wrapper ``div`` it opens (or the paragraph that block wraps,
:func:`~spire_core.context.blocks.paragraph_in`), when that block is a *label line*
(:func:`~spire_core.context.blocks.label_line`: short, inline, and fully emphasised or not
ending as a sentence ends). The title labels every cell, as a caption does. Decided by
position and shape alone: a heading there is the headers rule's, a paragraph of prose ("See
the table below.", "**Note:** the values are in bytes.") or a long bold paragraph titles
nothing, nor does a label line with anything between it and the table, nor is a groff tag
table (one row, a term line in its first cell: :func:`~spire_core.context.term_blocks.table_line`)
titled.

**Empty header rows** (:class:`EmptyHeaderRowRule`). A table whose header rows hold no
text at all (Markdown tables written with an empty header line, generated tables with a
blank ``<thead>``) gives its cells blank column labels. Its first row with text below them
stands in: a body cell under it is labelled by the cells of that row over its columns (at
most :data:`~spire_core.context.tables.MAX_COLUMN_LABELS`), as by a header row. The stand-in
row's own cells get nothing, so no chain of labels forms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spire_core.context.blocks import label_line, paragraph_in, previous_block
from spire_core.context.headers import unlabelled_headings
from spire_core.context.policy import PageRule, Table, inherited
from spire_core.context.tables import MAX_COLUMN_LABELS
from spire_core.context.term_blocks import table_line
from spire_core.document.tables import CELL_TAGS, Grid, grid, grid_table
from spire_core.document.tree import Memo

if TYPE_CHECKING:
    from spire_core.document.tree import Document

#: A table's title may sit before at most this many wrapper ``div`` it opens.
WRAPPER_LEVELS = 2


def table_title(doc: Document, table: int) -> int | None:
    """The label line titling ``table`` (module docstring), or None."""
    if grid(doc, table).caption is not None or table_line(doc, table) >= 0:
        return None  # (a one-row table standing for a term line is no data table: no title)
    prev = previous_block(doc, table, climb=WRAPPER_LEVELS)
    line = paragraph_in(doc, prev) if prev >= 0 else -1  # (a label line is a paragraph of its own)
    return line if line >= 0 and label_line(doc, line) else None


def _title_of_cell(doc: Document, cell: int) -> tuple[int, ...]:
    table = grid_table(doc, cell)
    if table is None:
        return ()
    titles = _TITLES(doc)
    if table not in titles:
        titles[table] = table_title(doc, table)
    title = titles[table]
    return () if title is None else (title,)


_TITLES: Memo[dict[int, int | None]] = Memo(lambda doc: {})
_TITLE_TABLE: Memo[Table] = Memo(lambda doc: unlabelled_headings(doc, inherited(doc, CELL_TAGS, _title_of_cell)))


class TableTitleRule(PageRule):
    """A table without a caption: the label line just above it labels its cells."""

    name = "table-titles"
    per_page = _TITLE_TABLE


def _blank(doc: Document, cell: int) -> bool:
    return not doc.subtree_text(cell).strip()


def stand_in_row(doc: Document, g: Grid) -> tuple[int, frozenset[int]] | None:
    """The row standing in for the header rows of ``g`` when they hold no text, and its cells
    with text (module docstring); None when the header rows have text or nothing stands in."""
    if not g.header_order:
        return None
    rows: dict[int, list[int]] = {}
    for cell, (r, *_rest) in g.cells.items():
        rows.setdefault(r, []).append(cell)
    if any(not _blank(doc, c) for r in g.header_order for c in rows.get(r, ())):
        return None
    for r in range(g.header_order[-1] + 1, len(g.rows)):
        if r in g.group_rows:
            continue
        filled = frozenset(c for c in rows.get(r, ()) if not _blank(doc, c))
        if filled:
            return r, filled
    return None


def _stand_in_labels(doc: Document, cell: int) -> tuple[int, ...]:
    table = grid_table(doc, cell)
    if table is None:
        return ()
    g = grid(doc, table)
    rows = _STAND_INS(doc)
    if table not in rows:
        rows[table] = stand_in_row(doc, g)
    stand_in = rows[table]
    r, col, span = g.cells[cell][:3]
    if stand_in is None or r <= stand_in[0]:
        return ()
    row, filled = stand_in
    out: list[int] = []
    for c in range(col, col + span):
        label = g.at.get((row, c))
        if label is not None and label in filled and label not in out:
            out.append(label)
            if len(out) == MAX_COLUMN_LABELS:
                break
    return tuple(out)


_STAND_INS: Memo[dict[int, tuple[int, frozenset[int]] | None]] = Memo(lambda doc: {})
_STAND_IN_TABLE: Memo[Table] = Memo(lambda doc: unlabelled_headings(doc, inherited(doc, CELL_TAGS, _stand_in_labels)))


class EmptyHeaderRowRule(PageRule):
    """A table whose header rows are empty: its first row with text labels the columns below it."""

    name = "empty-header-rows"
    per_page = _STAND_IN_TABLE
