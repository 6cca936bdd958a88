"""Titled boxes: a sidebar, note or example whose first line is its title.

Generators set a box (a sidebar, an admonition, an example, a card) as a block whose first
line is marked as its title by a class: DocBook's ``<div class="sidebar"><div
class="titlepage">...<p class="title"><b>VOCABULARY Freeze</b></p>``, Docutils'
``<p class="admonition-title">Note</p>``, ``<div class="card-title">``. Read alone, a sentence
of the box ("Only the release managers may then change packages.") lacks what the box is
about, as a section's sentence lacks its heading.

A *title line* is a label line (:func:`~spire_core.context.blocks.label_line`: short, inline,
fully emphasised or not ending as a sentence ends) whose ``class`` has a token containing
``title``. Its *box* is the nearest block around it, climbing at most :data:`MAX_WRAPPERS`
wrapper ``div`` of which it is the first child (at most
:data:`~spire_core.context.blocks.MAX_INVISIBLE` elements that show nothing before it are passed
over), that holds something after the line: an ``aside``, ``blockquote``, ``div``,
``figure`` or ``section``. The title labels everything else in the box. Decided by markup and
shape alone, with no word list: a title line that is not first in its block, a long or
prose-like line, or a block without a title class (a bold first paragraph) titles nothing; a
heading there is the headers rule's.

Inside nested boxes each box's title counts, down to :data:`MAX_BOX_DEPTH` deep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spire_core.context.blocks import MAX_INVISIBLE, invisible, label_line
from spire_core.context.headers import unlabelled_headings
from spire_core.context.policy import PageRule, Table
from spire_core.document.tree import Memo

if TYPE_CHECKING:
    from spire_core.document.tree import Document

#: Blocks a title line may title.
BOX_TAGS = frozenset({"aside", "blockquote", "div", "figure", "section"})
#: A title line may sit inside at most this many wrapper ``div`` at the top of its box.
MAX_WRAPPERS = 4
#: Content inside more than this many titled boxes gets the titles of the outer ones only.
MAX_BOX_DEPTH = 16


def title_line(doc: Document, node: int) -> bool:
    """Whether the block at ``node`` is a title line (module docstring)."""
    classes = doc.attrs[node].get("class") or ""
    return any("title" in c.lower() for c in classes.split()) and label_line(doc, node)


def box_of(doc: Document, line: int) -> tuple[int, int] | None:
    """The box the title line ``line`` titles and the box's child that holds the line, or None."""
    node = line
    for _ in range(MAX_WRAPPERS + 1):
        parent = doc.parent[node]
        if parent < 0 or doc.tag[parent] not in BOX_TAGS:
            return None
        siblings = doc.children[parent]
        k = doc.pos[node]
        if k > MAX_INVISIBLE or not all(invisible(doc, siblings[j]) for j in range(k)):
            return None  # something shown before the line: not the box's title
        if any(doc.tag[siblings[j]] is not None or doc.text[siblings[j]].strip() for j in range(k + 1, len(siblings))):
            return parent, node
        if doc.tag[parent] != "div":
            return None
        node = parent
    return None


def _titles(doc: Document) -> Table:
    """Every node's box titles, nearest first (one pass, parents first)."""
    boxes: dict[int, tuple[int, int]] = {}
    for i, tag in enumerate(doc.tag):
        if tag in ("p", "div") and title_line(doc, i):
            found = box_of(doc, i)
            if found is not None and found[0] not in boxes:
                boxes[found[0]] = (i, found[1])
    out: list[tuple[int, ...]] = []
    depth: list[int] = []
    for i, parent in enumerate(doc.parent):
        around = out[parent] if parent >= 0 else ()
        d = depth[parent] if parent >= 0 else 0
        box = boxes.get(parent)
        if box is not None and i != box[1] and d < MAX_BOX_DEPTH:
            around = (box[0], *around)
            d += 1
        depth.append(d)
        out.append(around)
    return out


_TABLE: Memo[Table] = Memo(lambda doc: unlabelled_headings(doc, _titles(doc)))


class BoxTitleRule(PageRule):
    """A box (sidebar, note, example) whose first line is a title line: the title labels the rest of the box."""

    name = "box-titles"
    per_page = _TABLE
