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
from collections.abc import Callable
from dataclasses import dataclass

from .document import HEADING_LEVELS, INLINE_TAGS, SENTENCE_BEG, SENTENCE_END, Document, Element, Memo, Path, gc_paused
from .punkt import sentence_spans

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


# -- segmentation of the build tree ----------------------------------------------------
def segment(root: Element, split: Splitter = sentence_spans) -> None:
    """Insert sentence sentinels into the build tree rooted at ``root`` (in place, iterative)."""
    blocks: list[Element] = [root]
    while blocks:
        block = blocks.pop()
        if block.tag == "head":
            continue
        run: list[int] = []
        for k, child in enumerate(list(block.children)):
            if isinstance(child, str) or child.tag in INLINE_TAGS:
                run.append(k)
            else:
                blocks.append(child)
        # process runs from the last so that earlier child positions stay valid
        for start, stop in reversed(_runs(run)):
            _segment_run(block, start, stop, split, blocks)


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for k in positions:
        if out and out[-1][1] == k:
            out[-1] = (out[-1][0], k + 1)
        else:
            out.append((k, k + 1))
    return out


# A leaf is addressed by the chain of (container, position) from the block down.
_Chain = list[tuple[Element, int]]


def _segment_run(block: Element, start: int, stop: int, split: Splitter, blocks: list[Element]) -> None:
    groups: list[list[_Chain]] = [[]]
    stack: list[tuple[Element, int, _Chain]] = [(block, k, []) for k in range(stop - 1, start - 1, -1)]
    while stack:
        parent, k, chain = stack.pop()
        node = parent.children[k]
        here = [*chain, (parent, k)]
        if isinstance(node, str) or node.tag == "br":  # a <br> separates words (and sentences)
            groups[-1].append(here)
        elif node.tag in INLINE_TAGS:
            stack.extend((node, j, here) for j in range(len(node.children) - 1, -1, -1))
        else:
            blocks.append(node)  # a block inside inline markup is segmented on its own
            groups.append([])  # and ends the text before it: sentences never nest
    for leaves in reversed(groups):  # last first, so that earlier chains stay valid
        _segment_leaves(block, leaves, split)


def _segment_leaves(block: Element, leaves: list[_Chain], split: Splitter) -> None:
    texts = [_leaf(chain) for chain in leaves]
    text = "".join(texts)
    if not text.strip():
        return
    if block.tag in UNSPLIT_TAGS:
        spans = [(len(text) - len(text.lstrip()), len(text.rstrip()))]
    else:
        spans = split(text)
    starts: list[int] = []
    offset = 0
    for t in texts:
        starts.append(offset)
        offset += len(t)
    events = [(b, 1) for b, _ in spans] + [(e, 0) for _, e in spans]
    for off, is_beg in sorted(events, reverse=True):  # last boundary first
        if is_beg:
            j = bisect_right(starts, off) - 1
        else:
            j = bisect_left(starts, off) - 1
        _insert(leaves[j], off - starts[j], SENTENCE_BEG if is_beg else SENTENCE_END)


def _leaf(chain: _Chain) -> str:
    parent, k = chain[-1]
    node = parent.children[k]
    return node if isinstance(node, str) else "\n"  # a <br> reads as a line break


def _insert(chain: _Chain, offset: int, tag: str) -> None:
    parent, k = chain[-1]
    s = _leaf(chain)
    sentinel = Element(tag, {})
    if 0 < offset < len(s):
        parent.children[k : k + 1] = [s[:offset], sentinel, s[offset:]]
        return
    at_start = offset == 0
    depth = len(chain) - 1
    pos = k if at_start else k + 1
    # hoist out of inline elements whose edge the boundary sits on
    while depth > 0:
        container = chain[depth][0]
        if (at_start and pos != 0) or (not at_start and pos != len(container.children)):
            break
        depth -= 1
        pos = chain[depth][1] + (0 if at_start else 1)
    chain[depth][0].children.insert(pos, sentinel)
