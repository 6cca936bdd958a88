"""References: what a page's ``<a href>`` links name, resolved against the page's id.

A *reference* is recorded, never substituted (the paper's glossary-aware policy; "What a
Sentence Forgets", remediation 5): it travels beside the text that makes it. Each ``<a>``
with an ``href`` is resolved once per page against the page's id, which is a path relative
to the corpus root (``pages/postgresql/wal.html``) or an absolute URL:

- ``#anchor`` or a relative ``page.html#anchor`` names a page of the corpus by its id
  (:attr:`Reference.doc_id`; the page itself for a bare ``#anchor``) and an anchor in it;
  where the page is the one at hand and the anchor exists (the first element with that
  ``id``, else the first ``<a name>``), the anchored element's path is the reference's
  :attr:`~Reference.paths`. A reference to another page gets its paths when it is followed
  (:mod:`spire_core.query.references`).
- ``http(s)://`` URLs of another site (or any, when page ids are paths) are external and
  kept as written (:attr:`Reference.url`); an ``href`` climbing above the corpus root is too.
- Anything else names nothing a reader can follow and is not recorded: other schemes
  (``javascript:``, ``data:``, ``mailto:``, ...), a link to the page itself without an
  anchor, an ``href`` longer than :data:`MAX_HREF_CHARS`.

Every page is untrusted: a unit records at most :data:`MAX_REFERENCES` distinct references,
each at most one ``href`` long plus its page id, so what a page records is linear in its bytes.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from spire_core.document.paths import decode_paths, encode_paths
from spire_core.document.tree import Document, Memo, Path
from spire_core.errors import PathFormatError

#: An ``href`` longer than this is not recorded (the longest on the bench pages: 180 characters).
MAX_HREF_CHARS = 2048
#: A unit or citation records at most this many distinct references, in document order.
MAX_REFERENCES = 32
#: Schemes of external references that are recorded.
WEB_SCHEMES = frozenset({"http", "https"})

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_URL_WHITESPACE = re.compile(r"[\t\n\r]")


@dataclass(frozen=True)
class Reference:
    """One reference a unit's text makes (module docstring).

    A reference into the corpus has a :attr:`doc_id` (and maybe an :attr:`anchor` and
    :attr:`paths`); an external one has a :attr:`url` alone. :attr:`cited` and :attr:`unresolved`
    say what following it at query time gave (``resolve_refs``; both None: not followed, or
    what it names did not fit the budget).
    """

    #: the page it names ("" for a page without an id); None for an external reference
    doc_id: str | None = None
    #: the fragment, percent-decoded ("": the page as a whole)
    anchor: str = ""
    #: the anchored element's path, where it was found on the page at hand
    paths: frozenset[Path] = frozenset()
    #: an external reference: the URL as written
    url: str | None = None
    #: the key of the citation that delivers what it names (query-time resolution)
    cited: str | None = field(default=None, compare=False)
    #: why following it delivered nothing: its page is not in the corpus, its anchor is gone
    unresolved: str | None = field(default=None, compare=False)

    @property
    def external(self) -> bool:
        return self.url is not None

    def target(self) -> str:
        """The reference as one string: ``doc_id#anchor``, ``doc_id``, or the external URL."""
        if self.url is not None:
            return self.url
        return f"{self.doc_id}#{self.anchor}" if self.anchor else str(self.doc_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: ``{"doc_id", "anchor"?, "paths"?}`` or ``{"url"}``, with ``cited`` or
        ``unresolved`` when following it gave either."""
        out: dict[str, Any]
        if self.url is not None:
            out = {"url": self.url}
        else:
            out = {"doc_id": self.doc_id}
            if self.anchor:
                out["anchor"] = self.anchor
            if self.paths:
                out["paths"] = encode_paths(self.paths)
        if self.cited is not None:
            out["cited"] = self.cited
        if self.unresolved is not None:
            out["unresolved"] = self.unresolved
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reference:
        """Inverse of :meth:`to_dict`; raises ``ValueError`` (or :class:`PathFormatError`) on other data."""
        cited, unresolved = data.get("cited"), data.get("unresolved")
        cited = cited if isinstance(cited, str) else None
        unresolved = unresolved if isinstance(unresolved, str) else None
        url = data.get("url")
        if isinstance(url, str):
            return cls(url=url, cited=cited, unresolved=unresolved)
        doc_id, anchor, paths = data.get("doc_id"), data.get("anchor", ""), data.get("paths", "")
        if not isinstance(doc_id, str) or not isinstance(anchor, str) or not isinstance(paths, str):
            raise ValueError(f"not a reference: {str(data)[:80]!r}")
        return cls(doc_id, anchor, decode_paths(paths), cited=cited, unresolved=unresolved)


def resolve_href(base: str | None, href: str) -> Reference | None:
    """The reference ``href`` makes on page ``base`` (a corpus-relative path or a URL; None: a page
    without an id), before its anchor is looked up; None when it is not recorded (module docstring)."""
    href = _URL_WHITESPACE.sub("", href.strip())
    if not href or len(href) > MAX_HREF_CHARS:
        return None
    page = base or ""
    base_is_url = _is_url(page)
    scheme = _SCHEME.match(href)
    if scheme is not None or href.startswith("//"):
        if scheme is not None and scheme.group(1).lower() not in WEB_SCHEMES:
            return None  # javascript:, data:, mailto:, file:, ... name nothing to follow
        if base_is_url:
            absolute = urljoin(page, href)
            if _origin(absolute) == _origin(page):
                return _in_corpus(page, *urldefrag(absolute))
        return Reference(url=href)
    if base_is_url:
        return _in_corpus(page, *urldefrag(urljoin(page, href)))
    path, _, fragment = href.partition("#")
    path = path.partition("?")[0]
    if not path:
        return _in_corpus(page, page, fragment)
    if path.startswith("/"):
        joined = posixpath.normpath(unquote(path).lstrip("/"))
    else:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(path)))
    if joined == ".." or joined.startswith("../") or joined == ".":
        return Reference(url=href)  # above the corpus root: not a page of it
    return _in_corpus(page, joined, fragment)


def _in_corpus(page: str, doc_id: str, fragment: str) -> Reference | None:
    anchor = unquote(fragment)
    if doc_id == page and not anchor:
        return None  # the page itself, as a whole: nothing to follow
    return Reference(doc_id, anchor)


def _is_url(text: str) -> bool:
    scheme = _SCHEME.match(text)
    return scheme is not None and text[scheme.end() : scheme.end() + 2] == "//"


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


@dataclass(frozen=True)
class Links:
    """A page's links, read once (:func:`links`)."""

    #: node index -> its nearest ancestor-or-self ``<a>`` with a recorded reference (-1: none)
    enclosing: Sequence[int]
    #: ``<a>`` node index -> its reference (same-page anchors resolved to paths)
    references: Mapping[int, Reference]
    #: anchor -> the node it names: the first element with that ``id``, else the first ``<a name>``
    anchors: Mapping[str, int]


def anchors(doc: Document) -> Mapping[str, int]:
    """Every anchor of ``doc`` and the node it names (the first ``id``, else the first ``<a name>``)."""
    return links(doc).anchors


def _read(doc: Document) -> Links:
    named: dict[str, int] = {}
    by_id: dict[str, int] = {}
    for i, (tag, attrs) in enumerate(zip(doc.tag, doc.attrs, strict=True)):
        if tag is None or not attrs:
            continue
        ident = attrs.get("id")
        if ident and ident not in by_id:
            by_id[ident] = i
        name = attrs.get("name")
        if tag == "a" and name and name not in named:
            named[name] = i
    found = {**named, **by_id}
    page = doc.doc_id or ""
    resolved: dict[str, Reference | None] = {}  # href -> its reference (pages repeat their links)
    enclosing: list[int] = []
    refs: dict[int, Reference] = {}
    parents = doc.parent
    for i, (tag, attrs) in enumerate(zip(doc.tag, doc.attrs, strict=True)):
        if tag == "a" and (href := attrs.get("href")) is not None:
            if href in resolved:
                ref = resolved[href]
            else:
                ref = resolved[href] = _anchored(resolve_href(doc.doc_id, href), page, found, doc)
            if ref is not None:
                refs[i] = ref
                enclosing.append(i)
                continue
        p = parents[i]
        enclosing.append(enclosing[p] if p >= 0 else -1)
    return Links(enclosing, refs, found)


def _anchored(ref: Reference | None, page: str, found: Mapping[str, int], doc: Document) -> Reference | None:
    """``ref`` with its anchor's path when it names an anchor of the page at hand."""
    if ref is None or ref.doc_id != page or not ref.anchor:
        return ref
    node = found.get(ref.anchor)
    return ref if node is None else replace(ref, paths=frozenset({doc.path(node)}))


#: Per page: its links and anchors.
LINKS: Memo[Links] = Memo(_read)


def links(doc: Document) -> Links:
    """The links and anchors of ``doc``, read once per page."""
    return LINKS(doc)


def references(doc: Document, nodes: Iterable[int]) -> tuple[Reference, ...]:
    """The distinct references the text of ``nodes`` makes (the links enclosing any of them), in
    document order, at most :data:`MAX_REFERENCES`."""
    table = links(doc)
    enclosing = table.enclosing
    found = sorted({a for i in nodes if (a := enclosing[i]) >= 0})
    out: dict[Reference, None] = {}
    for a in found:
        out[table.references[a]] = None
        if len(out) >= MAX_REFERENCES:
            break
    return tuple(out)


def path_references(doc: Document, paths: Iterable[Path]) -> tuple[Reference, ...]:
    """:func:`references` of a path set."""
    return references(doc, doc.indices(paths))


def encode_references(refs: Iterable[Reference], doc_id: str | None = None) -> str:
    """References of a unit of page ``doc_id`` as one string (flat metadata), compactly: a JSON
    list of ``["s", anchor, paths?]`` (an anchor of the page itself), ``["p", doc_id, anchor?]``
    (another page) and ``["u", url]`` (external)."""
    page = doc_id or ""
    out: list[list[str]] = []
    for r in refs:
        if r.url is not None:
            out.append(["u", r.url])
        elif r.doc_id == page and r.anchor:
            out.append(["s", r.anchor, encode_paths(r.paths)] if r.paths else ["s", r.anchor])
        else:
            out.append(["p", str(r.doc_id), r.anchor] if r.anchor else ["p", str(r.doc_id)])
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def decode_references(text: str, doc_id: str | None = None) -> tuple[Reference, ...]:
    """Inverse of :func:`encode_references` (``doc_id``: the unit's page); raises
    :class:`PathFormatError` on malformed input."""
    try:
        data = json.loads(text)
        if not isinstance(data, list):
            raise ValueError("not a list")
        out = []
        for item in data:
            if not isinstance(item, list) or not 2 <= len(item) <= 3 or not all(isinstance(x, str) for x in item):
                raise ValueError(f"not a reference: {str(item)[:40]!r}")
            kind, first, *rest = item
            if kind == "u" and not rest:
                out.append(Reference(url=first))
            elif kind == "s":
                out.append(Reference(doc_id or "", first, decode_paths(rest[0]) if rest else frozenset()))
            elif kind == "p":
                out.append(Reference(first, rest[0] if rest else ""))
            else:
                raise ValueError(f"not a reference: {str(item)[:40]!r}")
        return tuple(out)
    except (ValueError, TypeError, RecursionError) as err:
        raise PathFormatError(f"not a reference list: {text[:80]!r} ({err})") from None
