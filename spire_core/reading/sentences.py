"""Sentence seeds: Punkt segmentation recorded in the tree by zero-width sentinels.

Each *run* of inline content (the text of a block-level leaf, or of a stretch of inline
children beside nested blocks, such as a list item's label before its sub-list) is
segmented with NLTK Punkt. The character spans are mapped back onto the text nodes: a
``<sentence-beg/>`` and a ``<sentence-end/>`` element are inserted at each boundary,
splitting a text node where a boundary falls inside it. Nothing is reparented; a sentinel
at the very start (end) of an inline element is placed before (after) that element, so a
sentence that begins with a link keeps the link whole. Headings, ``pre``, ``dt``, ``th``
and captions are one sentence each (never welded to the text below them).

A sentence's path set (``SentPaths``) is its two sentinels plus every node whose whole
subtree lies between them. :func:`sentence_index` is the one index of sentence starts that
local context, the lists rule and the evidence views share.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from spire_core.document.tree import (
    HEADING_LEVELS,
    INLINE_TAGS,
    SENTENCE_BEG,
    SENTENCE_END,
    SENTINELS,
    Document,
    Element,
    Memo,
    Path,
    gc_paused,
)
from spire_core.reading.punkt import sentence_spans

#: Blocks whose text is one unit: never split into several sentences.
UNSPLIT_TAGS = frozenset({"pre", "dt", "th", "caption", "title"}) | frozenset(HEADING_LEVELS)

_WS = re.compile(r"\s+")
_BREAKS = {"br": " "}

#: A splitter maps a text to the character spans of its sentences.
Splitter = Callable[[str], list[tuple[int, int]]]


@dataclass(frozen=True)
class Sentence:
    """One sentence seed: the path of its begin sentinel, its path set and its text."""

    begin: Path
    paths: frozenset[Path]
    text: str
    #: node indices [first, last] (the two sentinels) in the owning Document
    span: tuple[int, int]


def sentences(doc: Document) -> list[Sentence]:
    """The sentence seeds of ``doc`` in document order (empty for ``segment=False`` documents)."""
    return _SENTENCES(doc)


def sentence_indices(doc: Document, beg: int, end: int) -> list[int]:
    """Indices of ``SentPaths`` for the sentence whose sentinels are at ``beg`` and ``end``."""
    return [beg] + [i for i in range(beg + 1, end + 1) if doc.end[i] <= end + 1]


def _collect(doc: Document) -> list[Sentence]:
    with gc_paused():
        return _collect_sentences(doc)


def _collect_sentences(doc: Document) -> list[Sentence]:
    out: list[Sentence] = []
    beg = -1
    for i, tag in enumerate(doc.tag):
        if tag == SENTENCE_BEG:
            beg = i
        elif tag == SENTENCE_END and beg >= 0:
            idx = sentence_indices(doc, beg, i)
            raw = "".join(doc.text[j] if doc.tag[j] is None else _BREAKS.get(doc.tag[j] or "", "") for j in idx)
            text = _WS.sub(" ", raw).strip()
            out.append(Sentence(doc.path(beg), doc.to_paths(idx), text, (beg, i)))
            beg = -1
    return out


_SENTENCES: Memo[list[Sentence]] = Memo(_collect)


@dataclass(frozen=True)
class SentenceIndex:
    """The citable units of a document in order, with their first node indices sorted.

    The units are the sentences (``by_sentence``), or each non-blank text node when the
    page has no sentence sentinels (``segment=False``).
    """

    #: first node index of each unit, ascending
    begins: list[int]
    #: node indices of each unit (a sentence's ``SentPaths``)
    nodes: list[frozenset[int]]
    #: whether the units are sentences (else text nodes)
    by_sentence: bool

    def __len__(self) -> int:
        return len(self.begins)

    def before(self, node: int) -> int:
        """Position of the last unit starting at or before ``node`` (-1 if none)."""
        return bisect_right(self.begins, node) - 1

    def holding(self, node: int) -> int | None:
        """Position of the unit whose nodes include ``node``, or ``None``."""
        k = self.before(node)
        return k if k >= 0 and node in self.nodes[k] else None


def sentence_index(doc: Document) -> SentenceIndex:
    """The (memoised) :class:`SentenceIndex` of ``doc``."""
    return _INDEX(doc)


def _index(doc: Document) -> SentenceIndex:
    seeds = sentences(doc)
    if seeds:
        return SentenceIndex(
            [s.span[0] for s in seeds], [frozenset(sentence_indices(doc, *s.span)) for s in seeds], by_sentence=True
        )
    texts = [i for i, t in enumerate(doc.tag) if t is None and doc.text[i].strip()]
    return SentenceIndex(texts, [frozenset([i]) for i in texts], by_sentence=False)


_INDEX: Memo[SentenceIndex] = Memo(_index)


def enclosing_block(doc: Document, node: int) -> int:
    """The nearest block element holding ``node`` (itself when it is one): not inline, not a
    sentinel, not the root; -1 when there is none."""
    i = node
    while i > 0:
        tag = doc.tag[i]
        if tag is not None and tag not in INLINE_TAGS and tag not in SENTINELS:
            return i
        i = doc.parent[i]
    return -1


def previous_sentences(doc: Document, seed: frozenset[int]) -> frozenset[int]:
    """For each sentence that ``seed`` holds from its begin sentinel, the nodes of the sentence
    before it in the same block (paragraph, list item, cell, definition, ...), when ``seed``
    lacks that sentence's begin: the sentence a reader needs to know what "This", "It" or "The
    default" is about. Empty on a page without sentences."""
    units = sentence_index(doc)
    if not units.by_sentence:
        return frozenset()
    out: set[int] = set()
    for i in seed:
        if doc.tag[i] != SENTENCE_BEG:
            continue
        k = units.before(i)
        if k <= 0 or units.begins[k] != i or units.begins[k - 1] in seed:
            continue
        block = enclosing_block(doc, doc.parent[i])
        if block >= 0 and enclosing_block(doc, doc.parent[units.begins[k - 1]]) == block:
            out |= units.nodes[k - 1]
    return frozenset(out)


