"""Parsing: bytes or text to a :class:`~spire_core.document.Document`.

Decoding, the lxml build, cleaning, the deep-nesting fallback tokenizer and the call that
segments the tree into sentences all happen here; the model itself is
:mod:`spire_core.document.tree`. Plain text and Markdown-free prose enter through
:func:`parse_text`, pages of unknown kind through :func:`parse_page`.

Cleaning (decided once, here): comments, processing instructions, ``script``, ``style``,
``template``, ``noscript``, ``svg`` and embedded objects are dropped (but HTML that breaks out of an
unclosed ``<svg>``, as in browsers: :func:`_svg_breakout`), and so are elements hidden with
the ``hidden`` attribute, ``display:none`` or ``aria-hidden``, but for a hidden heading with
text, which still names what follows (:func:`_kept_hidden`). Of ``<head>`` only ``<title>``
stays. With ``boilerplate=True`` (the default) site chrome is dropped too: navigation,
footers, tables of contents, permalink anchors and citation markers (see
:data:`BOILERPLATE_CLASSES`). Whitespace-only text is kept only between two inline
siblings (where it separates words) and inside ``<pre>``; text is otherwise stored as
written, and rendering collapses whitespace. (Inside inline elements whitespace is kept:
``<em>class</em><span> </span>name`` separates two words.) The same bytes always give the same paths.

Hostile pages are read as browsers read them, which keeps all work linear in the page:
elements nested deeper than :data:`MAX_DEPTH` are placed at that depth; text and other
non-cell content directly inside a table (or its ``<colgroup>``) moves before it, and a cell outside any row gets
an implied ``<tr>`` (:data:`TABLE_CHILDREN`); page-supplied sentinel elements are unwrapped.
"""

from __future__ import annotations

import html as html_lib
import re
from collections import Counter
from collections.abc import Mapping
from functools import partial
from html.parser import HTMLParser
from itertools import islice
from pathlib import PurePosixPath
from typing import Any, ClassVar, Literal

import lxml.etree as etree
import lxml.html

from spire_core.document.tree import HEADING_LEVELS, INLINE_TAGS, SENTINELS, Document, Element, gc_paused
from spire_core.errors import EmptyDocumentError, SegmentationError
from spire_core.reading.decoding import DEFAULT_MAX_BYTES, decode
from spire_core.reading.language import (
    declared_language,
    detected_language,
    primary_subtag,
    prose_sample,
    punkt_language,
)
from spire_core.reading.markdown import is_markdown, markdown_to_html
from spire_core.reading.punkt import sentence_spans
from spire_core.reading.sentences import segment as segment_tree
from spire_core.reading.text_tables import text_tables

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
        # MathML's alternative encodings (TeX source, content markup): browsers do not show them
        "annotation",
        "annotation-xml",
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
    language: str | None = None,
) -> Document:
    """Parse HTML text or bytes into a :class:`Document`.

    ``segment`` inserts sentence sentinels (NLTK Punkt, with the parameters of the page's
    language: ``language``, an ISO 639-1 code, else the one the page declares, else the one
    detected in its text, else English; :mod:`spire_core.reading.language`); with ``segment=False`` paths are
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
        lx_root = _lxml_root(decoded.text, warnings)
        language = primary_subtag(language) or declared_language(lx_root) or detected_language(prose_sample(lx_root))
        redirect = _refresh_target(decoded.text, lx_root)
        if _MATH.search(decoded.text):
            _math_sources(lx_root)
        root = _build(lx_root, boilerplate)
        del lx_root
        markup = _INLINE_MARKUP.search(decoded.text)
        if markup:
            inline_text(root, soft_hyphens=_SOFT_HYPHEN.search(decoded.text, markup.start()) is not None)
        text_tables(root)
        if segment:
            split = partial(sentence_spans, language=punkt_language(language))
            try:
                segment_tree(root, split)
            except TimeoutError as err:  # (nltk.redos: a regular expression ran past its limit)
                raise SegmentationError(f"sentence segmentation stopped: {err}", doc_id=doc_id) from None
        doc = Document(
            root,
            doc_id=doc_id,
            encoding=decoded.encoding,
            replaced=decoded.replaced,
            warnings=warnings,
            language=language,
        )
        doc.redirect = redirect
        del root  # freed now, by reference counting: else the collector's first pass walks the whole build tree
    if require_content and not doc.has_content():
        raise EmptyDocumentError("has no visible text", doc_id=doc_id)
    return doc


_REFRESH = re.compile(r"""http-equiv\s*=\s*["']?\s*refresh""", re.I)
_REFRESH_URL = re.compile(r"""^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(["']?)(.*?)\1\s*$""", re.I | re.S)


