"""The document model: an HTML page as a tree addressed by paths, stored flat in pre-order.

A :data:`Path` is the tuple of child positions from the root element (``()``) to a node.
Nodes are held in document (pre-)order with parent index and subtree end, so that
descendants are an index range and document order is integer order. Indices are an
implementation detail valid for one :class:`Document`; paths are the public identity.

Cleaning (decided once, here): comments, processing instructions, ``script``, ``style``,
``template``, ``noscript``, ``svg`` and embedded objects are dropped, and so are elements
hidden with the ``hidden`` attribute or ``display:none``. Of ``<head>`` only ``<title>``
stays. With ``boilerplate=True`` (the default) site chrome is dropped too: navigation,
footers, tables of contents, permalink anchors and citation markers (see
:data:`BOILERPLATE_CLASSES`). Whitespace-only text is kept only between two inline
siblings (where it separates words) and inside ``<pre>``; text is otherwise stored as
written, and rendering collapses whitespace. (Inside inline elements whitespace is kept:
``<em>class</em><span> </span>name`` separates two words.) The same bytes always give the same paths.
"""

from __future__ import annotations

import gc
import html as html_lib
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any, ClassVar

import lxml.etree as etree
import lxml.html

from .decoding import DEFAULT_MAX_BYTES, decode
from .errors import EmptyDocumentError, UnknownPathError

if TYPE_CHECKING:
    from .sentences import Sentence

Path = tuple[int, ...]

SENTENCE_BEG = "sentence-beg"
SENTENCE_END = "sentence-end"
SENTINELS = frozenset({SENTENCE_BEG, SENTENCE_END})

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
    | SENTINELS
)
HEADING_LEVELS = {f"h{n}": n for n in range(1, 7)}
#: Blocks whose text is one unit: never split into several sentences.
UNSPLIT_TAGS = frozenset({"pre", "dt", "th", "caption", "title"}) | frozenset(HEADING_LEVELS)

DROP_TAGS = frozenset(
    [
        "script",
        "style",
        "template",
        "noscript",
        "svg",
        "iframe",
        "object",
        "embed",
        "canvas",
        "meta",
        "link",
        "base",
        "audio",
        "video",
        "source",
        "track",
        "map",
        "area",
        "param",
        "dialog",
    ]
)
#: Class names of site chrome dropped when ``boilerplate=True``.
BOILERPLATE_CLASSES = frozenset(
    [
        "headerlink",
        "navbox",
        "vertical-navbox",
        "mw-editsection",
        "noprint",
        "sphinxsidebar",
        "related",
        "navheader",
        "navfooter",
        "footer",
        "toc",
        "catlinks",
        "mw-jump-link",
        "printfooter",
        "sortkey",
        "mobile-nav",
        "menu-wrapper",
        "inline-search",
        "version_switcher_placeholder",
        "language_switcher_placeholder",
        "mw-cite-backlink",
        "references",
        "reflist",
        "metadata",
        "ambox",
        "navigation-not-searchable",
    ]
)
#: Element ids of site chrome dropped when ``boilerplate=True``.
#: (Wikipedia's citation markers, ``<sup class="reference">[1]</sup>``, are dropped too.)
BOILERPLATE_IDS = frozenset(
    [
        "toc",
        "footer",
        "mw-navigation",
        "mw-panel",
        "mw-head",
        "catlinks",
        "siteSub",
        "contentSub",
        "jump-to-nav",
        "mw-page-base",
        "mw-head-base",
    ]
)
BOILERPLATE_TAGS = frozenset({"nav", "footer"})
BOILERPLATE_ROLES = frozenset({"navigation", "contentinfo", "search", "banner"})

_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.I)
_WS = re.compile(r"\s+")
_EMPTY: Mapping[str, str] = {}


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