# -- segmentation of the build tree ----------------------------------------------------
def segment(root: Element, split: Splitter = sentence_spans) -> None:
    """Insert sentence sentinels into the build tree rooted at ``root`` (in place, iterative)."""
    blocks: list[Element] = [root]
    while blocks:
        block = blocks.pop()
        if block.tag == "head":
            continue
        kids = block.children
        runs: list[tuple[int, int]] = []  # [start, stop) of each stretch of inline children
        start = -1
        for k, child in enumerate(kids):
            if isinstance(child, str) or child.tag in INLINE_TAGS:
                if start < 0:
                    start = k
            else:
                if start >= 0:
                    runs.append((start, k))
                    start = -1
                blocks.append(child)
        if start >= 0:
            runs.append((start, len(kids)))
        # process runs from the last so that earlier child positions stay valid
        for start, stop in reversed(runs):
            _segment_run(block, start, stop, split, blocks)


# A leaf is addressed by (container, position, address of the container): the address of
# the container is ``None`` for the block itself, else that of the inline element it is.
_Leaf = tuple[Element, int, "_Leaf | None"]


def _segment_run(block: Element, start: int, stop: int, split: Splitter, blocks: list[Element]) -> None:
    """Segment the inline children ``start:stop`` of ``block``; blocks nested in them go to ``blocks``."""
    if stop - start == 1:  # the commonest run: one text child
        node = block.children[start]
        if isinstance(node, str):
            if node and not node.isspace() and not _split_text_child(block, start, node, split):
                _segment_leaves(block, [(block, start, None)], [node], split)
            return
    # the leaves (and their texts) of each stretch of text between blocks nested in inline markup
    groups: list[tuple[list[_Leaf], list[str]]] = [([], [])]
    leaves, texts = groups[0]
    # open containers: (the container, its remaining (position, child) pairs, its address)
    walk: list[tuple[Element, Iterator[tuple[int, Element | str]], _Leaf | None]] = [
        (block, enumerate(block.children[start:stop], start), None)
    ]
    while walk:
        container, kids, up = walk[-1]
        for k, node in kids:
            if isinstance(node, str):
                leaves.append((container, k, up))
                texts.append(node)
            elif node.tag == "br":  # a <br> separates words (and sentences)
                leaves.append((container, k, up))
                texts.append("\n")  # a <br> reads as a line break
            elif node.tag in INLINE_TAGS:
                if node.children:
                    walk.append((node, enumerate(node.children), (container, k, up)))
                    break
            else:
                blocks.append(node)  # a block inside inline markup is segmented on its own
                leaves, texts = [], []  # and ends the text before it: sentences never nest
                groups.append((leaves, texts))
        else:
            walk.pop()
    for leaves, texts in reversed(groups):  # last first, so that earlier leaves stay valid
        if leaves:
            _segment_leaves(block, leaves, texts, split)


