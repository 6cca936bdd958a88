"""Tables drawn with spaces in a ``pre`` are read as tables; a table of one cell is a box
(:mod:`spire_core.reading.text_tables`, :func:`spire_core.document.render.boxed`)."""

from __future__ import annotations

import pytest

from spire_core import global_context, parse_html, parse_page, render, sentences
from tests.core.strategies import sentence_with

DEBUG_LEVELS = """  Name         Value    Meaning
  ---------------------------------------------------------
  MATCH            1    Brief information about font matching
  CONFIG        1024    Monitor which config files are loaded
  MATCH2        4096    Display font-matching transformation
"""
FONT_NAMES = """  Name                            Meaning
  ----------------------------------------------------------
  Times-12                        12 point Times Roman
  Monospace:matrix=1 .1 0 1       The users preferred monospace font
                                  with artificial obliquing
"""


def shown(page: str, text: str) -> str:
    doc = parse_html(f"<title>Fonts</title><h2>Debugging</h2>{page}")
    return render(doc, global_context(doc, sentence_with(doc, text).paths))


@pytest.mark.parametrize(
    "wrap", ["<pre>{}</pre>", "<pre><code>{}</code></pre>", "<table><tr><td><pre>{}</pre></td></tr></table>"]
)
def test_a_row_of_a_text_table_shows_its_labels(wrap: str) -> None:
    ctx = shown(wrap.format(DEBUG_LEVELS), "1024")
    assert "| Name | Value |" in ctx and "| CONFIG | 1024 |" in ctx  # the value with its row's name and its column
    assert "MATCH2" not in ctx  # one row, not the block


def test_each_cell_is_a_sentence_and_a_wrapped_line_continues_its_row() -> None:
    doc = parse_html(f"<pre>{FONT_NAMES}</pre>")
    texts = [s.text for s in sentences(doc)]
    assert "The users preferred monospace font with artificial obliquing" in texts
    assert "Times-12" in texts and "12 point Times Roman" in texts


def test_a_text_table_in_markdown_is_read_too() -> None:
    doc = parse_page("# Fonts\n\n```\n" + DEBUG_LEVELS + "```\n", doc_id="fonts.md")
    ctx = render(doc, global_context(doc, sentence_with(doc, "Monitor which config files are loaded").paths))
    assert "| Name | Meaning |" in ctx and "| CONFIG | Monitor which config files are loaded |" in ctx


@pytest.mark.parametrize(
    "pre",
    [
        " a | b\n---+---\n 1 | x\n 2 | y\n",  # a psql result: columns apart by |
        "def f():\n    ----------\n    return 1\n    return 2\n",  # no two fields over the rule
        "Name   Value\n\nMATCH   1\nCONFIG   1024\n",  # no rule under the header
        "Name   Value\n------------\nMATCH   1\n",  # one row: a heading over a rule
        "     Value\n------------\n   continued\nMATCH   1\n",  # a row that continues nothing
        "Name   Value\n" + "-" * 5000 + "x\nMATCH   1\nCONFIG   2\n",  # a near-rule (read in linear time)
        "  ".join(["col"] * 33) + "\n-----\n" + "  ".join(["x"] * 33) + "\n" + "  ".join(["y"] * 33) + "\n",
    ],
)
def test_text_that_draws_no_table_stays_preformatted(pre: str) -> None:
    doc = parse_html(f"<pre>{pre}</pre>")
    assert "table" not in doc.tag and "pre" in doc.tag
    assert render(doc, list(doc.paths())).startswith("```")


def test_a_pre_with_markup_inside_is_left_as_it_is() -> None:
    doc = parse_html("<pre><b>Name</b>   Value\n----------\nMATCH   1\nCONFIG   1024\n</pre>")
    assert "table" not in doc.tag


def test_a_table_of_one_cell_is_rendered_as_what_it_holds() -> None:
    doc = parse_html("<p>Before.</p><table><tr><td><pre>make\nmake install</pre></td></tr></table><p>After.</p>")
    out = render(doc, list(doc.paths()))
    assert "```\nmake\nmake install\n```" in out and "|" not in out


def test_a_table_of_one_cell_with_a_caption_stays_a_table() -> None:
    doc = parse_html("<table><caption>Totals</caption><tr><td>42 units</td></tr></table>")
    out = render(doc, list(doc.paths()))
    assert "Totals" in out and "| 42 units |" in out
