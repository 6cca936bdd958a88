"""What the idiom rules share: which block is a *label line*, and where a block's previous sibling is.

A label line is how pages write a title or a term without the element made for it (a
``<caption>``, a ``<dt>``, a heading): a short paragraph on its own. It is decided from the
block alone, by shape, with no word list (the page's language plays no part):

* a ``p`` or ``div`` holding inline content only (no nested block), with text;
* at most :data:`LABEL_LINE_CHARS` characters of text in at most :data:`LABEL_LINE_NODES` nodes;
* and either *fully emphasised* (every piece of its text inside ``strong``/``b``/``em``/``i``/
  ``code``/... within the block: "**Table 3. Exit codes.**", "``--verbose``") or not ending as a
  sentence ends (no final ``.``, ``!``, ``?`` or their CJK forms: "Supported formats",
  "Exit codes:").

So a short sentence of prose ("See the table below.") is no label line, nor is a paragraph that
opens with a bold word and goes on in prose ("**Warning:** this deletes the data."), nor a
long bold paragraph.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from spire_core.document.tree import INLINE_TAGS, SENTINELS

if TYPE_CHECKING:
    from spire_core.document.tree import Document

#: A label line holds at most this many characters of text (a title or term, not prose).
LABEL_LINE_CHARS = 160
#: ... in at most this many nodes (which keeps the check bounded on any page).
LABEL_LINE_NODES = 64
#: Inline elements whose text reads as emphasised (bold, italic, code, keyboard, term, ...).
EMPHASIS_TAGS = frozenset({"strong", "b", "em", "i", "code", "kbd", "samp", "var", "tt", "dfn", "cite", "u", "mark"})
#: Blocks a label line may be.
LINE_TAGS = frozenset({"p", "div"})
#: How a sentence ends, in the scripts Punkt and the pages know (Latin, Greek, CJK, Devanagari, Arabic).
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f\u0964\u06d4\u037e][\"'\u201d\u2019)\]\s]*$")


def label_line(doc: Document, node: int) -> bool:
    """Whether the block at ``node`` is a label line (module docstring)."""
    tags, texts = doc.tag, doc.text
    if tags[node] not in LINE_TAGS:
        return False
    end = doc.end[node]
    if end - node > LABEL_LINE_NODES:
        return False
    chars, emphasised = 0, True
    pieces: list[str] = []
    for i in range(node + 1, end):
        tag = tags[i]
        if tag is None:
            text = texts[i]
            if not text.strip():
                continue
            chars += len(text)
            if chars > LABEL_LINE_CHARS:
                return False
            pieces.append(text)
            if emphasised:
                emphasised = _under_emphasis(doc, i, node)
        elif tag not in INLINE_TAGS and tag not in SENTINELS:
            return False  # a block inside: not a line
    if not pieces:
        return False
    return emphasised or not ends_sentence("".join(pieces))


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends as a sentence ends (``.``, ``!``, ``?``, their CJK forms, maybe a closing quote)."""
    return _SENTENCE_END.search(text.rstrip()) is not None


def _under_emphasis(doc: Document, text_node: int, block: int) -> bool:
    j = doc.parent[text_node]
    while j != block and j >= 0:
        if doc.tag[j] in EMPHASIS_TAGS:
            return True
        j = doc.parent[j]
    return False


def previous_block(doc: Document, node: int, *, climb: int = 0) -> int:
    """The element just before ``node`` among its siblings (-1: none, or a text node there).

    With ``climb``, a node that is the first child of a wrapper ``div`` (at most ``climb``
    levels) is looked at from its wrapper: ``<p>Title</p><div class="table-wrap"><table>``.
    """
    for _ in range(climb + 1):
        parent = doc.parent[node]
        if parent < 0:
            return -1
        k = doc.pos[node]
        if k > 0:
            prev = doc.children[parent][k - 1]
            return prev if doc.tag[prev] is not None else -1
        if doc.tag[parent] != "div":
            return -1
        node = parent
    return -1
