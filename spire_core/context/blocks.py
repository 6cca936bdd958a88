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

from typing import TYPE_CHECKING

from spire_core.document.tree import INLINE_TAGS, SENTINELS, ends_sentence

if TYPE_CHECKING:
    from spire_core.document.tree import Document

#: A label line holds at most this many characters of text (a title or term, not prose).
#: Set at 9316bb1 without a recorded measurement; docs/tuned-constants.md.
LABEL_LINE_CHARS = 160
#: ... in at most this many nodes (which keeps the check bounded on any page).
LABEL_LINE_NODES = 64
#: Inline elements whose text reads as emphasised (bold, italic, code, keyboard, term, ...).
EMPHASIS_TAGS = frozenset({"strong", "b", "em", "i", "code", "kbd", "samp", "var", "tt", "dfn", "cite", "u", "mark"})
#: Blocks a label line may be.
LINE_TAGS = frozenset({"p", "div"})
#: At most this many invisible elements are passed over between a block and the one before it.
MAX_INVISIBLE = 32
#: An invisible element has at most this many nodes.
MAX_INVISIBLE_NODES = 8
#: Inline elements that show something without text.
SHOWN_EMPTY = frozenset(
    ["img", "input", "svg", "math", "video", "audio", "canvas", "iframe", "object", "embed", "select", "textarea"]
)
#: A paragraph is found inside at most this many wrapper ``div`` (:func:`paragraph_in`).
MAX_WRAPPER_LEVELS = 2
#: A ``div`` read as a paragraph holds at most this many nodes.
MAX_PARAGRAPH_NODES = 512


def label_line(doc: Document, node: int) -> bool:
    """Whether the block at ``node`` is a label line (module docstring)."""
    if doc.tag[node] not in LINE_TAGS:
        return False
    return label_run(doc, node + 1, doc.end[node], node)


def label_run(doc: Document, start: int, end: int, block: int) -> bool:
    """Whether the nodes ``start`` to ``end`` (whole subtrees, inside ``block``) read as a label
    line: inline, with text, short, fully emphasised or not ending as a sentence ends."""
    tags, texts = doc.tag, doc.text
    if end - start > LABEL_LINE_NODES:
        return False
    chars, emphasised = 0, True
    pieces: list[str] = []
    for i in range(start, end):
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
                emphasised = _under_emphasis(doc, i, block)
        elif tag not in INLINE_TAGS and tag not in SENTINELS:
            return False  # a block inside: not a line
    if not pieces:
        return False
    return emphasised or not ends_sentence("".join(pieces))


def _under_emphasis(doc: Document, text_node: int, block: int) -> bool:
    j = doc.parent[text_node]
    while j != block and j >= 0:
        if doc.tag[j] in EMPHASIS_TAGS:
            return True
        j = doc.parent[j]
    return False


def previous_block(doc: Document, node: int, *, climb: int = 0) -> int:
    """The element just before ``node`` among its siblings (-1: none, or a text node there),
    passing over elements that show nothing (:func:`invisible`: the empty anchors and index
    terms generators put between a paragraph and what it announces).

    With ``climb``, a node that is the first child of a wrapper ``div`` (at most ``climb``
    levels; invisible elements before it do not count) is looked at from its wrapper:
    ``<p>Title</p><div class="table-wrap"><table>``.
    """
    for _ in range(climb + 1):
        parent = doc.parent[node]
        if parent < 0:
            return -1
        siblings = doc.children[parent]
        k = doc.pos[node]
        skipped = 0
        while k > 0 and skipped < MAX_INVISIBLE and invisible(doc, siblings[k - 1]):
            k -= 1
            skipped += 1
        if k > 0:
            prev = siblings[k - 1]
            return prev if doc.tag[prev] is not None else -1
        if doc.tag[parent] != "div":
            return -1
        node = parent
    return -1


def invisible(doc: Document, node: int) -> bool:
    """Whether the element at ``node`` shows nothing: an inline element (an anchor, a ``span``)
    of at most :data:`MAX_INVISIBLE_NODES` nodes holding no text and no image or control."""
    tag = doc.tag[node]
    if tag is None or tag not in INLINE_TAGS or tag in SHOWN_EMPTY or doc.end[node] - node > MAX_INVISIBLE_NODES:
        return False
    tags, texts = doc.tag, doc.text
    shown = (j for j in range(node, doc.end[node]) if tags[j] in SHOWN_EMPTY or (tags[j] is None and texts[j].strip()))
    return next(shown, None) is None


def paragraph_in(doc: Document, node: int) -> int:
    """The paragraph the block at ``node`` is (:func:`paragraph`) or wraps: a ``div`` holding one
    element and no text, at most :data:`MAX_WRAPPER_LEVELS` deep (Asciidoctor's
    ``<div class="paragraph"><p>``); -1 when it is none."""
    for _ in range(MAX_WRAPPER_LEVELS + 1):
        if paragraph(doc, node):
            return node
        if doc.tag[node] != "div":
            return -1
        inner = element_children(doc, node, 3)
        if inner is None or len(inner) != 1:
            return -1
        node = inner[0]
    return -1


def element_children(doc: Document, node: int, most: int) -> list[int] | None:
    """The element children of ``node`` when it has at most ``most`` children and the text
    between them is blank (None otherwise): a wrapper or a row of cells, nothing loose in it."""
    kids = doc.children[node]
    if len(kids) > most or any(doc.tag[c] is None and doc.text[c].strip() for c in kids):
        return None
    return [c for c in kids if doc.tag[c] is not None]


def paragraph(doc: Document, node: int) -> bool:
    """Whether the block at ``node`` is a paragraph: a ``p``, or a ``div`` holding inline content
    only (how DocBook's Publican and other generators write every paragraph), of at most
    :data:`MAX_PARAGRAPH_NODES` nodes."""
    tag = doc.tag[node]
    if tag == "p":
        return True
    if tag != "div" or doc.end[node] - node > MAX_PARAGRAPH_NODES:
        return False
    tags = doc.tag
    inside = range(node + 1, doc.end[node])
    return any(tags[j] is None for j in inside) and all(tags[j] is None or tags[j] in INLINE_TAGS for j in inside)