def _refresh_target(text: str, lx_root: Any) -> str | None:
    """The URL a ``<meta http-equiv="refresh" content="N; url=...">`` of the page's head sends
    its reader to, else None (a refresh without a URL reloads the page itself)."""
    if not _REFRESH.search(text, 0, 65536):
        return None
    for meta in lx_root.iter("meta"):
        if (meta.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        found = _REFRESH_URL.match(meta.get("content") or "")
        if found and found.group(2).strip():
            return found.group(2).strip()
    return None


def parse_text(
    text: str,
    *,
    doc_id: str | None = None,
    segment: bool = True,
    require_content: bool = False,
    language: str | None = None,
) -> Document:
    """A :class:`Document` for plain text: each blank-line separated block becomes a paragraph."""
    return parse_html(
        text_to_html(text), doc_id=doc_id, segment=segment, require_content=require_content, language=language
    )


def parse_markdown(
    text: str | bytes,
    *,
    doc_id: str | None = None,
    segment: bool = True,
    boilerplate: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    require_content: bool = False,
    language: str | None = None,
) -> Document:
    """A :class:`Document` for a Markdown page: its CommonMark rendering (:mod:`~spire_core.reading.markdown`) as HTML.

    Options and errors as :func:`parse_html`; ``max_bytes`` applies to the Markdown source.
    """
    decoded = decode(text, max_bytes=max_bytes, doc_id=doc_id)
    page = markdown_to_html(decoded.text)
    doc = parse_html(
        page,
        doc_id=doc_id,
        segment=segment,
        boilerplate=boilerplate,
        max_bytes=max(max_bytes, len(page)),  # the limit was checked on the source
        require_content=require_content,
        language=language,
    )
    doc.encoding = decoded.encoding
    doc.decode_errors = decoded.replaced
    doc.warnings = [*decoded.warnings, *doc.warnings]
    return doc


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


#: What a page is read as.
PageKind = Literal["html", "markdown", "text"]
_MEDIA_TYPES: Mapping[str, PageKind] = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
}
_SUFFIXES: Mapping[str, PageKind] = {
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
}


def declared_kind(media_type: str | None = None, file_name: str | None = None) -> PageKind | None:
    """What a page is declared to be: by its media type (``text/markdown; charset=...``), else its file suffix."""
    media = media_type.split(";")[0].strip().lower() if media_type else ""
    if media in _MEDIA_TYPES:
        return _MEDIA_TYPES[media]
    suffix = PurePosixPath(file_name.split("?")[0]).suffix.lower() if file_name else ""
    return _SUFFIXES.get(suffix)


def page_kind(text: str) -> PageKind:
    """How :func:`parse_page` reads ``text``: Markdown (:func:`~spire_core.is_markdown`), HTML, else plain text."""
    return "markdown" if is_markdown(text) else "html" if is_html(text) else "text"


def parse_page(
    content: str | bytes,
    *,
    doc_id: str | None = None,
    segment: bool = True,
    boilerplate: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    require_content: bool = False,
    declared: PageKind | None = None,
    language: str | None = None,
) -> Document:
    """Parse a page that may be HTML, Markdown or plain text (paragraphs separated by blank lines).

    What the page is comes from its text (:func:`page_kind`), so the same text always gives
    the same paths. ``declared`` is what its source claims (:func:`declared_kind` of its
    metadata): a page declared HTML that holds no tag (a loader such as ``BSHTMLLoader``
    stripped them) gets a ``Document.warnings`` entry (the adapters log it), since its headings,
    lists and tables are gone. The options are those of :func:`parse_html` (``boilerplate``
    has no effect on plain text). Binary data raises :class:`~spire_core.errors.NotHTMLError`;
    every SPIRE error raised names ``doc_id`` in its message and ``doc_id`` attribute.
    """
    text = decode(content, max_bytes=max_bytes, doc_id=doc_id).text
    kind = page_kind(text)
    doc = _parse_as(kind, content, text, doc_id, segment, boilerplate, max_bytes, require_content, language)
    if declared == "html" and kind != "html":
        doc.warnings.append(
            f"declared HTML but holds no tags (stripped by its loader?): read as "
            f"{'Markdown' if kind == 'markdown' else 'plain text'}; load the raw HTML to keep its structure"
        )
    return doc


