"""Hypothesis strategies for small HTML pages, and helpers shared by the core tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypothesis import strategies as st

from spire_core import Document, Path, Sentence, sentences

WORDS = (
    "alpha",
    "beta",
    "Gamma",
    "delta",
    "Dr.",
    "e.g.",
    "U.S.",
    "3.14",
    "3.11.2",
    "p.m.",
    "cafe",
    "Zoë",
    "3\xa0km",
    "naïve—",
    "x",
    "(note)",
    '"quoted"',
)
ENDS = (".", "?", "!", ":", "", ";")


@st.composite
def sentence_text(draw: st.DrawFn) -> str:
    """A few words, capitalised, with some final punctuation (possibly none)."""
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
    return " ".join(words).capitalize() + draw(st.sampled_from(ENDS))


@st.composite
def inline_html(draw: st.DrawFn) -> str:
    """One to three sentences, some wrapped in ``a``/``em``/``code``, cut by ``br``, or holding a block."""
    parts: list[str] = []
    for text in draw(st.lists(sentence_text(), min_size=1, max_size=3)):
        kind = draw(st.sampled_from(["plain", "plain", "a", "em", "split", "br", "block"]))
        if kind == "a":
            parts.append(f'<a href="#x">{text}</a>')
        elif kind == "em":
            parts.append(f"<em>{text}</em>")
        elif kind == "split":  # an inline element across a sentence boundary
            cut = draw(st.integers(1, max(1, len(text) - 1)))
            parts.append(f"{text[:cut]}<code>{text[cut:]}")
            parts.append("</code>")
        elif kind == "block":  # a block inside inline markup (invalid, but common)
            parts.append(f'<a href="#y">{text} <div>{draw(sentence_text())}</div> tail</a>')
        elif kind == "br":
            parts.append(f"{text}<br>")
        else:
            parts.append(text)
    return " ".join(parts)


def _list(draw: st.DrawFn, depth: int) -> str:
    tag = draw(st.sampled_from(["ul", "ol"]))
    items = []
    for _ in range(draw(st.integers(1, 3))):
        label = draw(inline_html())
        nested = _list(draw, depth - 1) if depth > 0 and draw(st.booleans()) else ""
        items.append(f"<li>{label}{nested}</li>")
    return f"<{tag}>{''.join(items)}</{tag}>"


def _dl(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        parts.extend(f"<dt>{draw(sentence_text())}</dt>" for _ in range(draw(st.integers(1, 2))))
        parts.extend(f"<dd>{draw(inline_html())}</dd>" for _ in range(draw(st.integers(1, 2))))
    return f"<dl>{''.join(parts)}</dl>"


def _table(draw: st.DrawFn) -> str:
    rows = draw(st.integers(1, 4))
    cols = draw(st.integers(1, 3))
    out = ["<table>"]
    if draw(st.booleans()):
        out.append(f"<caption>{draw(sentence_text())}</caption>")
    header = draw(st.sampled_from(["th-row", "thead", "none"]))
    for r in range(rows):
        cells = []
        for c in range(cols):
            tag = "th" if (r == 0 and header != "none") or (c == 0 and draw(st.booleans())) else "td"
            span = ""
            if draw(st.integers(0, 4)) == 0:
                span = f' rowspan="{draw(st.integers(2, 3))}"'
            elif draw(st.integers(0, 4)) == 0:
                span = f' colspan="{draw(st.integers(2, 3))}"'
            cells.append(f"<{tag}{span}>{draw(sentence_text())}</{tag}>")
        row = f"<tr>{''.join(cells)}</tr>"
        out.append(f"<thead>{row}</thead>" if r == 0 and header == "thead" else row)
    out.append("</table>")
    return "".join(out)


def _blocks(draw: st.DrawFn, depth: int) -> str:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["h", "p", "p", "list", "dl", "table", "section", "div"]))
        if kind == "h":
            level = draw(st.integers(1, 6))
            out.append(f"<h{level}>{draw(sentence_text())}</h{level}>")
        elif kind == "p":
            lead_in = draw(st.booleans())
            out.append(f"<p>{draw(inline_html())}{' Items:' if lead_in else ''}</p>")
        elif kind == "list":
            out.append(_list(draw, 2))
        elif kind == "dl":
            out.append(_dl(draw))
        elif kind == "table":
            out.append(_table(draw))
        elif depth > 0:
            out.append(f"<{kind}>{_blocks(draw, depth - 1)}</{kind}>")
    return "".join(out)


@st.composite
def html_pages(draw: st.DrawFn) -> str:
    """A small page: optional ``<title>``, nested sections with headings, lists, dl and tables."""
    title = f"<head><title>{draw(sentence_text())}</title></head>" if draw(st.booleans()) else ""
    return f"<html>{title}<body>{_blocks(draw, 2)}</body></html>"


def path_subsets(doc: Document, max_size: int = 6) -> st.SearchStrategy[frozenset[Path]]:
    """Subsets of the document's paths."""
    paths = list(doc.paths())
    return st.frozensets(st.sampled_from(paths), max_size=max_size)


# -- helpers ---------------------------------------------------------------------------
def tree(doc: Document, path: Path = ()) -> Any:
    """The materialised (sub)tree at ``path``: ``(tag, [children])`` or the text of a text node.

    Iterative, so it is usable on very deep documents.
    """
    if not len(doc):
        return None
    result: list[Any] = []
    stack: list[tuple[Path, list[Any]]] = [(path, result)]
    while stack:
        p, into = stack.pop()
        node = doc.get(p)
        if node.is_text:
            into.append(node.text)
            continue
        kids: list[Any] = []
        into.append((node.tag, kids))
        stack.extend((c, kids) for c in reversed(node.children))
    return result[0]


def sentence_with(doc: Document, text: str) -> Sentence:
    """The unique sentence of ``doc`` whose text is ``text`` (a text search, never an index)."""
    found = [s for s in sentences(doc) if s.text == text]
    assert len(found) == 1, f"{len(found)} sentences read {text!r}"
    return found[0]


def tags(doc: Document, paths: Iterable[Path]) -> set[str | None]:
    """The tags of the nodes at ``paths`` (``None`` for text nodes)."""
    return {doc.get(p).tag for p in paths}
