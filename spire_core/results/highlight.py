"""Highlighting citations in their source page.

The page is parsed exactly as for indexing (so citation paths address the same nodes) and
the cleaned tree is written back as HTML with each citation's text wrapped in
``<mark class="spire-cite" data-citation="N">``; the first mark of citation ``N`` carries
``id="spire-cite-N"`` and shows ``[N]`` before it, and a numbered legend at the top of the body
links to the anchors.

Marks never cross element boundaries: a citation is marked as runs of adjacent inline
siblings (text, links, emphasis) it covers entirely, descending into block elements, so
the output stays well nested even when citations overlap.

The page is untrusted, and a highlighted page does not call out when it is opened:

- scripts, styles, frames, embedded objects, media, ``<link>``, ``<meta>`` and ``<base>`` are
  dropped at parse time (:data:`~spire_core.reading.parse.DROP_TAGS`);
- no attribute that makes a browser fetch or report is written back, whatever its URL
  (:data:`_FETCHING_ATTRS`: ``src``, ``srcset``, ``poster``, ``background``, ``ping``,
  ``action``, ``manifest``, ...), so images show their ``alt`` text only; forms are written as
  ``<div>`` (nothing can be submitted) and no ``style`` attribute is kept (no CSS ``url()``);
- the head carries a Content-Security-Policy (``default-src 'none'``, inline style only, no
  form action, no base) and ``referrer: no-referrer`` as a second line of defence;
- no event handler (``on*``) or ``srcdoc`` attribute and no URL with a scheme other than
  http(s), mailto, tel or ftp (``javascript:``, ``data:``, ``vbscript:``) in what is kept;
- page-made look-alikes of the highlighter's own output are neutralised: ``spire-*`` class
  names, ``id``/``name`` values and ``data-citation`` attributes from the page are dropped, so
  a page cannot fake a highlight or an anchor of the legend.

Why not a sanitizer library: the output is written from SPIRE's own cleaned tree (every text
and attribute escaped, no markup of the page passed through as a string), so what remains is
an attribute policy. ``nh3`` (ammonia) keeps http(s) ``src`` by default, so it would need
these same rules as an ``attribute_filter`` on top of a second parse and serialisation of
every output; ``lxml_html_clean`` works on lxml trees with its own, broader element
removal and a history of bypasses. Neither removes the need for the rules here, and both
add a dependency; the rules are tested attribute by attribute (``tests/core/test_hostile.py``).
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Mapping, Sequence

from spire_core.document.paths import down_indices
from spire_core.document.tree import INLINE_TAGS, SENTINELS, Document
from spire_core.errors import UnknownPathError
from spire_core.reading.parse import parse_html
from spire_core.values import Citation

log = logging.getLogger(__name__)

VOID_TAGS = frozenset(
    ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"]
)
_ATTR_NAME = re.compile(r"^[^\s\"'>/=\x00-\x1f]+$")
_LEGEND_CHARS = 160
#: Attributes never written back: inline style (CSS can exfiltrate and overlay) and HTML-valued ones.
_UNSAFE_ATTRS = frozenset(["style", "srcdoc", "formaction", "http-equiv"])
#: Attributes holding URLs: kept only for relative URLs and the schemes in :data:`_SAFE_SCHEMES`.
_URL_ATTRS = frozenset(
    ["href", "src", "action", "poster", "background", "cite", "data", "srcset", "ping", "lowsrc", "dynsrc", "longdesc"]
)
_SAFE_SCHEMES = frozenset(["http", "https", "mailto", "tel", "ftp"])
#: Attributes that make a browser fetch or report something when the page is opened (or a
#: form is sent): never written back, whatever the URL.
_FETCHING_ATTRS = frozenset(
    [
        "src", "srcset", "lowsrc", "dynsrc", "poster", "background", "data", "ping", "manifest", "codebase",
        "archive", "classid", "code", "imagesrcset", "action", "formaction", "icon", "profile", "xlink:href",
        "attributionsrc", "itemtype",
    ]
)  # fmt: skip
#: Elements written as another, inert one: a form cannot be submitted from a highlighted page.
_INERT_TAGS = {"form": "div"}
#: What the highlighter itself writes, and a page must not imitate (classes, ids, anchors).
_OWN_PREFIX = "spire-"
#: Served with every highlighted page: nothing is loaded but its own inline style.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'"
#: A URL of a scheme that runs code, anywhere in a value (a list of URLs, a refresh target, an
#: attribute a script reads): such an attribute is dropped, whatever its name.
_SCRIPT_URL = re.compile(r"(?<![A-Za-z0-9+.-])(?:javascript|vbscript|data):", re.IGNORECASE)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
#: A first path segment holding a colon: not a relative reference (RFC 3986, 4.2), so not a kept URL.
_COLON_FIRST = re.compile(r"[^/?#]*:")
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")  # browsers ignore these inside a scheme ("java\tscript:")

STYLE = """
mark.spire-cite { background: #ffe066; color: inherit; padding: 0 .1em; border-radius: 2px;
  box-shadow: 0 0 0 1px #e0b000; }
mark.spire-cite:target { background: #ffb703; }
mark.spire-cite[id] { scroll-margin-top: 3em; }
mark.spire-cite[id]::before { content: "[" attr(data-citation) "]"; font: bold 11px/1 system-ui, sans-serif;
  color: #7a5a00; vertical-align: super; margin-right: .15em; }
.spire-legend { font: 14px/1.4 system-ui, sans-serif; background: #fffbe6; border: 1px solid #e0b000;
  padding: .5em 1em; margin: 0 0 1em 0; }
.spire-legend ol { margin: .3em 0 0 1.4em; padding: 0; }
.spire-legend .spire-missing { color: #888; }
"""


def highlight(
    doc_html: str | bytes,
    citations: Sequence[Citation],
    *,
    doc_id: str | None = None,
    numbers: Sequence[int] | None = None,
) -> str:
    """The page ``doc_html`` as HTML with ``citations`` marked and a legend on top.

    With ``doc_id``, citations of other documents are ignored. Citations are numbered from
    1 in the order given, or ``numbers[i]`` for ``citations[i]`` (distinct positive integers:
    the numbers a reader already saw them under, e.g. ``[3]`` and ``[7]`` of one page); one
    whose paths are not in the page is listed but not marked. Citation ``n``'s first mark is
    the anchor ``#spire-cite-n``.
    """
    if numbers is not None and (
        len(numbers) != len(citations) or len(set(numbers)) != len(numbers) or min(numbers, default=1) < 1
    ):
        raise ValueError("numbers must be distinct positive integers, one for each citation")
    kept = [i for i, c in enumerate(citations) if doc_id is None or c.doc_id == doc_id]
    numbered = [(n if numbers is None else numbers[i], citations[i]) for n, i in enumerate(kept, 1)]
    doc = parse_html(doc_html, doc_id=doc_id, segment=True, boilerplate=True)
    heads = [c for c in doc.children[0] if doc.tag[c] == "head"] if len(doc) else []
    head = range(heads[0], doc.end[heads[0]]) if heads else range(0)
    runs: list[tuple[int, int, int]] = []  # (first sibling, last sibling, citation number)
    quotes: dict[int, str] = {}  # citation number -> the page's words it marks
    for n, cit in numbered:
        try:
            nodes = doc.indices(cit.paths)
        except UnknownPathError as err:
            log.warning("citation %d not highlighted: %s", n, err)
            continue
        covered = {i for i in down_indices(doc, nodes) if i not in head}  # <title> cannot hold marks
        mine = _runs(doc, covered)
        runs.extend((first, last, n) for first, last in mine)
        quotes[n] = " ".join(
            "".join(doc.text[j] for j in range(lo, doc.end[hi]) if doc.tag[j] is None) for lo, hi in mine
        )
    opens, closes = _nest(doc, runs)
    anchored = {n for _, _, n in runs}
    return _serialize(doc, opens, closes, _legend(numbered, anchored, quotes))


def _visible(doc: Document, i: int) -> bool:
    return any(doc.tag[j] is None and doc.text[j].strip() for j in range(i, doc.end[i]))


def _runs(doc: Document, covered: set[int]) -> list[tuple[int, int]]:
    """(first, last) sibling indices of each run of covered inline siblings with visible text."""
    tops = sorted(i for i in covered if doc.parent[i] not in covered)
    out: list[tuple[int, int]] = []
    stack = list(reversed(tops))
    run: list[int] = []

    def close_run() -> None:
        while run and doc.tag[run[-1]] in SENTINELS:
            run.pop()
        while run and doc.tag[run[0]] in SENTINELS:
            run.pop(0)
        if run and any(_visible(doc, i) for i in run):
            out.append((run[0], run[-1]))
        run.clear()

    while stack:
        i = stack.pop()
        tag = doc.tag[i]
        if tag is not None and tag not in INLINE_TAGS:  # a block: mark inside it
            close_run()
            stack.extend(c for c in reversed(doc.children[i]) if c in covered)
            continue
        if run and not _adjacent(doc, run[-1], i):
            close_run()
        run.append(i)
    close_run()
    return out


def _nest(doc: Document, runs: list[tuple[int, int, int]]) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Marks to open before / close after each node, cutting runs of one parent at each
    other's ends so that overlapping citations nest properly."""
    cuts: dict[int, set[int]] = {}  # parent -> sibling positions where some run starts or ends
    for first, last, _ in runs:
        cuts.setdefault(doc.parent[first], set()).update((doc.pos[first], doc.pos[last] + 1))
    segments: dict[tuple[int, int], list[int]] = {}
    for first, last, n in runs:
        parent = doc.parent[first]
        kids = doc.children[parent]
        lo, hi = doc.pos[first], doc.pos[last] + 1
        bounds = sorted(c for c in cuts[parent] if lo < c < hi)
        for a, b in zip([lo, *bounds], [*bounds, hi], strict=True):
            if any(_visible(doc, kids[k]) for k in range(a, b)):
                segments.setdefault((kids[a], kids[b - 1]), []).append(n)
    opens: dict[int, list[int]] = {}
    closes: dict[int, list[int]] = {}
    for (first, last), numbers in segments.items():
        numbers.sort()
        opens.setdefault(first, []).extend(numbers)
        closes.setdefault(last, [])[:0] = reversed(numbers)
    return opens, closes


def _adjacent(doc: Document, a: int, b: int) -> bool:
    """Whether ``b`` is the next sibling of ``a``."""
    return doc.parent[a] == doc.parent[b] and doc.end[a] == b


def _legend(numbered: Sequence[tuple[int, Citation]], anchored: set[int], quotes: Mapping[int, str]) -> str:
    items = []
    for n, cit in numbered:
        text = " ".join(quotes.get(n, "").split()) or " ".join(cit.text.split())
        if len(text) > _LEGEND_CHARS:
            text = text[: _LEGEND_CHARS - 1].rstrip() + "\u2026"
        label = f"[{n}] {html.escape(text, quote=False)}"
        if n in anchored:
            items.append(f'<li><a href="#spire-cite-{n}">{label}</a></li>')
        else:
            items.append(f'<li class="spire-missing">{label} (not found in this page)</li>')
    count = f"{len(numbered)} citation{'s' if len(numbered) != 1 else ''}"
    return f'<div class="spire-legend"><strong>SPIRE: {count}</strong><ol>{"".join(items)}</ol></div>'


def _safe(name: str, value: str) -> bool:
    """Whether attribute ``name=value`` may be served: no event handlers, inline styles or
    script URLs (the page is untrusted and the output may be served from an app's origin)."""
    name = name.lower()
    if not _ATTR_NAME.match(name) or name.startswith("on") or name in _UNSAFE_ATTRS or name in _FETCHING_ATTRS:
        return False
    if name == "data-citation" or (name in ("id", "name") and value.strip().lower().startswith(_OWN_PREFIX)):
        return False
    url = _URL_NOISE.sub("", value)
    if _SCRIPT_URL.search(url):
        return False
    if name in _URL_ATTRS or name.endswith(":href"):
        scheme = _SCHEME.match(url)
        if scheme is None:  # relative, unless a colon comes before any "/", "?" or "#" ("j\ufffdvascript:")
            return _COLON_FIRST.match(url) is None
        return scheme.group(1).lower() in _SAFE_SCHEMES
    return True


def _start_tag(tag: str, attrs: Mapping[str, str]) -> str:
    parts = [_INERT_TAGS.get(tag, tag)]
    for name, value in attrs.items():
        if name.lower() == "class":  # the page's own classes, without any that imitate SPIRE's
            value = " ".join(c for c in value.split() if not c.lower().startswith(_OWN_PREFIX))
            if not value:
                continue
        if _safe(name, value):
            parts.append(f'{name}="{html.escape(value, quote=True)}"')
    return "<" + " ".join(parts) + ">"


def _serialize(doc: Document, opens: dict[int, list[int]], closes: dict[int, list[int]], legend: str) -> str:
    """Write the cleaned tree as HTML (iterative), with marks, style and legend; no sentinels."""
    out: list[str] = ["<!DOCTYPE html>\n"]
    first_mark: set[int] = set()
    head = next((c for c in doc.children[0] if doc.tag[c] == "head"), None) if len(doc) else None
    body = next((c for c in doc.children[0] if doc.tag[c] == "body"), None) if len(doc) else None
    extra_head = (
        f'<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f'<meta name="referrer" content="no-referrer"><style>{STYLE}</style>'
    )

    def open_marks(i: int) -> None:
        for n in opens.get(i, ()):
            anchor = "" if n in first_mark else f' id="spire-cite-{n}"'
            first_mark.add(n)
            out.append(f'<mark class="spire-cite" data-citation="{n}"{anchor}>')

    def close_marks(i: int) -> None:
        out.extend("</mark>" for _ in closes.get(i, ()))

    if not len(doc):
        return f"<!DOCTYPE html>\n<html><head>{extra_head}</head><body>{legend}</body></html>"
    # (index, entering) events; an element's end event closes it and the marks after it
    stack: list[tuple[int, bool]] = [(0, True)]
    while stack:
        i, entering = stack.pop()
        tag = doc.tag[i]
        if not entering:
            assert tag is not None
            if i == head:
                out.append(extra_head)
            out.append(f"</{_INERT_TAGS.get(tag, tag)}>")
            if i == head and body is None:
                out.append(legend)
            close_marks(i)
            continue
        open_marks(i)
        if tag is None:
            out.append(html.escape(doc.text[i], quote=False))
            close_marks(i)
            continue
        if tag in SENTINELS:
            close_marks(i)
            continue
        out.append(_start_tag(tag, doc.attrs[i]))
        if i == 0 and head is None:
            out.append(f"<head>{extra_head}</head>")
        if i == body or (i == 0 and body is None and head is None):
            out.append(legend)
        if tag in VOID_TAGS:
            close_marks(i)
            continue
        stack.append((i, False))
        stack.extend((c, True) for c in reversed(doc.children[i]))
    return "".join(out)