def _split_text_child(block: Element, k: int, text: str, split: Splitter) -> bool:
    """Segment ``text``, the child at ``k`` of ``block`` and a run by itself, in one splice.

    Done when the boundaries are strictly increasing offsets within the text (what
    :func:`_segment_leaves` then does, one :func:`_insert` at a time); otherwise nothing is
    changed and False is returned.
    """
    if block.tag in UNSPLIT_TAGS:
        spans = [(len(text) - len(text.lstrip()), len(text.rstrip()))]
    else:
        spans = split(text)
    pieces: list[Element | str] = []
    at = 0  # text before ``at`` is placed
    for b, e in spans:
        if not at <= b < e <= len(text) or (b == at and pieces):
            return False
        if b > at:
            pieces.append(text[at:b])
        pieces.append(Element(SENTENCE_BEG, {}))
        pieces.append(text[b:e])
        pieces.append(Element(SENTENCE_END, {}))
        at = e
    if at < len(text):
        pieces.append(text[at:])
    block.children[k : k + 1] = pieces
    return True


def _segment_leaves(block: Element, leaves: list[_Leaf], texts: list[str], split: Splitter) -> None:
    text = texts[0] if len(texts) == 1 else "".join(texts)
    if not text or text.isspace():
        return
    if block.tag in UNSPLIT_TAGS:
        spans = [(len(text) - len(text.lstrip()), len(text.rstrip()))]
    else:
        spans = split(text)
    events = [(b, 1) for b, _ in spans] + [(e, 0) for _, e in spans]
    events.sort(reverse=True)  # last boundary first
    if len(leaves) == 1:  # every offset is in the one leaf
        leaf = leaves[0]
        for off, is_beg in events:
            _insert(leaf, off, SENTENCE_BEG if is_beg else SENTENCE_END)
        return
    starts: list[int] = []
    offset = 0
    for t in texts:
        starts.append(offset)
        offset += len(t)
    for off, is_beg in events:
        if is_beg:
            j = bisect_right(starts, off) - 1
        else:
            j = bisect_left(starts, off) - 1
        _insert(leaves[j], off - starts[j], SENTENCE_BEG if is_beg else SENTENCE_END)


def _insert(leaf: _Leaf, offset: int, tag: str) -> None:
    """Insert a ``tag`` sentinel at ``offset`` in ``leaf``: split there, else beside it, out of inline edges."""
    container, pos, up = leaf
    kids = container.children
    node = kids[pos]
    s = node if isinstance(node, str) else "\n"  # a <br> reads as a line break
    sentinel = Element(tag, {})
    if 0 < offset < len(s):
        kids[pos : pos + 1] = [s[:offset], sentinel, s[offset:]]
        return
    at_start = offset == 0
    if not at_start:
        pos += 1
    # hoist out of inline elements whose edge the boundary sits on
    while up is not None:
        if (at_start and pos != 0) or (not at_start and pos != len(kids)):
            break
        container, pos, up = up
        kids = container.children
        if not at_start:
            pos += 1
    kids.insert(pos, sentinel)
