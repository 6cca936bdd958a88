"""Markdown pages through the same tree: CommonMark (plus GFM tables) to HTML, then the HTML parse.

A Markdown page is rendered to HTML by ``markdown-it-py`` (the CommonMark reference
behaviour, with pipe tables and strikethrough enabled and raw HTML passed through, as on
GitHub) and then parsed by :func:`~spire_core.parse.parse_html` (through
:func:`~spire_core.parse.parse_markdown`, or :func:`~spire_core.parse.parse_page`, which
recognises Markdown with :func:`is_markdown`), so headings, nested lists,
tables and fenced code get the same global context, paths and citations as an HTML page.
Paths address the HTML tree built from the Markdown, so they are deterministic: the same
text gives the same paths.

A leading YAML front-matter block (``---`` ... ``---``, as in Jekyll, Hugo and model cards)
is not page text: it is dropped, and its ``title:`` (when present) becomes the page's
``<title>``.
"""

from __future__ import annotations

import html as html_lib
import re
from functools import cache

from markdown_it import MarkdownIt

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)
_QUOTES = "\"'"
#: A whole HTML document (not a Markdown page that embeds some HTML).
_HTML_DOCUMENT = re.compile(r"\A(?:\ufeff)?\s*(?:<\?xml|<!doctype|<html|<head|<body)", re.I)
#: Raw blocks whose lines are not Markdown (``# comment`` in a ``<pre>`` is no heading).
_RAW_HTML_BLOCKS = re.compile(r"<(pre|script|style|textarea)\b.*?</\1\s*>", re.I | re.S)
_LIST_ITEM = r"[ \t]{0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S"
#: Block structure only Markdown has: an ATX heading, a code fence, a table delimiter row,
#: a setext underline, or two consecutive list items.
_MARKDOWN_BLOCK = re.compile(
    r"^[ \t]{0,3}#{1,6}[ \t]+\S"
    r"|^[ \t]{0,3}(?:```|~~~)"
    r"|^[ \t]{0,3}\|?[ \t]*:?-{3,}:?[ \t]*\|"
    r"|^[^\s|].*\n[ \t]{0,3}={3,}[ \t]*$"
    rf"|^{_LIST_ITEM}.*\n{_LIST_ITEM}",
    re.M,
)


@cache
def _commonmark() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def is_markdown(text: str) -> bool:
    """Whether ``text`` reads as a Markdown page: Markdown block structure, and not a whole HTML document.

    Markdown that embeds HTML (a logo ``<p align="center">``, ``<br>`` in a cell) is still
    Markdown; prose without headings, fences, tables or lists is left to plain text.
    """
    if _HTML_DOCUMENT.match(text):
        return False
    return _MARKDOWN_BLOCK.search(_RAW_HTML_BLOCKS.sub("", text)) is not None


def markdown_to_html(text: str) -> str:
    """The HTML page a Markdown page is parsed as: the CommonMark rendering of ``text`` in a document."""
    head = ""
    text = text.removeprefix("\ufeff")  # a BOM left by reading UTF-8-with-BOM as UTF-8
    front = _FRONT_MATTER.match(text)
    if front is not None:
        text = text[front.end() :]
        title = _FRONT_MATTER_TITLE.search(front.group(1))
        if title is not None:
            head = f"<head><title>{html_lib.escape(title.group(1).strip(_QUOTES))}</title></head>"
    return f"<html>{head}<body>{_commonmark().render(text)}</body></html>"
