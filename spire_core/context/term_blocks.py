"""Terms without ``<dl>``: a line of its own followed by an indented description block.

Many generators write an option or field reference as a term on a line of its own, often
bold or code, followed by its description indented below it, the way a ``<dt>``/``<dd>`` pair
reads (``<p><code>--opt</code></p><blockquote>...</blockquote>``, ``<p><strong>term</strong></p>
<div class="indent">...</div>``, groff's ``<p style="margin-left:6%"><b>-a</b></p><p
style="margin-left:17%">...</p>``). Read alone, the description lacks what it describes.

A *description block* is a ``blockquote``, or a ``div``/``p``/``section`` that is indented: a
class naming an indent (a class token containing ``indent``) or a positive left margin or
padding in its ``style``. Its *term* is the block before the run of description blocks it
belongs to (at most :data:`MAX_RUN` of them, the siblings before it indented alike), when that
block is a *label line* (:func:`~spire_core.context.blocks.label_line`: short, inline, fully
emphasised or not ending as a sentence ends) and is indented less than the description (when
both give a left margin in the same unit; one without a margin always is). The term labels
everything in the description block, as ``<dt>`` terms label a ``<dd>``. So a quotation after
a paragraph of prose, or an indented block after a long or sentence-like paragraph, has no
term; nor has a block after a line indented as deep as itself (two lines of one indented run).

**Tag tables.** groff ``-Thtml`` sets a tag too wide for its column as a table of one row,
the tag in its first cell and nothing in the others, with the description indented below it
(``<table><tr><td><p>\\fB, \\f3</p></td><td></td></tr></table><p style="margin-left:10%">Set
Bold style</p>``). Such a table before a description block stands for its term line
(:func:`table_line`): the line in its first cell, when that is a label line. A table of more
rows, or whose other cells hold text, is a table (the tables rule labels its rows), and a tag
table takes no title from the block above it (:mod:`~spire_core.context.table_titles`), so the
description before one never chains into the next one's context.

**Term rows.** Some generators set the term *beside* its description instead, as a row of two
blocks: rustdoc's ``<div class="item-row"><div class="item-left"><a>vec_deque</a></div><div
class="item-right">A double-ended queue ...</div></div>``, Haddock's ``<div class="top"><p
class="src">keepDelimsR :: Splitter a</p><div class="doc">...</div></div>``, CSS grids of a
name and its value. A ``div`` holding a label line (``p`` or ``div``) and then a ``div``, and
nothing else, is such a row when a sibling just before or after it is a like row (same tag and
class, the same two cells): its first cell is the second's term. One row alone, a row of three
cells or one whose first cell is prose labels nothing.

**Term items.** A list item may open with its term and go on with the description in blocks
of its own: Halibut's ``<li>Signals (SIGINT, SIGTERM etc)<p>Sends various POSIX signals.</p>``,
a Markdown loose list's ``<li><p><strong>Term</strong></p><p>Description.</p>``. The item's
leading inline children, or its first child when that is a label line, label the item's later
children when they read as a label line (short, and emphasised or not ending a sentence) and
a child follows them (:func:`item_term`). An item opening with a sentence labels nothing.

Inside nested description blocks each block's term counts, down to :data:`MAX_TERM_DEPTH` deep.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from spire_core.context.blocks import LINE_TAGS, element_children, label_line, label_run
from spire_core.context.headers import unlabelled_headings
from spire_core.context.policy import PageRule, Table
from spire_core.document.tables import CELL_TAGS, grid
from spire_core.document.tree import INLINE_TAGS, Memo

if TYPE_CHECKING:
    from spire_core.document.tree import Document

#: Blocks that may be indented description blocks (a ``blockquote`` always is one).
INDENTABLE = frozenset({"div", "p", "section"})
#: A description block's term is looked for at most this many indented siblings back.
MAX_RUN = 32
#: An item's term is at most this many leading inline children (:func:`item_term`).
MAX_LEAD_CHILDREN = 32
#: A term row holds at most this many children (its two cells and blank text around them).
MAX_ROW_CHILDREN = 5
#: A blank cell beside a one-row table's term holds at most this many nodes (:func:`table_line`).
MAX_BLANK_NODES = 8
#: Description blocks nested in more than this many termed blocks have no term (:func:`_terms`).
MAX_TERM_DEPTH = 16
_LEFT = re.compile(r"(?:^|;)\s*(?:margin|padding)-(?:left|inline-start)\s*:\s*([0-9]*\.?[0-9]+)\s*([a-z%]*)", re.I)


def indent(doc: Document, node: int) -> tuple[float, str] | None:
    """The left indent ``node``'s markup gives it: (amount, unit) from its style, ``(1, "class")``
    for an indenting class, ``(1, "quote")`` for a blockquote; None when not indented."""
    tag = doc.tag[node]
    if tag == "blockquote":
        return 1.0, "quote"
    if tag not in INDENTABLE:
        return None
    attrs = doc.attrs[node]
    style = attrs.get("style")
    if style:
        total, unit = 0.0, ""
        for amount, u in _LEFT.findall(style):
            if unit and u.lower() != unit:
                continue  # one unit per block: the first one given
            unit = u.lower()
            total += float(amount)
        if total > 0:
            return total, unit
    classes = attrs.get("class")
    if classes and any("indent" in c.lower() for c in classes.split()):
        return 1.0, "class"
    return None


def term_of(doc: Document, block: int) -> int:
    """The term of the description block ``block`` (-1: none; module docstring)."""
    own = indent(doc, block)
    if own is None:
        return -1
    parent = doc.parent[block]
    if parent < 0:
        return -1
    siblings = doc.children[parent]
    k = doc.pos[block]
    for _ in range(MAX_RUN):
        if k == 0:
            return -1
        k -= 1
        prev = siblings[k]
        if doc.tag[prev] is None:
            return -1
        theirs = indent(doc, prev)
        if theirs is not None and theirs == own:
            continue  # the run of description blocks goes on
        if doc.tag[prev] == "table":
            return table_line(doc, prev)
        if not label_line(doc, prev):
            return -1
        if theirs is None or (theirs[1] == own[1] and theirs[0] < own[0]):
            return prev
        return -1
    return -1


def table_line(doc: Document, table: int) -> int:
    """The label line a one-row table stands for (-1: none): its first cell holding only a label
    line, its other cells blank, as groff ``-Thtml`` sets a tag too wide for its column
    (``<table><tr><td><p>\\fB, \\f3</p></td><td></td></tr></table>``, the description below)."""
    rows = grid(doc, table).rows
    if len(rows) != 1:
        return -1
    cells = element_children(doc, rows[0], MAX_ROW_CHILDREN)
    if not cells or any(doc.tag[c] not in CELL_TAGS for c in cells):
        return -1
    if any(doc.end[c] - c > MAX_BLANK_NODES or doc.subtree_text(c).strip() for c in cells[1:]):
        return -1
    inner = element_children(doc, cells[0], MAX_ROW_CHILDREN)
    return inner[0] if inner is not None and len(inner) == 1 and label_line(doc, inner[0]) else -1


def row_term(doc: Document, cell: int) -> int:
    """The term of ``cell`` when it is the second of a *term row* (-1: none): a ``div`` holding
    a label line and a ``div`` and nothing else, among like rows (a sibling just before or
    after it of the same tag and class holds the same two cells)."""
    row = doc.parent[cell]
    if row < 0 or doc.tag[row] != "div":
        return -1
    pair = _pair(doc, row)
    if pair is None or pair[1] != cell or not label_line(doc, pair[0]):
        return -1
    outer = doc.parent[row]
    if outer < 0:
        return -1
    siblings, k, cls = doc.children[outer], doc.pos[row], doc.attrs[row].get("class")
    for j in (k - 1, k + 1):
        if 0 <= j < len(siblings):
            other = siblings[j]
            if doc.tag[other] == "div" and doc.attrs[other].get("class") == cls and _pair(doc, other) is not None:
                return pair[0]
    return -1


def _pair(doc: Document, row: int) -> tuple[int, int] | None:
    """The two cells ``row`` holds (a ``p`` or ``div``, then a ``div``) when it holds them and
    nothing else (text between them blank)."""
    cells = element_children(doc, row, MAX_ROW_CHILDREN)
    if cells is None or len(cells) != 2 or doc.tag[cells[0]] not in LINE_TAGS or doc.tag[cells[1]] != "div":
        return None
    return cells[0], cells[1]


def item_term(doc: Document, item: int) -> tuple[tuple[int, ...], int]:
    """The term an ``li`` opens with and the position of its first child after the term: its
    leading inline children, or its first child when that is a label line (``p``/``div``),
    when they read as a label line and a block follows (``((), 0)``: none)."""
    kids = doc.children[item]

    def inline(k: int) -> bool:
        return doc.tag[kids[k]] is None or doc.tag[kids[k]] in INLINE_TAGS

    k = 0
    while k < len(kids) and k < MAX_LEAD_CHILDREN and inline(k):
        k += 1
    if k == len(kids) or inline(k):
        return (), 0  # no block after the inline run, or a run longer than a term
    if k > 0:
        if label_run(doc, kids[0], doc.end[kids[k - 1]], item):
            return tuple(kids[:k]), k
        return (), 0
    if len(kids) > 1 and label_line(doc, kids[0]):
        return (kids[0],), 1
    return (), 0


def _terms(doc: Document) -> Table:
    """Every node's terms: those of the description blocks around it, nearest first (one pass).

    Only blocks inside at most :data:`MAX_TERM_DEPTH` termed blocks (itself counted) have a
    term: a term line sits inside the block around its own, so a closure brings the terms of
    every block up the nesting, which the cap bounds (as the lists rule's depth cap does).
    """
    out: list[tuple[int, ...]] = []
    depth: list[int] = []
    items: dict[int, tuple[tuple[int, ...], int]] = {}
    for i, (tag, parent) in enumerate(zip(doc.tag, doc.parent, strict=True)):
        d = depth[parent] if parent >= 0 else 0
        around = out[parent] if parent >= 0 else ()
        if tag == "li":
            items[i] = item_term(doc, i)
        if parent in items and tag is not None and d < MAX_TERM_DEPTH:
            lead, first = items[parent]
            if lead and doc.pos[i] >= first:
                d += 1
                around = (*lead, *around)
        if (tag == "blockquote" or tag in INDENTABLE) and d < MAX_TERM_DEPTH:
            term = term_of(doc, i)
            if term < 0 and tag == "div":
                term = row_term(doc, i)
            if term >= 0:
                d += 1
                around = (term, *around)
        depth.append(d)
        out.append(around)
    return out


_TABLE: Memo[Table] = Memo(lambda doc: unlabelled_headings(doc, _terms(doc)))


class TermBlockRule(PageRule):
    """A description block indented under a term line is labelled by the term, as a ``dd`` by its ``dt``."""

    name = "term-blocks"
    per_page = _TABLE
