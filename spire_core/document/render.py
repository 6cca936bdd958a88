"""Rendering a path set as Markdown (or plain text): ``Render(Subdoc(D, P))`` without copying the tree.

The kept nodes are ``Link(D, P)``; they are visited in document order with an explicit
stack. Headings become ``#`` lines, list items ``-``/``n.`` lines indented by nesting,
``dt``/``dd`` a term line and a ``: definition`` line, ``pre`` a fenced block, and a table a
Markdown table holding only its kept cells under their kept labels. Inline markup (links,
emphasis, code) is rendered as its text, so rendered text matches the page's words.
Whitespace is collapsed outside ``pre``. With ``labels``, each labelled unit's text is
wrapped in ``<label>…</label>`` markers (for the evidence-filter prompt).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from spire_core.document.paths import link_indices, link_order
from spire_core.document.tables import Grid, boxed, grid
from spire_core.document.tree import (
    HEADING_LEVELS,
    INLINE_TAGS,
    LRU,
    SENTINELS,
    Document,
    Memo,
    Path,
    block_of,
    ends_sentence,
)

#: Rendering of a path set.
Fmt = Literal["markdown", "text"]

_BACKTICKS = re.compile(r"`+")
_TIGHT = frozenset({"li", "dt", "dd"})
_LISTS = frozenset({"ul", "ol", "menu"})
#: ``li`` -> the number a browser shows for it
_OL_NUMBERS: Memo[dict[int, int]] = Memo(lambda doc: {})
#: cell -> the text of the whole cell, unmarked
_CELL_TEXT: Memo[dict[int, str]] = Memo(lambda doc: {})
#: Unmarked table renderings remembered per document (least recently used forgotten): one
#: question's aggregation and table views render the same table with the same kept cells
#: again and again while other parts of the page change (about 57% of its table renderings).
TABLE_MEMO_SIZE = 32
#: (table, its kept nodes packed, markdown) -> the blocks it renders to (the list prefixes they
#: carry are the table's ancestors', which every rendering keeps)
_TABLE_BLOCKS: Memo[LRU[tuple[int, bytes, bool], tuple[_Block, ...]]] = Memo(lambda doc: LRU(TABLE_MEMO_SIZE))
#: A block element whose whole subtree (at most this many nodes) is kept is rendered from its
#: remembered blocks: what a subtree renders to depends only on the subtree, its ancestors (all
#: kept) and the list marker waiting on entry. Every unit under one label renders that label's
#: items again: a flood of tiny list items under a heading rendered 4,000 nodes per unit.
SUBTREE_NODES = 256
#: Whole subtrees remembered rendered per document (least recently used forgotten).
SUBTREE_MEMO_SIZE = 4096
_SubtreeKey = tuple[int, str | None, bool]
#: (block, the list marker waiting on entry, markdown) -> (its blocks, the marker waiting after it)
_SUBTREES: Memo[LRU[_SubtreeKey, tuple[tuple[_Block, ...], str | None]]] = Memo(lambda doc: LRU(SUBTREE_MEMO_SIZE))
#: an open block element: (its subtree's end, its index, the blocks before it, its memo key when remembered)
_Open = tuple[int, int, int, _SubtreeKey | None]


def render(
    doc: Document,
    paths: Iterable[Path],
    *,
    fmt: Fmt = "markdown",
    labels: Mapping[str, Iterable[Path]] | None = None,
    markers: Mapping[str, Iterable[Path]] | None = None,
) -> str:
    """Render the subdocument ``(doc, paths)`` as ``"markdown"`` or ``"text"``.

    ``labels`` wrap each unit's text in ``<name>…</name>``; ``markers`` put `` [name]`` after
    each unit's last word, and after each block it spans that ends a sentence (a citation marker).
    """
    label_nodes = {name: doc.indices(p) for name, p in (labels or {}).items()}
    marker_nodes = {name: doc.indices(p) for name, p in (markers or {}).items()}
    return render_indices(doc, doc.indices(paths), fmt=fmt, labels=label_nodes, markers=marker_nodes)


def render_indices(
    doc: Document,
    nodes: Iterable[int],
    *,
    fmt: Fmt = "markdown",
    labels: Mapping[str, Iterable[int]] | None = None,
    markers: Mapping[str, Iterable[int]] | None = None,
) -> str:
    """:func:`render` on node indices (no path conversion)."""
    return rendered(doc, nodes, fmt=fmt, labels=labels, markers=markers)[0]


def rendered(
    doc: Document,
    nodes: Iterable[int],
    *,
    fmt: Fmt = "markdown",
    labels: Mapping[str, Iterable[int]] | None = None,
    markers: Mapping[str, Iterable[int]] | None = None,
) -> tuple[str, int]:
    """:func:`render_indices`, and how many nodes the rendering visited (``Link(nodes)``: its cost)."""
    if fmt not in ("markdown", "text"):
        raise ValueError(f"fmt must be 'markdown' or 'text', not {fmt!r}")
    kept = link_order(doc, nodes)
    return _Renderer(doc, kept, fmt == "markdown", _marks(doc, kept, labels or {}, markers or {})).run(), len(kept)


@dataclass
class _Marks:
    opens: dict[int, list[str]] = field(default_factory=dict)
    closes: dict[int, list[str]] = field(default_factory=dict)
    #: citation markers after a text node
    after: dict[int, list[str]] = field(default_factory=dict)


def _marks(
    doc: Document, kept: list[int], labels: Mapping[str, Iterable[int]], markers: Mapping[str, Iterable[int]]
) -> _Marks:
    marks = _Marks()
    if not labels and not markers:
        return marks
    keep = set(kept)
    for name, nodes in labels.items():
        texts = sorted(i for i in link_indices(doc, nodes) if i in keep and doc.tag[i] is None)
        if texts:
            marks.opens.setdefault(texts[0], []).append(name)
            marks.closes.setdefault(texts[-1], []).insert(0, name)
    for name, nodes in markers.items():
        words = sorted(i for i in link_indices(doc, nodes) if i in keep and doc.tag[i] is None and doc.text[i].strip())
        # a citation spanning blocks is marked at the end of each that ends a sentence (a term or a
        # label before its text is not), and at its end
        ends = sorted({block_of(doc, i): i for i in words}.values())
        for i in [*(i for i in ends[:-1] if ends_sentence(doc.text[i])), *ends[-1:]]:
            marks.after.setdefault(i, []).append(name)
    return marks


def code_fence(code: str) -> str:
    """A backtick fence for ``code`` that nothing inside can close: longer than any backtick
    run in it, and at least three (CommonMark: a closing fence is at least as long as the opening)."""
    return "`" * max(3, 1 + max((len(m) for m in _BACKTICKS.findall(code)), default=0))


@dataclass(frozen=True)
class _Block:
    text: str
    tight: bool


#: Nested containers (list items, definitions, quotes) whose prefixes a line carries at most.
MAX_PREFIX_LEVELS = 16


class _Renderer:
    def __init__(self, doc: Document, kept: list[int], markdown: bool, marks: _Marks) -> None:
        self.doc = doc
        self.kept = kept
        self.markdown = markdown
        self.marks = marks
        self.marked = bool(marks.opens or marks.closes or marks.after)
        self.blocks: list[_Block] = []
        self.buf: list[str] = []
        self.prefix: list[str] = []  # indentation / quote prefixes of open containers
        self.marker: str | None = None  # list marker waiting for the item's first line

    # -- output ----------------------------------------------------------------------
    def lead(self) -> str:
        """The line prefix of the open containers: the innermost :data:`MAX_PREFIX_LEVELS` only,
        so a line under 256 nested quotes or lists costs a bounded prefix, not 512 characters."""
        return "".join(self.prefix[-MAX_PREFIX_LEVELS:])

    def flush(self, heading: int = 0, tight: bool = False) -> None:
        if not self.buf:
            return
        text = " ".join("".join(self.buf).split())  # whitespace collapsed (what regex \s matches)
        self.buf.clear()
        if not text:
            return
        if heading and self.markdown:
            text = "#" * heading + " " + text
        lead = self.lead()
        if self.marker is not None:
            lead = lead[: len(lead) - len(self.marker)] + self.marker
            self.marker = None
            tight = True
        self.blocks.append(_Block(lead + text, tight))

    def inline(self, i: int) -> str:
        text = self.doc.text[i]
        if i in self.marks.opens:
            text = "".join(f"<{m}>" for m in self.marks.opens[i]) + text
        if i in self.marks.closes:
            text = text + "".join(f"</{m}>" for m in self.marks.closes[i])
        if i in self.marks.after:
            text = text.rstrip() + "".join(f" [{m}]" for m in self.marks.after[i])
        return text

    # -- traversal -------------------------------------------------------------------
    def run(self) -> str:
        doc, kept, buf, texts, end = self.doc, self.kept, self.buf, self.doc.text, self.doc.end
        memo = None if self.marked else _SUBTREES(doc)
        open_: list[_Open] = []
        k = 0
        while k < len(kept):
            i = kept[k]
            while open_ and open_[-1][0] <= i:
                self.closed(open_.pop(), memo)
            tag = doc.tag[i]
            if tag is None:
                buf.append(self.inline(i) if self.marked else texts[i])
            elif tag in SENTINELS or tag == "br":
                buf.append(" ")
            elif tag in INLINE_TAGS:  # rendered as its text: nothing opens or closes
                pass
            elif tag == "table" and not boxed(doc, i):
                self.flush()
                self.table(i)
                k = bisect_left(kept, doc.end[i])
                continue
            elif tag == "pre":
                self.flush()
                self.pre(i)
                k = bisect_left(kept, doc.end[i])
                continue
            else:
                stop = end[i]
                size = stop - i
                key = None
                whole = k + size <= len(kept) and kept[k + size - 1] == stop - 1
                if memo is not None and size <= SUBTREE_NODES and whole:
                    self.flush()  # (what open does first) ends the text before it: the marker is then known
                    key = (i, self.marker, self.markdown)
                    got = memo.get(key)
                    if got is not None:
                        self.blocks.extend(got[0])
                        self.marker = got[1]
                        k += size
                        continue
                self.open(i, tag)
                open_.append((stop, i, len(self.blocks), key))
            k += 1
        while open_:
            self.closed(open_.pop(), memo)
        self.flush()
        return self.join()

    def closed(self, entry: _Open, memo: LRU[_SubtreeKey, tuple[tuple[_Block, ...], str | None]] | None) -> None:
        """Close the open element of ``entry``, remembering what its whole subtree rendered to."""
        _, i, start, key = entry
        self.close(i)
        if key is not None and memo is not None:
            memo[key] = (tuple(self.blocks[start:]), self.marker)

    def join(self) -> str:
        out: list[str] = []
        for n, b in enumerate(self.blocks):
            if n:
                out.append("\n" if b.tight and self.blocks[n - 1].tight else "\n\n")
            out.append(b.text)
        return "".join(out)

    def open(self, i: int, tag: str) -> None:
        if tag in INLINE_TAGS:
            return
        self.flush()
        if tag == "li":
            parent = self.doc.parent[i]
            if self.doc.tag[parent] == "ol":
                marker = f"{self.number(i)}. "
            else:
                marker = "- "
            self.prefix.append(" " * len(marker))
            self.marker = marker
        elif tag == "dd":
            self.prefix.append("  ")
            self.marker = ": "
        elif tag == "blockquote":
            self.prefix.append("> ")

    def close(self, i: int) -> None:
        tag = self.doc.tag[i] or ""
        if tag in INLINE_TAGS:
            return
        self.flush(heading=HEADING_LEVELS.get(tag, 0) or (1 if tag == "title" else 0), tight=tag in _TIGHT)
        if tag in ("li", "dd", "blockquote"):
            self.prefix.pop()
            if tag != "blockquote":
                self.marker = None

    def number(self, li: int) -> int:
        """The number a browser shows for ``li``: ``start``, ``reversed`` and ``value`` honoured."""
        numbers = _OL_NUMBERS(self.doc)
        if li not in numbers:
            doc = self.doc
            parent = doc.parent[li]
            items = [c for c in doc.children[parent] if doc.tag[c] == "li"]
            step = -1 if "reversed" in doc.attrs[parent] else 1
            n = _int(doc.attrs[parent].get("start"), len(items) if step < 0 else 1) - step
            for c in items:
                n = numbers[c] = _int(doc.attrs[c].get("value"), n + step)
        return numbers[li]

    # -- special blocks ----------------------------------------------------------------
    def kept_in(self, i: int) -> list[int]:
        lo = bisect_left(self.kept, i)
        hi = bisect_left(self.kept, self.doc.end[i])
        return self.kept[lo:hi]

    def cell_text(self, cell: int) -> str:
        kept = self.kept_in(cell)
        whole = len(kept) == self.doc.end[cell] - cell and not self.marked
        if whole and cell in (memo := _CELL_TEXT(self.doc)):
            return memo[cell]
        parts = []
        for j in kept:
            tag = self.doc.tag[j]
            if tag is None:
                parts.append(self.inline(j))
            elif tag not in INLINE_TAGS or tag in SENTINELS or tag == "br":
                parts.append(" ")
        text = " ".join("".join(parts).split())
        if whole:
            _CELL_TEXT(self.doc)[cell] = text
        return text

    def code_text(self, i: int) -> str:
        """The kept text of the ``pre`` at ``i``: a ``<br>`` is a line break, and so are the
        start and end of a block element inside it (as a browser lays them out)."""
        doc, parts = self.doc, []
        blocks: list[int] = []  # subtree ends of the open block elements
        for j in self.kept_in(i):
            while blocks and blocks[-1] <= j:
                blocks.pop()
                parts.append("\n")
            tag = doc.tag[j]
            if tag is None:
                parts.append(self.inline(j))
            elif tag == "br":
                parts.append("\n")
            elif tag not in INLINE_TAGS and tag not in SENTINELS:
                parts.append("\n")
                blocks.append(doc.end[j])
        return "".join(parts)

    def pre(self, i: int) -> None:
        code = self.code_text(i).strip("\n")
        if not code.strip():
            return
        lead = self.lead()
        body = "\n".join(lead + line for line in code.split("\n"))
        fence = code_fence(code)
        self.blocks.append(_Block(f"{lead}{fence}\n{body}\n{lead}{fence}" if self.markdown else body, False))

    def table(self, t: int) -> None:
        kept = self.kept_in(t)
        if self.marked:
            self._table(t, kept)
            return
        memo = _TABLE_BLOCKS(self.doc)
        key = (t, array("i", kept).tobytes(), self.markdown)
        blocks = memo.get(key)
        if blocks is None:
            start = len(self.blocks)
            self._table(t, kept)
            blocks = memo[key] = tuple(self.blocks[start:])
        else:
            self.blocks.extend(blocks)

    def _table(self, t: int, kept: list[int]) -> None:
        """Render the table at ``t`` from its ``kept`` nodes."""
        doc = self.doc
        g = grid(doc, t)
        inside = set(kept) if g.captions else ()
        for caption in g.captions:
            if caption in inside:
                self.blocks.append(_Block(self.lead() + self.cell_text(caption), False))
        cells = [c for c in kept if c in g.cells]
        if not cells:
            return
        cols = sorted({g.cells[c][1] for c in cells})  # a spanning cell shows in its first column
        rows = _rows(g, cells)
        texts = {c: self.cell_text(c).replace("|", "\\|") for c in cells}
        head_rows = [r for r in rows if r in g.header_rows]
        body_rows = [r for r in rows if r not in g.header_rows]
        lines: list[str] = []
        sep = " | "
        if self.markdown:
            header = []
            for col in cols:
                names: list[str] = []
                for r in head_rows:
                    c = g.at.get((r, col))
                    if c in texts and texts[c] and texts[c] not in names:
                        names.append(texts[c])
                header.append(" / ".join(names))
            lines.append("| " + sep.join(header) + " |")
            lines.append("|" + "|".join("---" for _ in cols) + "|")
        elif head_rows:
            body_rows = head_rows + body_rows
        for r in body_rows:
            row = []
            for col in cols:
                c = g.at.get((r, col))
                row.append(texts[c] if c in texts and g.cells[c][1] == col else "")
            lines.append(("| " + sep.join(row) + " |") if self.markdown else sep.join(x for x in row if x))
        lead = self.lead()
        self.blocks.append(_Block("\n".join(lead + line for line in lines), False))


def _int(value: str | None, default: int) -> int:
    try:
        return int((value or "").strip())
    except ValueError:
        return default


def _rows(g: Grid, cells: list[int]) -> list[int]:
    """Rows that start a kept cell, less rows whose kept cells all show in kept rows below them.

    A cell spanning down shows in a lower row where it holds its first column's slot. Rows are
    decided from the bottom up, so a row is dropped only for rows that stay.
    """
    starts: dict[int, list[int]] = {}
    for c in cells:
        starts.setdefault(g.cells[c][0], []).append(c)
    rows: set[int] = set()
    for r in sorted(starts, reverse=True):
        if not all(_shown_below(g, c, rows) for c in starts[r]):
            rows.add(r)
    return sorted(rows)


def _shown_below(g: Grid, cell: int, rows: set[int]) -> bool:
    r, col, _, rowspan = g.cells[cell]
    return any(g.at.get((below, col)) == cell for below in range(r + 1, r + rowspan) if below in rows)
