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
    parts: list[str] = []
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


@st.composite
def label_line_html(draw: st.DrawFn) -> str:
    """A line that may or may not be a label line: bold or code, a short phrase, or prose."""
    text = draw(sentence_text())
    kind = draw(st.sampled_from(["strong", "code", "plain", "lead", "long"]))
    if kind == "strong":
        return f"<p><strong>{text}</strong></p>"
    if kind == "code":
        return f"<p><code>{text}</code></p>"
    if kind == "lead":  # a bold word, then prose
        return f"<p><b>Note:</b> {text}</p>"
    if kind == "long":
        return f"<p><b>{' '.join([text] * 12)}</b></p>"
    return f"<p>{text}</p>"


def _idiom(draw: st.DrawFn, depth: int) -> str:
    """The idioms of issue 38: a table titled by a line above it (or with an empty header row),
    a list after its lead-in paragraph (a ``p`` or a ``div`` of inline content, maybe with empty
    anchors before the list), a list written as paragraphs opening with an item mark, a term
    line (maybe as groff's one-row table) over an indented block,
    rows of a term and its description,
    a hidden heading, text in a
    column group, a table drawn with spaces in a ``pre``, a box whose first line is a title line."""
    kinds = [
        "titled-table", "empty-header", "lead-in", "paragraph-list", "term", "rows", "hidden-h", "colgroup",
        "text-table", "box",
    ]  # fmt: skip
    kind = draw(st.sampled_from(kinds))
    if kind == "titled-table":
        table = _table(draw)
        return draw(label_line_html()) + (f'<div class="wrap">{table}</div>' if draw(st.booleans()) else table)
    if kind == "empty-header":
        cols = draw(st.integers(1, 3))
        rows = "".join(
            "<tr>" + "".join(f"<td>{draw(sentence_text())}</td>" for _ in range(cols)) + "</tr>"
            for _ in range(draw(st.integers(1, 3)))
        )
        return f"<table><thead><tr>{'<th></th>' * cols}</tr></thead><tbody>{rows}</tbody></table>"
    if kind == "lead-in":
        para = draw(st.sampled_from(["p", 'div class="para"']))
        anchors = '<a id="i1"></a>' * draw(st.integers(0, 2))
        lead = f"<{para}>{draw(inline_html())}</{para.split()[0]}>"
        if draw(st.booleans()):
            lead = f'<div class="paragraph">{lead}</div>'
        return f"{lead}{anchors}{_list(draw, 1)}"
    if kind == "paragraph-list":  # a list written as paragraphs opening with an item mark, after a colon
        mark = draw(st.sampled_from(["-", "\u2022", "*"]))
        items = "".join(f"<p>{mark} {draw(inline_html())}</p>" for _ in range(draw(st.integers(1, 3))))
        return f"<p>{draw(inline_html())}{draw(st.sampled_from([':', '', '.']))}</p>{items}"
    if kind == "rows":  # term rows: a div of two div, the first a label line, among like rows
        cell = '<div class="c">{}</div>'
        bare = draw(st.booleans())  # the term a paragraph of its own (Haddock) or in a div cell
        return "".join(
            f'<div class="r">{draw(label_line_html()) if bare else cell.format(draw(label_line_html()))}'
            f"{cell.format(draw(inline_html()))}</div>"
            for _ in range(draw(st.integers(1, 3)))
        )
    if kind == "box":  # a sidebar or note titled by its first line, maybe inside wrapper divs
        line = draw(label_line_html()).replace("<p>", f'<p class="{draw(st.sampled_from(["title", "x-title"]))}">', 1)
        if draw(st.booleans()):
            line = f'<div class="titlepage"><div>{line}</div></div>'
        body = _blocks(draw, depth - 1) if depth > 0 else f"<p>{draw(inline_html())}</p>"
        return f'<div class="sidebar">{line}{body}</div>'
    if kind == "term":
        block = draw(st.sampled_from(["blockquote", 'div class="indent"', 'p style="margin-left:17%"']))
        inner = _blocks(draw, depth - 1) if depth > 0 and not block.startswith("p ") else draw(inline_html())
        runs = "".join(f"<{block}>{inner}</{block.split()[0]}>" for _ in range(draw(st.integers(1, 2))))
        line = draw(label_line_html())
        if draw(st.booleans()):  # groff -Thtml: the term line in a one-row table, maybe beside text
            beside = draw(st.one_of(st.just(""), sentence_text()))
            line = f"<table><tr><td>{line}</td><td>{beside}</td></tr></table>"
        return line + runs
    if kind == "hidden-h":
        level = draw(st.integers(1, 6))
        how = draw(st.sampled_from(["hidden", 'style="display:none"', 'aria-hidden="true"']))
        return f"<h{level} {how}>{draw(sentence_text())}</h{level}><p>{draw(inline_html())}</p>"
    if kind == "text-table":  # a table drawn with spaces in a pre, maybe boxed in a table of one cell
        cols = draw(st.integers(2, 3))
        lines = [
            "".join(draw(sentence_text()).ljust(32) for _ in range(cols)).rstrip()
            for _ in range(draw(st.integers(3, 5)))
        ]
        lines.insert(1, "-" * 32 * cols)
        pre = "<pre>" + "\n".join(lines) + "</pre>"
        return f"<table><tr><td>{pre}</td></tr></table>" if draw(st.booleans()) else pre
    return f"<table><colgroup>{draw(sentence_text())}<col></colgroup><tr><td>{draw(sentence_text())}</td></tr></table>"


def _blocks(draw: st.DrawFn, depth: int) -> str:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["h", "p", "p", "list", "dl", "table", "section", "div", "idiom"]))
        if kind == "idiom":
            out.append(_idiom(draw, depth))
        elif kind == "h":
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


# -- pages written in Japanese, Chinese and Korean --------------------------------------
#: Letters -> Han, kana and Hangul characters (:func:`cjk_pages` writes the drawn pages' text in them).
_CJK_LETTERS = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "日本語のテキスト中文句子한국어문장ひらがなカタ設定ファイル系統升級データベース検索結果표시입력출력画面欄",
)
#: Latin sentence ends -> the full-width ones.
_FULL_WIDTH_ENDS = str.maketrans(".!?", "\u3002\uff01\uff1f")


@st.composite
def cjk_pages(draw: st.DrawFn) -> str:
    """A page of :func:`html_pages` whose text (not its markup) is written in Han, kana and Hangul:
    its letters replaced, its spaces dropped or kept, its ``.!?`` full-width or not, some
    sentences kept in Latin letters, so pages mix scripts as Japanese and Chinese manuals do."""
    import re

    page = draw(html_pages())
    spaces = draw(st.sampled_from(["keep", "drop", "some"]))
    ends = draw(st.sampled_from(["full", "latin", "some"]))

    def write(m: re.Match[str]) -> str:
        text = m.group(1)
        if draw(st.integers(0, 4)) == 0:  # a sentence of Latin words among them
            return f">{text}<"
        text = text.translate(_CJK_LETTERS)
        if spaces == "drop" or (spaces == "some" and draw(st.booleans())):
            text = re.sub(r"(?<=\S) (?=\S)", "", text)
        if ends == "full" or (ends == "some" and draw(st.booleans())):
            text = text.translate(_FULL_WIDTH_ENDS)
        return f">{text}<"

    return re.sub(r">([^<>]+)<", write, page)
