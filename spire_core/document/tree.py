"""The document model: an HTML page as a tree addressed by paths, stored flat in pre-order.

A :data:`Path` is the tuple of child positions from the root element (``()``) to a node.
Nodes are held in document (pre-)order with parent index and subtree end, so that
descendants are an index range and document order is integer order. Indices are an
implementation detail valid for one :class:`Document`; paths are the public identity.

Documents are built by :mod:`spire_core.reading.parse` (which documents cleaning and whitespace)
from a tree of :class:`Element`. Structures derived from a document (heading chains, table
grids, sentence index, ...) are kept on it through typed :class:`Memo` slots.
"""

from __future__ import annotations

import gc
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar

from spire_core.errors import UnknownPathError

Path = tuple[int, ...]

SENTENCE_BEG = "sentence-beg"
SENTENCE_END = "sentence-end"
SENTINELS = frozenset({SENTENCE_BEG, SENTENCE_END})

#: MathML presentation elements: they render inline inside ``<math>``, as in browsers.
MATHML_INLINE = frozenset(
    [
        "mi", "mn", "mo", "ms", "mtext", "mspace", "mrow", "msub", "msup", "msubsup", "mfrac", "msqrt",
        "mroot", "mstyle", "merror", "mpadded", "mphantom", "mfenced", "menclose", "munder", "mover",
        "munderover", "mmultiscripts", "mprescripts", "semantics",
    ]
)  # fmt: skip
INLINE_TAGS = (
    frozenset(
        [
            "a",
            "abbr",
            "acronym",
            "b",
            "bdi",
            "bdo",
            "big",
            "br",
            "cite",
            "code",
            "data",
            "del",
            "dfn",
            "em",
            "font",
            "i",
            "img",
            "input",
            "ins",
            "kbd",
            "label",
            "mark",
            "q",
            "s",
            "samp",
            "small",
            "span",
            "strike",
            "strong",
            "sub",
            "sup",
            "time",
            "tt",
            "u",
            "var",
            "wbr",
            "math",
        ]
    )
    | MATHML_INLINE
    | SENTINELS
)
HEADING_LEVELS = {f"h{n}": n for n in range(1, 7)}

