"""Parsing: bytes or text to a :class:`~spire_core.document.Document`.

Decoding, the lxml build, cleaning, the deep-nesting fallback tokenizer and the call that
segments the tree into sentences all happen here; the model itself is
:mod:`spire_core.document`. Plain text and Markdown-free prose enter through
:func:`parse_text`, pages of unknown kind through :func:`parse_page`.

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

import html as html_lib
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any, ClassVar

import lxml.etree as etree
import lxml.html

from .decoding import DEFAULT_MAX_BYTES, decode
from .document import INLINE_TAGS, Document, Element, gc_paused
from .errors import EmptyDocumentError
from .sentences import segment as segment_tree

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
_NO_ATTRS: Mapping[str, str] = {}


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
    is left (an empty page is otherwise a valid, empty :class:`Document`). Every error names
    ``doc_id``.
    """
    decoded = decode(html, max_bytes=max_bytes, doc_id=doc_id)
    warnings = list(decoded.warnings)
    with gc_paused():  # millions of live objects: cyclic GC passes only cost time here
        root = _build(_lxml_root(decoded.text, warnings), boilerplate)
        if segment:
            segment_tree(root)
        doc = Document(root, doc_id=doc_id, encoding=decoded.encoding, replaced=decoded.replaced, warnings=warnings)
    if require_content and not doc.has_content():
        raise EmptyDocumentError("has no visible text", doc_id=doc_id)
    return doc


def parse_text(
    text: str, *, doc_id: str | None = None, segment: bool = True, require_content: bool = False
) -> Document:
    """A :class:`Document` for plain text: each blank-line separated block becomes a paragraph."""
    return parse_html(text_to_html(text), doc_id=doc_id, segment=segment, require_content=require_content)


def text_to_html(text: str) -> str:
    """The page :func:`parse_text` parses: one ``<p>`` per blank-line separated block."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return "<html><body>" + "".join(f"<p>{html_lib.escape(b)}</p>" for b in blocks) + "</body></html>"


_TAGS = (
    "html|head|body|title|div|p|span|a|ul|ol|li|dl|dt|dd|table|thead|tbody|tr|td|th|caption|h[1-6]|br|hr|pre|code"
    "|section|article|main|header|footer|nav|aside|em|strong|b|i|img|meta|link|script|style|blockquote|figure"
)
_HTML = re.compile(rf"<!doctype\s+html|<(?:{_TAGS})(?:\s[^<>]*)?/?>|</(?:{_TAGS})\s*>", re.I)


def is_html(text: str) -> bool:
    """Whether ``text`` looks like HTML (a doctype or a known HTML tag)."""
    return _HTML.search(text) is not None


def parse_page(
    content: str | bytes,
    *,
    doc_id: str | None = None,
    segment: bool = True,
    boilerplate: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    require_content: bool = False,
) -> Document:
    """Parse a page that may be HTML or plain text (paragraphs separated by blank lines).

    The options are those of :func:`parse_html` (``boilerplate`` has no effect on plain
    text). Binary data raises :class:`~spire_core.errors.NotHTMLError`; every SPIRE error
    raised names ``doc_id`` in its message and ``doc_id`` attribute.
    """
    text = decode(content, max_bytes=max_bytes, doc_id=doc_id).text
    if is_html(text):
        return parse_html(
            content,
            doc_id=doc_id,
            segment=segment,
            boilerplate=boilerplate,
            max_bytes=max_bytes,
            require_content=require_content,
        )
    return parse_text(text, doc_id=doc_id, segment=segment, require_content=require_content)


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


def _build(lx_root: Any, boilerplate: bool) -> Element:
    """Copy the lxml tree into :class:`Element` nodes, cleaning as the module docstring says. Iterative."""
    root = Element(_tag_name(lx_root.tag), dict(lx_root.attrib) or _NO_ATTRS)
    stack: list[tuple[Any, Element, bool]] = [(lx_root, root, False)]
    elements: list[tuple[Element, bool]] = []
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
                    ce = Element(tag, dict(child.attrib) or _NO_ATTRS)
                    e.children.append(ce)
                    stack.append((child, ce, pre or tag == "pre"))
            if child.tail:
                e.children.append(child.tail)
    for e, pre in elements:
        e.children = _tidy(e.children, pre or e.tag in INLINE_TAGS)
    return root


def _is_inline(node: Element | str) -> bool:
    return isinstance(node, str) or node.tag in INLINE_TAGS


def _tidy(kids: list[Element | str], keep_space: bool) -> list[Element | str]:
    """Merge adjacent strings; keep whitespace-only strings between inline siblings, in pre and inline elements."""
    merged: list[Element | str] = []
    for k in kids:
        if isinstance(k, str) and merged and isinstance(merged[-1], str):
            merged[-1] += k
        else:
            merged.append(k)
    if keep_space:
        return merged
    out: list[Element | str] = []
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