def _parse_as(
    kind: PageKind,
    content: str | bytes,
    text: str,
    doc_id: str | None,
    segment: bool,
    boilerplate: bool,
    max_bytes: int,
    require_content: bool,
    language: str | None = None,
) -> Document:
    if kind == "markdown":
        return parse_markdown(
            content,
            doc_id=doc_id,
            segment=segment,
            boilerplate=boilerplate,
            max_bytes=max_bytes,
            require_content=require_content,
            language=language,
        )
    if kind == "html":
        return parse_html(
            content,
            doc_id=doc_id,
            segment=segment,
            boilerplate=boilerplate,
            max_bytes=max_bytes,
            require_content=require_content,
            language=language,
        )
    return parse_text(text, doc_id=doc_id, segment=segment, require_content=require_content, language=language)


_XML_DECL_TEXT = re.compile(r"^\s*<\?xml[^>]*\?>")
#: libxml2 drops whatever follows ``</html>``; browsers keep it in the body, and so do we.
_LATE_END_TAGS = re.compile(r"</(?:body|html)\s*>", re.I)


def _lxml_root(text: str, warnings: list[str]) -> Any:
    text = _XML_DECL_TEXT.sub("", text, count=1)  # lxml rejects str input with an encoding declaration
    text = _LATE_END_TAGS.sub("", text)
    if not text or text.isspace():  # (no copy of the page, as text.strip() would make)
        return lxml.html.document_fromstring("<html></html>")
    # a plain etree parser: lxml.html's element classes cost a Python call per element proxy
    parser = etree.HTMLParser(huge_tree=True, remove_comments=False)
    try:
        root = etree.fromstring(text, parser)
    except etree.ParserError:
        root = None
    if root is None:  # what lxml.html.document_fromstring reports as "Document is empty"
        return lxml.html.document_fromstring("<html></html>")
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        warnings.append("nesting deeper than libxml2 allows: parsed with the deep-nesting fallback tokenizer")
        return _DeepBuilder.parse(text)
    return root


def _dropped_by_attrs(tag: str, attrs: Mapping[str, str], boilerplate: bool, source: Any = None) -> bool:
    """Whether the attributes of an element drop it: hidden, or (with ``boilerplate``) site chrome by role, id or class.

    A hidden heading with text (``source``: its lxml element) is kept (:func:`_kept_hidden`).
    The rules by tag alone (:data:`DROP_TAGS`, ``<head>`` content but ``<title>``,
    :data:`BOILERPLATE_TAGS`) are checked by :func:`_build` itself.
    """
    hidden = "hidden" in attrs or _DISPLAY_NONE.search(attrs.get("style", "")) or attrs.get("aria-hidden") == "true"
    if hidden and not _kept_hidden(tag, source):
        return True
    if not boilerplate:
        return False
    if attrs.get("role") in BOILERPLATE_ROLES or attrs.get("id") in BOILERPLATE_IDS:
        return True
    classes = attrs.get("class")
    if not classes:
        return False
    names = classes.split()
    return not BOILERPLATE_CLASSES.isdisjoint(names) or (tag == "sup" and "reference" in names)


def _kept_hidden(tag: str, source: Any) -> bool:
    """Whether a hidden element stays: a heading (``h1``-``h6``) with text, hidden by its own markup.

    Pages hide headings they keep as anchors or for screen readers (``<h2 hidden>``,
    ``display:none``, ``aria-hidden``) while what follows is still the section they name: such a
    heading is kept as a heading, so it scopes and labels what follows (the headers rule) and
    renders like any heading. A sighted reader gets that name from the layout; the reader of a
    rendered excerpt gets it from the heading. A heading inside a hidden container goes with
    its container, and a hidden heading without text is dropped (it would only end the scope of
    the heading before it). The text is looked for in the heading's first 64 elements, which
    keeps the check bounded however hidden headings nest.
    """
    if tag not in HEADING_LEVELS or source is None:
        return False
    for k, e in enumerate(islice(source.iter(), 64)):
        if (isinstance(e.text, str) and e.text.strip()) or (k and isinstance(e.tail, str) and e.tail.strip()):
            return True
    return False


def _tag_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


