"""Header rule (Section 2.3.2): the headings active just before a node, by document order.

One pass keeps a heading stack: a heading of level ``n`` pops every open heading of level
``>= n`` and records the one left on top as its parent. A node's active headings are the
chain (heading, parent, grandparent, ...) from the last heading at or before it. Tree
ancestry plays no part, so a paragraph is governed by a heading that merely precedes it.
The one exception: a heading inside a box (a note or warning admonition, an aside, a
figure) governs only the rest of its box.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spire_core.context.policy import PageRule, Table, subtrees_before
from spire_core.document.tree import HEADING_LEVELS, Memo

#: Containers whose headings scope only their own content (admonitions, asides, figures).
BOX_TAGS = frozenset({"aside", "figure", "blockquote"})
BOX_CLASSES = frozenset({"note", "warning", "tip", "caution", "important", "admonition", "sidebar", "topic"})

if TYPE_CHECKING:
    from spire_core.document.tree import Document


class _Headings:
    """Per-document tables: ``last[i]`` = innermost active heading at ``i``; ``up[h]`` = parent heading."""

    def __init__(self, doc: Document) -> None:
        self.last: list[int] = [-1] * len(doc)
        self.up: dict[int, int] = {}
        stack: list[tuple[int, int, int]] = []  # (level, index, end of scope)
        saved: list[tuple[int, list[tuple[int, int, int]]]] = []  # (box end, the stack outside the box)
        for i, tag in enumerate(doc.tag):
            while saved and saved[-1][0] <= i:  # a box ended: its headings never closed the outer ones
                stack = saved.pop()[1]
            while stack and stack[-1][2] <= i:  # a boxed heading's scope ended
                stack.pop()
            level = HEADING_LEVELS.get(tag or "")
            if level is not None:
                end = _scope_end(doc, i)
                if end < len(doc) and not (saved and saved[-1][0] == end):
                    saved.append((end, list(stack)))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                self.up[i] = stack[-1][1] if stack else -1
                stack.append((level, i, end))
            self.last[i] = stack[-1][1] if stack else -1
        order, ends = list(self.up), doc.end  # every heading, in document order
        #: what stands for each heading in a context (:func:`heading_label`)
        self.label: dict[int, tuple[int, ...]] = {
            h: (h,) if n + 1 == len(order) or order[n + 1] >= ends[h] else subtrees_before(doc, h, order[n + 1])
            for n, h in enumerate(order)
        }

    def chain(self, i: int) -> list[int]:
        out = []
        h = self.last[i]
        while h >= 0:
            out.append(h)
            h = self.up[h]
        return out

    def contributions(self) -> list[tuple[int, ...]]:
        """Every node's chain, by index (one tuple per heading, shared by the nodes under it)."""
        chains: dict[int, tuple[int, ...]] = {-1: ()}
        for h in self.up:
            chains[h] = (*self.label[h], *chains[self.up[h]])  # a heading's parent comes before it
        return [chains[h] for h in self.last]


def heading_label(doc: Document, heading: int) -> tuple[int, ...]:
    """What stands for ``heading`` in a context: itself, or, when it holds another heading
    (markup can nest them), the whole subtrees it holds before that one.

    Whole, each heading of a nest brought the next, whose text brought the one after (within
    its label's first 2,048 characters, :func:`~.policy.label_head`), and so on through the
    page: 1,200 nested ``<h1>`` (36 KB) took 27 s to pack into passages.
    """
    return headings(doc).label[heading]


def _scope_end(doc: Document, heading: int) -> int:
    """End of a heading's scope: its box's end for a heading inside a note/warning box, else the document's."""
    for anc in doc.ancestors(heading):
        if doc.tag[anc] in BOX_TAGS or not BOX_CLASSES.isdisjoint(doc.attrs[anc].get("class", "").split()):
            return doc.end[anc]
    return len(doc)


_HEADINGS: Memo[_Headings] = Memo(_Headings)
_CHAINS: Memo[Table] = Memo(lambda doc: headings(doc).contributions())


def headings(doc: Document) -> _Headings:
    """The (memoised) heading chains of ``doc``."""
    return _HEADINGS(doc)


class HeadersRule(PageRule):
    name = "headers"
    per_page = _CHAINS


def unlabelled_headings(doc: Document, table: Table) -> Table:
    """``table`` (a rule's labels) with nothing for what stands for each heading in contexts
    (:func:`heading_label`: the heading itself, whose text keeps its labels).

    A heading is made intelligible by the headings above it alone: labels label the content
    under a heading, not the heading. With them, a heading reached from another section (a
    layout table holding a heading per row) brought that section's labels, whose own active
    headings lie one section further back, and so on: a unit's context grew with its place
    in the page, a 50 KB page of 400 such sections rendered 11 MB of passages.
    """
    stand_ins = [j for label in headings(doc).label.values() for j in label]
    if not any(table[j] for j in stand_ins):
        return table
    out = list(table)
    for j in stand_ins:
        out[j] = ()
    return out