_WS = re.compile(r"\s+")
#: How a sentence ends, in the scripts Punkt and the pages know (Latin, Greek, CJK, Devanagari, Arabic).
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f\u0964\u06d4\u037e][\"'\u201d\u2019)\]\s]*$")


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends as a sentence ends (``.``, ``!``, ``?``, their CJK forms, maybe a closing quote)."""
    return _SENTENCE_END.search(text.rstrip()) is not None


def block_of(doc: Document, node: int) -> int:
    """The nearest element above ``node`` that is not inline (-1: none): the block it stands in."""
    j = doc.parent[node]
    while j >= 0 and doc.tag[j] in INLINE_TAGS:
        j = doc.parent[j]
    return j


_EMPTY: Mapping[str, str] = {}
#: The nodes :meth:`Document.subtree_text` reads: text nodes, and ``<br>`` as a space.
_TEXTUAL = frozenset([None, "br"])


@dataclass(frozen=True)
class Node:
    """One node of a document: an element (``tag`` set) or a text node (``tag is None``)."""

    path: Path
    tag: str | None
    attrs: Mapping[str, str]
    text: str
    children: tuple[Path, ...]

    @property
    def is_text(self) -> bool:
        return self.tag is None


class Element:
    """Mutable element of a build tree (what :class:`Document` is made from): children are ``Element`` or ``str``."""

    __slots__ = ("attrs", "children", "tag")

    def __init__(self, tag: str, attrs: Mapping[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[Element | str] = []


class Document:
    """A parsed page. Build one with :func:`spire_core.parse_html`."""

    def __init__(
        self,
        root: Element | None,
        *,
        doc_id: str | None,
        encoding: str,
        replaced: int,
        warnings: Iterable[str],
        language: str | None = None,
    ) -> None:
        self.doc_id = doc_id
        #: the language the page declares (``<html lang>``, Content-Language): an ISO 639-1
        #: code in lower case, None when undeclared (:mod:`spire_core.reading.language`)
        self.language = language
        #: where the page sends its reader at once (``<meta http-equiv="refresh" content="0;
        #: url=...">``), as written; None when it does not (set by the parser)
        self.redirect: str | None = None
        #: how the bytes were decoded ("str" when text was given)
        self.encoding = encoding
        #: number of invalid byte sequences replaced by U+FFFD while decoding
        self.decode_errors = replaced
        #: everything noteworthy that happened while reading the page
        self.warnings: list[str] = list(warnings)
        self.tag: list[str | None] = []
        self.text: list[str] = []
        self.attrs: list[Mapping[str, str]] = []
        self.parent: list[int] = []
        #: each node's child indices: a tuple, ``()`` for a leaf (tuples of ints are not tracked by
        #: the garbage collector, a list per node was: half of a query process's objects)
        self.children: list[tuple[int, ...]] = []
        self.pos: list[int] = []
        #: values of the :class:`Memo` slots computed for this document (see :class:`Memo`)
        self.memos: dict[Memo[Any], Any] = {}
        self._paths: dict[int, Path] = {}
        #: one past the last index of each node's subtree
        self.end: list[int] = []
        if root is not None:
            self._flatten(root)

    def _flatten(self, root: Element) -> None:
        """Fill the node arrays from the build tree, in pre-order.

        Iterative: the stack holds, for each open element, its index, the list its children's
        indices are gathered in and an iterator over its remaining children. Text children are
        stored in the inner loop; an element child with children of its own is descended into,
        and its subtree end and children tuple are set once its iterator is exhausted.
        """
        tags, texts, attrs, parents, positions, children, ends = (
            self.tag,
            self.text,
            self.attrs,
            self.parent,
            self.pos,
            self.children,
            self.end,
        )
        tags.append(root.tag)
        texts.append("")
        attrs.append(root.attrs)
        parents.append(-1)
        positions.append(0)
        children.append(())
        ends.append(1)
        stack: list[tuple[int, list[int], Iterator[tuple[int, Element | str]]]] = [(0, [], enumerate(root.children))]
        while stack:
            parent, siblings, kids = stack[-1]
            for k, node in kids:
                i = len(tags)
                siblings.append(i)
                parents.append(parent)
                positions.append(k)
                children.append(())
                ends.append(i + 1)
                if isinstance(node, str):
                    tags.append(None)
                    texts.append(node)
                    attrs.append(_EMPTY)
                else:
                    tags.append(node.tag)
                    texts.append("")
                    attrs.append(node.attrs)
                    if node.children:
                        stack.append((i, [], enumerate(node.children)))
                        break
            else:
                stack.pop()
                ends[parent] = len(tags)
                children[parent] = tuple(siblings)

    # -- paths and indices -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.tag)

    def index(self, path: Path) -> int:
        """Index of the node at ``path``; raises :class:`UnknownPathError`."""
        if not self.children:  # an empty document (e.g. pruned without its root) has no root either
            raise UnknownPathError(tuple(path), self.doc_id)
        deep = len(path) > 64 and isinstance(path, tuple)
        if deep:  # a deep page's paths are walked again and again: each walk is remembered
            known: dict[Path, int] = getattr(self, "_deep_index", None) or {}
            self._deep_index = known
            got = known.get(path)
            if got is not None:
                return got
        i = 0
        try:
            for k in path:
                if k < 0:
                    raise IndexError(k)
                i = self.children[i][k]
        except (IndexError, TypeError):
            raise UnknownPathError(tuple(path), self.doc_id) from None
        if deep:
            known[path] = i
        return i

    def path(self, index: int) -> Path:
        """Path of the node at ``index`` (paths up to depth 64 are memoised: results are paths again and again)."""
        memo = self._paths
        got = memo.get(index)
        if got is not None:
            return got
        parent = self.parent[index]
        if parent < 0:
            return ()
        base = memo.get(parent)
        if base is None:
            last = getattr(self, "_deep_parent", None)  # the last deep parent: its children come in runs
            if last is not None and last[0] == parent:
                base = last[1]
            else:
                up: list[int] = []
                i = parent
                while i > 0:
                    up.append(self.pos[i])
                    i = self.parent[i]
                base = tuple(reversed(up))
                if len(base) <= 64:
                    memo[parent] = base
                else:
                    self._deep_parent = (parent, base)
        out = base + (self.pos[index],)  # noqa: RUF005 (concatenation: twice as fast as unpacking)
        if len(out) <= 64:
            memo[index] = out
        return out

    def indices(self, paths: Iterable[Path]) -> set[int]:
        """Indices of ``paths``; raises :class:`UnknownPathError` for a path not in the document."""
        return {self.index(tuple(p)) for p in paths}

    def to_paths(self, indices: Iterable[int]) -> frozenset[Path]:
        return frozenset(map(self.path, indices))

    def get(self, path: Path) -> Node:
        """The node at ``path``."""
        i = self.index(tuple(path))
        return Node(
            path=tuple(path),
            tag=self.tag[i],
            attrs=self.attrs[i],
            text=self.text[i],
            children=tuple((*tuple(path), k) for k in range(len(self.children[i]))),
        )

    def paths(self) -> Iterator[Path]:
        """Every path of the document, in document order."""
        open_: list[tuple[int, Path]] = []  # (subtree end, path) of the ancestors of i
        for i in range(len(self.tag)):
            while open_ and open_[-1][0] <= i:
                open_.pop()
            path = open_[-1][1] + (self.pos[i],) if open_ else ()
            yield path
            open_.append((self.end[i], path))

    def ancestors(self, index: int) -> Iterator[int]:
        """Proper ancestors of ``index``, nearest first."""
        index = self.parent[index]
        while index >= 0:
            yield index
            index = self.parent[index]

    def subtree_text(self, index: int) -> str:
        """The raw text of the subtree at ``index`` (text nodes concatenated; a ``<br>`` is a space,
        as in sentences and renderings: the words on both sides of it are never glued)."""
        tags, texts = self.tag, self.text
        return "".join(
            texts[j] if tags[j] is None else " " for j in range(index, self.end[index]) if tags[j] in _TEXTUAL
        )

    # -- document-wide facts -----------------------------------------------------------
    @cached_property
    def title_index(self) -> int | None:
        """Index of the title node: ``<title>``, else the first ``<h1>`` (``None`` if neither has text).

        When the page's first heading repeats the ``<title>`` (equal to it, or its start
        before a separator, as "json — JSON encoder and decoder" in "json — JSON encoder and
        decoder — Python 3.11 documentation"), that heading is the title node instead, so the
        title is not shown twice next to the active headings.
        """
        title = first_heading = first_h1 = None
        for i, tag in enumerate(self.tag):
            if tag not in HEADING_LEVELS and tag != "title":
                continue
            if not self.subtree_text(i).strip():
                continue
            if tag == "title":
                title = i if title is None else title
            else:
                first_heading = i if first_heading is None else first_heading
                first_h1 = i if first_h1 is None and tag == "h1" else first_h1
            if title is not None and first_heading is not None and first_h1 is not None:
                break
        if title is None:
            return first_h1
        if first_heading is not None:
            full = _WS.sub(" ", self.subtree_text(title)).strip().casefold()
            head = _WS.sub(" ", self.subtree_text(first_heading)).strip().casefold()
            if full == head or (full.startswith(head) and not full[len(head)].isalnum()):
                return first_heading
        return title

    @property
    def title(self) -> str | None:
        """The document title as text (``<title>``, else the first ``<h1>``), or ``None``."""
        i = self.title_index
        return None if i is None else _WS.sub(" ", self.subtree_text(i)).strip()

    @property
    def title_path(self) -> Path | None:
        i = self.title_index
        return None if i is None else self.path(i)

    def has_content(self) -> bool:
        """Whether any text node outside ``<head>`` has visible text."""
        body = [i for i in self.children[0] if self.tag[i] != "head"] if self.tag else []
        return any(self.subtree_text(i).strip() for i in body)


T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[T]):
    """A typed per-document slot for one derived structure.

    Declared once at module level beside the code that computes it
    (``HEADINGS = Memo(Headings)``); ``HEADINGS(doc)`` computes the value on first use and
    keeps it in ``doc.memos``, so it lives exactly as long as the document.
    """

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[Document], T]) -> None:
        self.compute = compute

    def __call__(self, doc: Document) -> T:
        memos = doc.memos
        try:
            value: T = memos[self]
        except KeyError:  # (threads computing it at once all keep the first value stored)
            value = memos.setdefault(self, self.compute(doc))
        return value


class LRU(Generic[K, V]):
    """A bounded mapping that forgets its least recently used entry beyond ``maxsize``.

    Safe to share between threads (async adapters aggregate on a thread pool, over the same
    pages) without a lock: each step is one atomic ``OrderedDict`` call, and a step another
    thread made moot (the key evicted, the mapping emptied) is skipped. While threads insert
    at once, it may briefly hold one entry more per thread.
    """

    def __init__(self, maxsize: int) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: K) -> V | None:
        """The value at ``key`` (now the most recently used), or ``None``."""
        data = self._data
        try:
            value = data[key]
            data.move_to_end(key)
        except KeyError:  # absent, or evicted by another thread since it was read
            return None
        return value

    def __setitem__(self, key: K, value: V) -> None:
        data = self._data
        data[key] = value
        try:
            data.move_to_end(key)
            while len(data) > self.maxsize:
                data.popitem(last=False)
        except KeyError:  # evicted, or the mapping emptied, by another thread meanwhile
            pass


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building (big pages: it turns linear work quadratic)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