class _E:
    """Mutable element used while building: children are ``_E`` or ``str``."""

    __slots__ = ("attrs", "children", "tag")

    def __init__(self, tag: str, attrs: Mapping[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.children: list[_E | str] = []


class Document:
    """A parsed page. Build one with :func:`parse_html`."""

    def __init__(
        self,
        root: _E | None,
        *,
        doc_id: str | None,
        encoding: str,
        replaced: int,
        warnings: Iterable[str],
    ) -> None:
        self.doc_id = doc_id
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
        self.children: list[list[int]] = []
        self.pos: list[int] = []
        #: per-document memo of derived structures (heading chains, table grids, ...)
        self.cache: dict[str, Any] = {}
        self._element_paths: dict[int, Path] = {}
        if root is not None:
            self._flatten(root)
        self.end = [0] * len(self.tag)
        for i in range(len(self.tag) - 1, -1, -1):
            kids = self.children[i]
            self.end[i] = self.end[kids[-1]] if kids else i + 1

    def _flatten(self, root: _E) -> None:
        stack: list[tuple[_E | str, int, int]] = [(root, -1, 0)]
        while stack:
            node, parent, pos = stack.pop()
            i = len(self.tag)
            self.parent.append(parent)
            self.pos.append(pos)
            self.children.append([])
            if parent >= 0:
                self.children[parent].append(i)
            if isinstance(node, str):
                self.tag.append(None)
                self.text.append(node)
                self.attrs.append(_EMPTY)
            else:
                self.tag.append(node.tag)
                self.text.append("")
                self.attrs.append(node.attrs)
                kids = node.children
                for k in range(len(kids) - 1, -1, -1):
                    stack.append((kids[k], i, k))

    # -- paths and indices -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.tag)

    def index(self, path: Path) -> int:
        """Index of the node at ``path``; raises :class:`UnknownPathError`."""
        if not self.children:  # an empty document (e.g. pruned without its root) has no root either
            raise UnknownPathError(tuple(path), self.doc_id)
        i = 0
        try:
            for k in path:
                if k < 0:
                    raise IndexError(k)
                i = self.children[i][k]
        except (IndexError, TypeError):
            raise UnknownPathError(tuple(path), self.doc_id) from None
        return i

    def path(self, index: int) -> Path:
        """Path of the node at ``index`` (element paths up to depth 64 are memoised)."""
        memo = self._element_paths
        parent = self.parent[index]
        if parent < 0:
            return ()
        base = memo.get(parent)
        if base is None:
            out: list[int] = []
            i = parent
            while i > 0:
                out.append(self.pos[i])
                i = self.parent[i]
            base = tuple(reversed(out))
            if len(base) <= 64:
                memo[parent] = base
        return (*base, self.pos[index])

    def indices(self, paths: Iterable[Path]) -> set[int]:
        """Indices of ``paths``; raises :class:`UnknownPathError` for a path not in the document."""
        return {self.index(tuple(p)) for p in paths}

    def to_paths(self, indices: Iterable[int]) -> frozenset[Path]:
        return frozenset(self.path(i) for i in indices)

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
        """The raw text of the subtree at ``index`` (text nodes concatenated)."""
        return "".join(self.text[j] for j in range(index, self.end[index]) if self.tag[j] is None)

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

    @cached_property
    def sentences(self) -> list[Sentence]:
        """The sentence seeds of the document, in document order (see :mod:`spire_core.sentences`)."""
        from .sentences import collect

        with _gc_paused():
            return collect(self)

    def has_content(self) -> bool:
        """Whether any text node outside ``<head>`` has visible text."""
        body = [i for i in self.children[0] if self.tag[i] != "head"] if self.tag else []
        return any(self.subtree_text(i).strip() for i in body)


# -- parsing ---------------------------------------------------------------------------
def parse_html(
    html: str | bytes,
    *,
    doc_id: str | None = None,
    segment: bool = True,
    boilerplate: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    require_content: bool = False,
) -> Document:
    """Parse HTML text or bytes into a :class:`Document`.

    ``segment`` inserts sentence sentinels (NLTK Punkt); with ``segment=False`` paths are
    those of the cleaned tree alone. ``boilerplate`` drops site chrome (module docstring).
    Bytes honour a BOM and ``<meta charset>``; invalid sequences are replaced and counted in
    ``Document.decode_errors``. Raises :class:`~spire_core.errors.NotHTMLError` for binary
    input and :class:`~spire_core.errors.DocumentTooLargeError` beyond ``max_bytes``; with
    ``require_content``, :class:`~spire_core.errors.EmptyDocumentError` when no visible text
    is left (an empty page is otherwise a valid, empty :class:`Document`).
    """
    decoded = decode(html, max_bytes=max_bytes)
    warnings = list(decoded.warnings)
    with _gc_paused():  # millions of live objects: cyclic GC passes only cost time here
        root = _build(_lxml_root(decoded.text, warnings), boilerplate)
        if segment:
            from .sentences import segment as segment_tree

            segment_tree(root)
        doc = Document(root, doc_id=doc_id, encoding=decoded.encoding, replaced=decoded.replaced, warnings=warnings)
    if require_content and not doc.has_content():
        raise EmptyDocumentError(f"document {doc_id!r} has no visible text")
    return doc


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building (big pages: it turns linear work quadratic)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_text(text: str, *, doc_id: str | None = None, segment: bool = True) -> Document:
    """A :class:`Document` for plain text: each blank-line separated block becomes a paragraph."""
    return parse_html(text_to_html(text), doc_id=doc_id, segment=segment)


def text_to_html(text: str) -> str:
    """The page :func:`parse_text` parses: one ``<p>`` per blank-line separated block."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return "<html><body>" + "".join(f"<p>{html_lib.escape(b)}</p>" for b in blocks) + "</body></html>"


_XML_DECL_TEXT = re.compile(r"^\s*<\?xml[^>]*\?>")
#: libxml2 drops whatever follows ``</html>``; browsers keep it in the body, and so do we.
_LATE_END_TAGS = re.compile(r"</(?:body|html)\s*>", re.I)


def _lxml_root(text: str, warnings: list[str]) -> Any:
    text = _XML_DECL_TEXT.sub("", text, count=1)  # lxml rejects str input with an encoding declaration
    text = _LATE_END_TAGS.sub("", text)
    if not text.strip():
        return lxml.html.document_fromstring("<html></html>")
    parser = lxml.html.HTMLParser(huge_tree=True, remove_comments=False)
    try:
        root = lxml.html.document_fromstring(text, parser=parser)
    except etree.ParserError:
        return lxml.html.document_fromstring("<html></html>")
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        warnings.append("nesting deeper than libxml2 allows: parsed with the deep-nesting fallback tokenizer")
        return _DeepBuilder.parse(text)
    return root


def _dropped(el: Any, tag: str, parent_tag: str, boilerplate: bool) -> bool:
    if tag in DROP_TAGS or (parent_tag == "head" and tag != "title"):
        return True
    attrs = el.attrib
    if "hidden" in attrs or _DISPLAY_NONE.search(attrs.get("style", "")) or attrs.get("aria-hidden") == "true":
        return True
    if not boilerplate:
        return False
    if tag in BOILERPLATE_TAGS or attrs.get("role") in BOILERPLATE_ROLES or attrs.get("id") in BOILERPLATE_IDS:
        return True
    classes = attrs.get("class")
    if not classes:
        return False
    names = classes.split()
    return not BOILERPLATE_CLASSES.isdisjoint(names) or (tag == "sup" and "reference" in names)


def _tag_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


def _build(lx_root: Any, boilerplate: bool) -> _E:
    """Copy the lxml tree into ``_E`` nodes, cleaning as the module docstring says. Iterative."""
    root = _E(_tag_name(lx_root.tag), dict(lx_root.attrib) or _EMPTY)
    stack: list[tuple[Any, _E, bool]] = [(lx_root, root, False)]
    elements: list[tuple[_E, bool]] = []
    while stack:
        lx, e, pre = stack.pop()
        elements.append((e, pre))
        if lx.text:
            e.children.append(lx.text)
        for child in lx:
            raw = child.tag
            if isinstance(raw, str):
                tag = _tag_name(raw)
                if not _dropped(child, tag, e.tag, boilerplate):
                    ce = _E(tag, dict(child.attrib) or _EMPTY)
                    e.children.append(ce)
                    stack.append((child, ce, pre or tag == "pre"))
            if child.tail:
                e.children.append(child.tail)
    for e, pre in elements:
        e.children = _tidy(e.children, pre or e.tag in INLINE_TAGS)
    return root


def _is_inline(node: _E | str) -> bool:
    return isinstance(node, str) or node.tag in INLINE_TAGS


def _tidy(kids: list[_E | str], keep_space: bool) -> list[_E | str]:
    """Merge adjacent strings; keep whitespace-only strings between inline siblings, in pre and inline elements."""
    merged: list[_E | str] = []
    for k in kids:
        if isinstance(k, str) and merged and isinstance(merged[-1], str):
            merged[-1] += k
        else:
            merged.append(k)
    if keep_space:
        return merged
    out: list[_E | str] = []
    for n, k in enumerate(merged):
        between_inline = 0 < n < len(merged) - 1 and _is_inline(merged[n - 1]) and _is_inline(merged[n + 1])
        if isinstance(k, str) and not k.strip() and not between_inline:
            continue
        out.append(k)
    return out


class _DeepBuilder(HTMLParser):
    """Fallback tree builder for pages nested deeper than libxml2 accepts.

    Python's tokenizer feeds an lxml ``TreeBuilder`` (which has no depth limit) with the
    usual implied end tags of HTML, so no content is lost however deep the nesting.
    """

    VOID = frozenset(
        ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"]
    )
    CLOSES: ClassVar[dict[str, frozenset[str]]] = {
        "p": frozenset(["p"]),
        "li": frozenset({"li"}),
        "dt": frozenset({"dt", "dd"}),
        "dd": frozenset({"dt", "dd"}),
        "td": frozenset({"td", "th"}),
        "th": frozenset({"td", "th"}),
        "tr": frozenset({"tr", "td", "th"}),
        "option": frozenset({"option"}),
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = etree.TreeBuilder()
        self.open: list[str] = []
        self.builder.start("html", {})
        self.open.append("html")

    @classmethod
    def parse(cls, text: str) -> Any:
        b = cls()
        b.feed(text)
        b.close()
        while b.open:
            b.builder.end(b.open.pop())
        return b.builder.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "html":
            return
        closes = self.CLOSES.get(tag, frozenset())
        if (closes and self.open and self.open[-1] in closes) or (
            tag not in INLINE_TAGS and self.open and self.open[-1] == "p"
        ):
            self.builder.end(self.open.pop())
        self.builder.start(tag, {k: v or "" for k, v in attrs})
        if tag in self.VOID:
            self.builder.end(tag)
        else:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID and self.open and self.open[-1] == tag:
            self.builder.end(self.open.pop())

    def handle_endtag(self, tag: str) -> None:
        if tag == "html" or tag not in self.open:
            return
        while self.open:
            name = self.open.pop()
            self.builder.end(name)
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        self.builder.data(data)

    def handle_comment(self, data: str) -> None:
        return