#: Elements nested deeper than this are placed at this depth, under their deepest allowed
#: ancestor (browsers do the same past depth 512): paths, and all per-node work, stay bounded.
#: The deepest node of the 223 real pages of the bench and held-out sets is at depth 22; at 256,
#: a page of 2,000 nested inline elements took 1.5-1.9 s of CPU for its paths alone (issue 36).
MAX_DEPTH = 128
#: Children a table-structure element may hold. Anything else in it, and text in it outside
#: any cell, is moved just before the table, as browsers do ("foster parenting"); a cell
#: outside any row gets an implied ``<tr>``, and a ``<form>`` there is unwrapped. A ``<colgroup>``
#: holds ``<col>`` alone: its text and other inline or block content are fostered the same way
#: (a browser closes the column group and fosters them), and the table parts a parser left in
#: it (a cell, a row, a caption) go into its table.
TABLE_CHILDREN = {
    "table": frozenset(["caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "td", "th"]),
    "colgroup": frozenset(["col"]),
    "thead": frozenset(["tr", "td", "th"]),
    "tbody": frozenset(["tr", "td", "th"]),
    "tfoot": frozenset(["tr", "td", "th"]),
    "tr": frozenset(["td", "th"]),
}


#: What a ``<colgroup>`` may not hold but its table may (:func:`_place` moves it there).
_TABLE_PARTS = TABLE_CHILDREN["table"] - TABLE_CHILDREN["colgroup"] - {"colgroup"}


class _Open:
    """An element being built: the element it was put in, whether it is inside ``<pre>``, its tail.

    ``kids`` is the element's child list and ``table`` whether it is a table-structure
    element (text in it outside any cell is fostered): both looked up once per element.
    """

    __slots__ = ("container", "element", "kids", "pre", "source", "table", "tail")

    def __init__(
        self, element: Element, container: Element | None, pre: bool, tail: str | None, source: Any = None
    ) -> None:
        self.element = element
        #: the lxml element, kept alive while it is open: freeing an lxml proxy walks up its
        #: ancestors looking for live proxies, which turns a deep page quadratic without them
        self.source = source
        self.container = container
        self.pre = pre
        self.tail = tail
        self.kids = element.children
        self.table = element.tag in TABLE_CHILDREN


class _Unwrapped:
    """On the work stack: the end of an unwrapped element (its lxml element, kept alive as in :class:`_Open`)."""

    __slots__ = ("source",)

    def __init__(self, source: Any) -> None:
        self.source = source


def _build(lx_root: Any, boilerplate: bool) -> Element:
    """Copy the lxml tree into :class:`Element` nodes, cleaning as the module docstring says.

    Iterative, in document order. As browsers do, page-supplied sentinel elements are
    unwrapped (only segmentation inserts sentinels), elements deeper than :data:`MAX_DEPTH`
    are placed at that depth, and what a table holds outside its cells goes before it.

    The work stack holds lxml elements still to enter, the :class:`_Open` of each built
    element (popped: the element is complete, so its children are tidied, then its tail
    follows) and the :class:`_Unwrapped` end of each unwrapped element. An element's children
    can change only while it is open, so tidying it when it closes is final.
    """
    root = Element(_tag_name(lx_root.tag), dict(lx_root.items()) or _NO_ATTRS)
    top = _Open(root, None, root.tag == "pre", None)
    path = [top]
    implied: set[int] = set()  # ids of the <tr> elements made for cells outside any row
    names: dict[Any, str] = {}  # lxml tag (a string, or the Comment / PI / Entity factory) -> name, "" to skip
    _add_text(path, lx_root.text)
    stack: list[Any] = list(reversed(lx_root))
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        item = pop()
        kind = item.__class__
        if kind is _Open:  # an element ends
            path.pop()
            e = item.element
            e.children = _tidy(item.kids, item.pre or e.tag in INLINE_TAGS)
            top = path[-1]
            text = item.tail
        elif kind is _Unwrapped:  # an unwrapped element ends: its tail follows
            text = item.source.tail
        else:
            lx = item
            raw = lx.tag
            tag = names.get(raw)
            if tag is None:
                tag = names[raw] = _tag_name(raw) if isinstance(raw, str) else ""
            items = lx.items() if tag else None
            attrs = dict(items) if items else _NO_ATTRS
            if (
                not tag
                or tag in DROP_TAGS
                or (top.element.tag == "head" and tag != "title")
                or (boilerplate and tag in BOILERPLATE_TAGS)
                or (attrs and _dropped_by_attrs(tag, attrs, boilerplate, lx))
            ):  # cleaned away (module docstring)
                lifted = _svg_breakout(lx) if tag == "svg" else None
                if lifted:  # HTML inside the SVG that browsers render outside it
                    extend(reversed(lifted))
                    text = None
                else:
                    text = lx.tail
            else:
                parent = top.element if len(path) < MAX_DEPTH else path[MAX_DEPTH - 1].element
                # unwrapped: page-supplied sentinels, and a form in a table (browsers empty it there)
                if tag in SENTINELS or (tag == "form" and parent.tag in TABLE_CHILDREN):
                    push(_Unwrapped(lx))
                    extend(reversed(lx))
                    text = lx.text
                elif len(lx) or tag in TABLE_CHILDREN:
                    e = Element(tag, attrs)
                    top = _Open(e, _place(path, parent, e, implied), top.pre or tag == "pre", lx.tail, lx)
                    path.append(top)
                    push(top)
                    extend(reversed(lx))
                    text = lx.text
                else:  # a childless element, opened and closed at once: its text is its one child
                    e = Element(tag, attrs)
                    if parent.tag in TABLE_CHILDREN or tag == "td" or tag == "th":
                        _place(path, parent, e, implied)
                    else:  # _place, inlined for the common case
                        parent.children.append(e)
                    text = lx.text
                    if text and (not text.isspace() or top.pre or tag == "pre" or tag in INLINE_TAGS):
                        e.children.append(text)  # as _tidy leaves it
                    text = lx.tail
        if text:  # _add_text, inlined for the common case
            if top.table and text.strip() and _foster(path, text) is not None:
                continue
            top.kids.append(text)
    root.children = _tidy(root.children, path[0].pre or root.tag in INLINE_TAGS)
    return root


#: Start tags that end foreign (SVG, MathML) content in browsers: the element and all that
#: follows it are HTML again (HTML's "in foreign content" insertion mode).
BREAKOUT_TAGS = frozenset(
    [
        "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed",
        "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta",
        "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strike", "strong", "sub", "sup",
        "table", "tt", "u", "ul", "var",
    ]
)  # fmt: skip
#: SVG elements whose content browsers parse as HTML (where a ``<p>`` does not break out).
_SVG_HTML_POINTS = frozenset(["foreignobject", "desc", "title"])


def _svg_breakout(svg: Any) -> list[Any] | None:
    """What of a dropped ``<svg>`` browsers render outside it, in document order: its first
    breakout element (:data:`BREAKOUT_TAGS`, or ``font`` with ``color``, ``face`` or ``size``)
    outside an HTML integration point, then everything after it up to the svg's end (each
    enclosing element's tail as an :class:`_Unwrapped`); None when nothing breaks out."""
    todo = list(reversed(svg))
    found = None
    while todo:
        e = todo.pop()
        if not isinstance(e.tag, str):
            continue
        name = _tag_name(e.tag)
        if name in BREAKOUT_TAGS or (name == "font" and any(k in e.attrib for k in ("color", "face", "size"))):
            found = e
            break
        if name not in _SVG_HTML_POINTS:
            todo.extend(reversed(e))
    if found is None:
        return None
    out: list[Any] = [found, *found.itersiblings()]
    parent = found.getparent()
    while parent is not None and parent is not svg:
        out += [_Unwrapped(parent), *parent.itersiblings()]
        parent = parent.getparent()
    out.append(_Unwrapped(svg))
    return out


def _place(path: list[_Open], parent: Element, e: Element, implied: set[int]) -> Element:
    """Append ``e`` to ``parent`` (fostered before a table, or into an implied row, as browsers do); where it went."""
    tag = e.tag
    if parent.tag == "colgroup" and tag in _TABLE_PARTS and len(path) > 1 and path[-1].element is parent:
        parent = path[-2].element  # a table part left in a column group belongs to the table
    allowed = TABLE_CHILDREN.get(parent.tag)
    if allowed is not None and tag not in allowed:
        container = _foster(path, e)
        if container is not None:
            return container
    elif (tag == "td" or tag == "th") and parent.tag != "tr":
        row = _implied_row(parent, implied)
        row.children.append(e)
        return row
    parent.children.append(e)
    return parent


def _implied_row(group: Element, implied: set[int]) -> Element:
    last = group.children[-1] if group.children else None
    if isinstance(last, Element) and id(last) in implied:
        return last
    row = Element("tr", _NO_ATTRS)
    implied.add(id(row))
    group.children.append(row)
    return row


def _add_text(path: list[_Open], text: str | None) -> None:
    if not text:
        return
    here = path[-1].element
    if here.tag in TABLE_CHILDREN and text.strip() and _foster(path, text) is not None:
        return
    here.children.append(text)


def _foster(path: list[_Open], node: Element | str) -> Element | None:
    """Put ``node`` just before the innermost open table; the element it went into, or None."""
    for opened in reversed(path):
        if opened.element.tag == "table" and opened.container is not None:
            kids = opened.container.children
            at = len(kids) - 1
            while kids[at] is not opened.element:
                at -= 1
            kids.insert(at, node)
            return opened.container
    return None


def _tidy(kids: list[Element | str], keep_space: bool) -> list[Element | str]:
    """Merge adjacent strings; keep whitespace-only strings between inline siblings, in pre and inline elements.

    Children are :class:`Element` or ``str``; the list is returned as is when nothing changes.
    """
    if len(kids) < 2:
        if kids and not keep_space and _blank(kids[0]):
            return []
        return kids
    merged: list[Element | str] = []
    after_text = False
    for k in kids:
        if isinstance(k, str) and after_text:
            merged[-1] += k  # type: ignore[operator]  # merged[-1] is a string: it came just before
        else:
            merged.append(k)
            after_text = isinstance(k, str)
    if keep_space:
        return merged
    out: list[Element | str] = []
    last = len(merged) - 1
    for n, k in enumerate(merged):
        blank = isinstance(k, str) and (not k or k.isspace())
        if blank and not (0 < n < last and _inline(merged[n - 1]) and _inline(merged[n + 1])):
            continue  # (merged strings are never adjacent: the neighbours of a string are elements)
        out.append(k)
    return out


def _blank(node: Element | str) -> bool:
    """Whether ``node`` is a whitespace-only string (children strings are never empty)."""
    return isinstance(node, str) and (not node or node.isspace())


def _inline(node: Element | str) -> bool:
    return isinstance(node, str) or node.tag in INLINE_TAGS


_XML_NAME = re.compile(r"[A-Za-z_][-A-Za-z0-9_.]*\Z")
#: Characters lxml refuses in text and attribute values (XML 1.0): form feed and vertical tab
#: are HTML whitespace and become spaces, the others are dropped as libxml2's HTML parser does.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_safe(text: str) -> str:
    if not _NOT_XML.search(text):
        return text
    return _NOT_XML.sub(lambda m: " " if m.group() in "\x0b\x0c" else "", text)


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
        self.counts: Counter[str] = Counter()  # open elements by tag: end tags need no scan
        self.builder.start("html", {})
        self._push("html")

    def _push(self, tag: str) -> None:
        self.open.append(tag)
        self.counts[tag] += 1

    def _pop(self) -> str:
        name = self.open.pop()
        self.counts[name] -= 1
        self.builder.end(name)
        return name

    @classmethod
    def parse(cls, text: str) -> Any:
        b = cls()
        b.feed(text)
        b.close()
        while b.open:
            b._pop()
        return b.builder.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "html" or not _XML_NAME.match(tag):  # lxml takes XML names only; so do browsers' DOMs
            return
        closes = self.CLOSES.get(tag, frozenset())
        if (closes and self.open and self.open[-1] in closes) or (
            tag not in INLINE_TAGS and self.open and self.open[-1] == "p"
        ):
            self._pop()
        self.builder.start(tag, {k: _xml_safe(v or "") for k, v in attrs if _XML_NAME.match(k)})
        if tag in self.VOID:
            self.builder.end(tag)
        else:
            self._push(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID and self.open and self.open[-1] == tag:
            self._pop()

    def handle_endtag(self, tag: str) -> None:
        if tag == "html" or not self.counts[tag]:
            return
        while self.open and self._pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        self.builder.data(_xml_safe(data))

    def handle_comment(self, data: str) -> None:
        return


# -- inline text: what a page's markup becomes (docs/concepts.md, "Inline text") -------------
#: Markup whose text the tree rewrites so that it reads as the page shows it (:func:`inline_text`).
_INLINE_MARKUP = re.compile(r"<(?:sup|sub|img|msup|msub|msubsup|mfrac|msqrt)\b|\xad|&shy;|&#173;|&#xad;", re.I)
_MATH = re.compile(r"<math\b", re.I)
_SOFT_HYPHEN = re.compile(r"\xad|&shy;|&#173;|&#xad;", re.I)
#: Superscripts a reader reads as part of their word, written as they are: ordinal suffixes after a
#: digit (19th, 1er, 2e, 3º), abbreviations after a letter (Mme, Mlle, Nº) and trademarks (™ as TM).
ORDINAL_SUFFIXES = frozenset(
    ["st", "nd", "rd", "th", "e", "er", "re", "ère", "ème", "eme", "è", "o", "a", "os", "as", "º", "ª"]
)
ABBREVIATION_SUFFIXES = frozenset(["me", "mme", "mlle", "lle", "r", "dr", "nr", "o", "os"])
MARKS = frozenset(["tm", "sm"])
#: A script of one token (a number, a name, with a sign): ``2^64``, ``x_i``, ``2^-1``; any other
#: is parenthesised: ``x^(n+1)``.
_ONE_TOKEN = re.compile(r"[+\-\u2212]?[\w.]+|\(.*\)")
_ALNUM = re.compile(r"\w")
#: An ``alt`` that is an image's file name ("Mustalampi Lake in Nuuksio.jpg", MediaWiki's alt when a
#: page gives none) names the file, not what the image shows: no text (HTML's advice on ``alt``).
_FILE_NAME_ALT = re.compile(r"\S\.(?:jpe?g|png|gif|svg|webp|avif|tiff?|bmp|ico)\Z", re.I)
_TEX = "application/x-tex"


def inline_text(root: Element, *, soft_hyphens: bool = True) -> None:
    """Rewrite, in place, the inline markup whose text would read wrong flattened: a superscript is
    ``^`` and its text (``2^64``, ``O(n^2)``, ``x^(n+1)``), a subscript ``_`` and its text
    (``x_i``, ``log_2``; digits after a capital or a bracket are a formula's: ``H2O``), except where a
    reader reads them as part of the word (``19th``, ``Mme``, signs as ``Windows®``, a footnote mark
    ``[1]``); an image in running text (or alone in a table cell) holds its ``alt`` text; MathML
    scripts, fractions and roots read as ``^``, ``_``, ``/`` and ``√(...)``; with ``soft_hyphens``,
    soft hyphens (U+00AD) are removed. Iterative, one pass over the elements; every element stays,
    so paths are those of the page's markup (a rewritten element holds one text node more at most).
    """
    if soft_hyphens:
        _drop_soft_hyphens(root)
    # open elements: (the element, its remaining children, the last character of text before it)
    stack: list[tuple[Element, Any, str]] = [(root, iter(root.children), "")]
    last = ""  # the last character of text seen, in document order ("" after a block's edge)
    run: list[Element] = []  # the images with alt text of the current run of inline content
    has_text = False  # whether that run holds text
    cells: list[bool] = [False]  # per open block element: whether it is a table cell

    def flush(cell: bool) -> None:
        nonlocal has_text
        if has_text or cell:
            for img in run:
                img.children = [_alt_text(img.attrs["alt"])]
        run.clear()
        has_text = False

    while stack:
        e, kids, before = stack[-1]
        for k in kids:
            if isinstance(k, str):
                last = k[-1]
                has_text = has_text or not k.isspace()
                continue
            tag = k.tag
            block = tag not in INLINE_TAGS
            if block:
                flush(cells[-1])
                cells.append(tag == "td" or tag == "th")
                last = ""
            elif tag == "img" and not k.children and _alt_text(k.attrs.get("alt")):
                run.append(k)
            if k.children:
                stack.append((k, iter(k.children), last))
                break
            if block:
                flush(cells.pop())
        else:
            stack.pop()
            if not stack:
                break
            tag = e.tag
            if tag not in INLINE_TAGS:
                flush(cells.pop())
                last = ""
                continue
            if tag == "sup" or tag == "sub":
                _script(e, before)
            elif tag in _MATHML_LAYOUT:
                _MATHML_LAYOUT[tag](e)
            else:
                continue
            end = e.children[-1] if e.children else None
            if isinstance(end, str) and end:
                last = end[-1]
    flush(cells[-1])


def _alt_text(alt: str | None) -> str:
    """The text an image's ``alt`` stands for: "" when it is empty or an image file's name."""
    text = " ".join((alt or "").replace("\xad", "").split())
    return "" if _FILE_NAME_ALT.search(text) else text


def _drop_soft_hyphens(root: Element) -> None:
    """Remove every soft hyphen (U+00AD) from the text under ``root``, merging the strings that
    then meet (a text that was one soft hyphen between two others)."""
    todo = [root]
    while todo:
        e = todo.pop()
        kids = e.children
        if any(isinstance(k, str) and "\xad" in k for k in kids):
            out: list[Element | str] = []
            for k in kids:
                if isinstance(k, str):
                    k = k.replace("\xad", "")
                    if not k:
                        continue
                    if out and isinstance(out[-1], str):
                        out[-1] += k
                        continue
                out.append(k)
            e.children = kids = out
        todo.extend(k for k in kids if isinstance(k, Element) and k.children)


def _text_of(e: Element) -> str:
    """The text of ``e``'s subtree (small: a script, a MathML layout element)."""
    out: list[str] = []
    todo: list[Element | str] = [e]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            out.append(node)
        else:
            todo.extend(reversed(node.children))
    return "".join(out)


def _script(e: Element, before: str) -> None:
    """Mark the superscript or subscript ``e`` (its text follows ``before``, the character before it)."""
    text = _text_of(e).strip()
    if not text or not _ALNUM.search(text) or text.startswith("["):
        return  # signs (®, *, †, °, +) and footnote marks ("[1]"): read as written
    if e.tag == "sup":
        word = text.casefold()
        if (
            (word in ORDINAL_SUFFIXES and before.isdigit())
            or (word in ABBREVIATION_SUFFIXES and before.isalpha())
            or word in MARKS
        ):
            return  # 19th, 1er, Mme, Windows TM: part of the word
        mark = "^"
    else:
        if text.isdigit() and (before.isupper() or before in ")]"):
            return  # a formula's count: H2O, CO2, Ca(OH)2
        mark = "_"
    if _ONE_TOKEN.fullmatch(text):
        _wrap(e, mark, "")
    else:
        _wrap(e, mark + "(", ")")


def _wrap(e: Element, opening: str, closing: str) -> None:
    """Put ``opening`` before the text of ``e`` (after its leading spaces) and ``closing`` after it."""
    kids = e.children
    first = kids[0] if kids else None
    if isinstance(first, str):
        lead = len(first) - len(first.lstrip())
        kids[0] = first[:lead] + opening + first[lead:]
    else:
        kids.insert(0, opening)
    if closing:
        last = kids[-1]
        if isinstance(last, str):
            kids[-1] = last + closing
        else:
            kids.append(closing)


def _between(e: Element, marks: tuple[str, ...]) -> None:
    """Put ``marks[k]`` after the ``k``-th element child of the MathML element ``e``."""
    out: list[Element | str] = []
    n = 0
    for k in e.children:
        out.append(k)
        if isinstance(k, Element) and n < len(marks):
            if marks[n]:
                out.append(marks[n])
            n += 1
    e.children = out


def _msup(e: Element) -> None:
    _between(e, ("^",))


def _msub(e: Element) -> None:
    _between(e, ("_",))


def _msubsup(e: Element) -> None:
    _between(e, ("_", "^"))


def _mfrac(e: Element) -> None:
    _between(e, ("/",))


def _msqrt(e: Element) -> None:
    e.children = ["\u221a(", *e.children, ")"]


_MATHML_LAYOUT = {"msup": _msup, "msub": _msub, "msubsup": _msubsup, "mfrac": _mfrac, "msqrt": _msqrt}


def _math_sources(lx_root: Any) -> None:
    """Each ``<math>`` with a TeX source (its ``alttext``, else an ``<annotation
    encoding="application/x-tex">``) holds that source as its one text, in the lxml tree."""
    for math in lx_root.iter("math", "{http://www.w3.org/1998/Math/MathML}math"):
        tex = " ".join((math.get("alttext") or "").split())
        if not tex:
            for a in math.iter("annotation", "{http://www.w3.org/1998/Math/MathML}annotation"):
                if (a.get("encoding") or "").strip().lower() == _TEX and (a.text or "").strip():
                    tex = " ".join((a.text or "").split())
                    break
        if tex:
            for child in list(math):
                math.remove(child)  # (with its tail: the text inside the math after it)
            math.text = tex
