"""Rendering a path set as Markdown or text, with labels; golden files on real pages."""

from __future__ import annotations

import os
import re
from pathlib import Path as FsPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spire_core import Document, global_context, parse_html, render, sentences
from tests.core.strategies import html_pages, sentence_with

GOLDEN = FsPath(__file__).parent / "golden"

PAGE = """<html><head><title>Cooking guide</title></head><body>
<h1>Cooking</h1>
<h2>Steps</h2>
<ol start="3"><li>Boil <a href="/water">water</a>.</li><li>Add <em>pasta</em>. Stir well.
<ul><li>Use salt.</li><li>Use oil.<ol><li>Olive</li><li>Sunflower</li></ol></li></ul></li><li>Serve.</li></ol>
<h3>Notes</h3>
<p>See the <a href="https://example.org">manual</a> for more.</p>
<dl><dt>al dente</dt><dd>Firm to the bite.</dd></dl>
<pre>  x = 1
    y = 2</pre>
<blockquote><p>Quoted words.</p></blockquote>
<table><caption>Times</caption><tr><th>Shape</th><th>Minutes</th><th>Water</th></tr>
<tr><th>Spaghetti</th><td>9</td><td>Salted</td></tr>
<tr><th rowspan="2">Penne</th><td>11</td><td>Salted | boiling</td></tr>
<tr><td>12</td><td>Unsalted</td></tr></table>
</body></html>"""


@pytest.fixture(scope="module")
def doc() -> Document:
    return parse_html(PAGE)


def test_whole_page_markdown(doc: Document) -> None:
    assert render(doc, [()]) == "\n".join(
        [
            "# Cooking guide",  # the root includes the <head>'s title
            "",
            "# Cooking",
            "",
            "## Steps",
            "",
            "3. Boil water.",
            "4. Add pasta. Stir well.",
            "   - Use salt.",
            "   - Use oil.",
            "     1. Olive",
            "     2. Sunflower",
            "5. Serve.",
            "",
            "### Notes",
            "",
            "See the manual for more.",
            "",
            "al dente",
            ": Firm to the bite.",
            "",
            "```",
            "  x = 1",
            "    y = 2",
            "```",
            "",
            "> Quoted words.",
            "",
            "Times",
            "",
            "| Shape | Minutes | Water |",
            "|---|---|---|",
            "| Spaghetti | 9 | Salted |",
            "| Penne | 11 | Salted \\| boiling |",
            "| Penne | 12 | Unsalted |",
        ]
    )


def test_text_format_has_no_markdown_syntax(doc: Document) -> None:
    text = render(doc, [()], fmt="text")
    assert "#" not in text
    assert "```" not in text and "|---" not in text
    assert "Cooking\n\nSteps\n\n3. Boil water." in text
    assert "  x = 1\n    y = 2" in text


def test_unknown_format_is_rejected(doc: Document) -> None:
    with pytest.raises(ValueError):
        render(doc, [()], fmt="html")


def test_ordered_items_keep_their_original_numbers(doc: Document) -> None:
    serve = sentence_with(doc, "Serve.").paths
    assert render(doc, serve) == "5. Serve."
    sunflower = sentence_with(doc, "Sunflower").paths
    assert render(doc, sunflower).splitlines()[-1] == "     2. Sunflower"


def test_ordered_list_numbering_follows_html() -> None:
    """``start``, ``reversed`` and ``value`` give the numbers a browser shows."""
    doc = parse_html(
        '<ol reversed><li>x</li><li>y</li><li>z</li></ol><ol start="4" reversed><li>four</li><li>three</li></ol>'
        '<ol><li value="7">seven</li><li>eight</li><li value="bad">nine</li></ol><ol start="bad"><li>one</li></ol>'
    )
    assert render(doc, [()]).split("\n") == [
        "3. x",
        "2. y",
        "1. z",
        "4. four",
        "3. three",
        "7. seven",
        "8. eight",
        "9. nine",
        "1. one",
    ]
    assert render(doc, sentence_with(doc, "eight").paths) == "8. eight"


def test_nested_lists_are_indented_under_their_labels(doc: Document) -> None:
    got = render(doc, global_context(doc, sentence_with(doc, "Sunflower").paths))
    assert got == "# Cooking\n\n## Steps\n\n4. Add pasta. Stir well.\n   - Use oil.\n     2. Sunflower"


def test_links_render_as_their_text(doc: Document) -> None:
    got = render(doc, sentence_with(doc, "See the manual for more.").paths)
    assert got == "See the manual for more."
    assert "http" not in render(doc, [()])


def test_headings_render_as_hashes(doc: Document) -> None:
    got = render(doc, global_context(doc, sentence_with(doc, "Firm to the bite.").paths))
    assert got == "# Cooking\n\n## Steps\n\n### Notes\n\nal dente\n: Firm to the bite."


def test_empty_selection_renders_empty(doc: Document) -> None:
    assert render(doc, []) == ""


@pytest.mark.parametrize("inside", ["```", "````", "a ``` b\n```", "``x``", "`"])
def test_page_text_in_pre_cannot_close_the_code_fence(inside: str) -> None:
    doc = parse_html(f"<p>Before.</p><pre>code\n{inside}\nEnd of code</pre><p>After the block.</p>")
    out = render(doc, list(doc.paths()))
    fence = out.split("\n")[2]  # "Before.", "", then the opening fence
    longest = max(len(run) for run in re.findall(r"`+", inside))
    assert set(fence) == {"`"} and len(fence) == max(3, longest + 1)
    body = out.split(fence)[1]
    assert inside in body and "End of code" in body  # the page's backticks stay inside the block
    assert out.endswith(f"{fence}\n\nAfter the block.") and out.count(fence) == 2


def test_code_fence_is_three_backticks_without_a_run_in_the_code() -> None:
    doc = parse_html("<pre>x = 1</pre>")
    assert render(doc, list(doc.paths())) == "```\nx = 1\n```"


def test_labels_wrap_units(doc: Document) -> None:
    first = sentence_with(doc, "Add pasta.").paths
    second = sentence_with(doc, "Stir well.").paths
    got = render(doc, global_context(doc, first | second), labels={"E1": first, "E2": second})
    assert got.endswith("4. <E1>Add pasta.</E1> <E2>Stir well.</E2>")
    assert got.count("<E1>") == got.count("</E1>") == 1
    item = sentence_with(doc, "Add pasta.").begin[:-1]
    assert doc.get(item).tag == "li"
    nested = render(doc, [item], labels={"ITEM": [item], "E1": first})
    assert nested.startswith("4. <ITEM><E1>Add pasta.</E1>")
    assert nested.endswith("Sunflower</ITEM>")


def test_labels_on_unkept_units_leave_no_marker(doc: Document) -> None:
    kept = sentence_with(doc, "Serve.").paths
    other = sentence_with(doc, "Use salt.").paths
    assert render(doc, kept, labels={"E1": other}) == "5. Serve."


# -- tables ----------------------------------------------------------------------------
def table_lines(text: str) -> list[list[str]]:
    """The Markdown tables of ``text``: each a list of its lines (prefix removed)."""
    tables: list[list[str]] = []
    current: list[str] = []
    for line in [*text.split("\n"), ""]:
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            current.append(stripped)
        elif current:
            tables.append(current)
            current = []
    return tables


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def assert_well_formed(text: str) -> None:
    for table in table_lines(text):
        assert len(table) >= 2, table
        widths = {len(cells(line)) for line in table}
        assert len(widths) == 1, table
        assert re.fullmatch(r"\|(---\|)+", table[1]), table


def test_table_keeps_only_kept_cells_under_kept_labels(doc: Document) -> None:
    got = render(doc, global_context(doc, sentence_with(doc, "12").paths))
    assert got.endswith("Times\n\n| Shape | Minutes |\n|---|---|\n| Penne | 12 |")
    assert "Unsalted" not in got and "Spaghetti" not in got and "11" not in got
    assert_well_formed(got)


def test_table_cell_without_its_labels(doc: Document) -> None:
    got = render(doc, sentence_with(doc, "Unsalted").paths)
    assert got == "|  |\n|---|\n| Unsalted |"


def test_two_cells_of_different_rows(doc: Document) -> None:
    picked = sentence_with(doc, "9").paths | sentence_with(doc, "Unsalted").paths
    got = render(doc, global_context(doc, picked))
    table = table_lines(got)[0]
    assert table[0] == "| Shape | Minutes | Water |"
    assert [cells(line) for line in table[2:]] == [["Spaghetti", "9", ""], ["Penne", "", "Unsalted"]]
    assert_well_formed(got)


@pytest.mark.parametrize("fmt", ["markdown", "text"])
def test_a_cell_spanning_into_a_row_that_is_itself_folded_away_still_shows(fmt: str) -> None:
    """Row 1's cell spans into row 2, whose own cell spans on into row 4: row 2 folds into row 4,
    so row 1 must stay (it once folded into row 2 too, and its cell showed nowhere)."""
    doc = parse_html(
        "<table><tr><th>H1</th><th>H2</th></tr>"
        "<tr><td rowspan=2>Spans two rows.</td><td>b1</td></tr>"
        "<tr><td rowspan=3>Spans three.</td></tr><tr><td>x</td></tr><tr><td>Last row.</td></tr></table>"
    )
    picked = frozenset().union(*(sentence_with(doc, t).paths for t in ("Spans two rows.", "Spans three.", "Last row.")))
    got = render(doc, picked, fmt=fmt)  # type: ignore[arg-type]
    assert all(t in got for t in ("Spans two rows.", "Spans three.", "Last row.")), got
    assert got.count("Spans three.") == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(html=html_pages(), data=st.data())
def test_rendered_tables_are_well_formed(html: str, data: st.DataObject) -> None:
    doc = parse_html(html)
    paths = list(doc.paths())
    picked = data.draw(st.frozensets(st.sampled_from(paths), max_size=6))
    text = render(doc, global_context(doc, picked))
    assert_well_formed(text)
    assert "#" not in render(doc, picked, fmt="text")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(html=html_pages(), data=st.data())
def test_a_page_rendered_again_and_again_renders_as_a_fresh_parse_does(html: str, data: st.DataObject) -> None:
    """Table renderings are remembered per page (by kept cells and format): on a page rendered
    many times, in both formats and with its tables also inside a list item, every rendering
    equals the rendering of a fresh parse that remembers nothing."""
    inner = html.split("<body>", 1)[1].rsplit("</body>", 1)[0]
    page = f"<html><body>{inner}<ul><li>In a list: {inner}</li></ul></body></html>"
    warm = parse_html(page)
    paths = list(warm.paths())
    for _ in range(5):
        picked = global_context(warm, data.draw(st.frozensets(st.sampled_from(paths), max_size=8)))
        for fmt in ("markdown", "text"):
            assert render(warm, picked, fmt=fmt) == render(parse_html(page), picked, fmt=fmt)


# -- golden files on real pages --------------------------------------------------------
GOLDEN_CASES = {
    "postgresql-wal.html": [
        "The default value is 200 milliseconds (200ms).",
        "remote_write",
        "archive_mode cannot be enabled when wal_level is set to minimal.",
        "open_sync (write WAL files with open() option O_SYNC)",
    ],
    "python-json.html": [
        "int",
        "Infinite and NaN number values are accepted and output;",
        "the range and precision of JSON numbers",
        "If infile is not specified, read from sys.stdin.",
    ],
    "wikipedia-table.html": [
        "Soissons - Courmelles Airport",
        "LFKY",
        "Château-Thierry / Belleau",
        "Locations shown in bold are as per the airport's AIP page.",
    ],
}


def golden_text(doc: Document, texts: list[str]) -> str:
    parts = []
    for text in texts:
        paths = sentence_with(doc, text).paths
        parts.append(f"=== {text}\n{render(doc, global_context(doc, paths))}\n")
    return "\n".join(parts)


def check_golden(name: str, got: str) -> None:
    """Compare with ``golden/<name>``; ``SPIRE_UPDATE_GOLDEN=1`` rewrites the file instead."""
    file = GOLDEN / name
    if os.environ.get("SPIRE_UPDATE_GOLDEN") == "1":
        file.parent.mkdir(exist_ok=True)
        file.write_text(got, encoding="utf-8")
    assert file.is_file(), f"missing golden file {file}; run with SPIRE_UPDATE_GOLDEN=1"
    assert got == file.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", list(GOLDEN_CASES))
def test_golden_global_context(example_pages: FsPath, page: str) -> None:
    doc = parse_html((example_pages / page).read_bytes(), doc_id=page)
    got = golden_text(doc, GOLDEN_CASES[page])
    assert_well_formed(got)
    check_golden(page.replace(".html", ".md"), got)


def test_golden_pages_have_titles(example_pages: FsPath) -> None:
    titles = {page: parse_html((example_pages / page).read_bytes()).title for page in GOLDEN_CASES}
    assert titles == {
        "postgresql-wal.html": "20.5. Write Ahead Log",
        "python-json.html": "json — JSON encoder and decoder",
        "wikipedia-table.html": "List of airports in France",
    }
    for page in GOLDEN_CASES:
        assert len(sentences(parse_html((example_pages / page).read_bytes()))) > 100


def test_line_breaks_and_blocks_inside_pre_are_line_breaks_in_the_fence() -> None:
    """A <br> in code, and a block element inside <pre>, start a new line (no words welded together)."""
    doc = parse_html("<pre>alpha beta<h2>3.5.<br>Dr. Smith costs.</h2>x<br>y</pre>")
    shown = render(doc, frozenset(doc.paths()))
    assert shown == "```\nalpha beta\n3.5.\nDr. Smith costs.\nx\ny\n```"


LISTS = """<title>Lists</title><h2>Items</h2><ol start="7"><li>Lead one.<ul><li>Inner a.</li><li><p>Para b.</p>
<ol reversed><li>Deep c.</li><li><h4>Head d</h4><p>After d.</p></li></ol></li></ul></li>
<li><div><p>No lead.</p></div><pre>code
line</pre></li><li><table><tr><th>H</th></tr><tr><td>Cell e.</td></tr></table></li></ol>
<dl><dt>Term</dt><dd><p>Def f.</p><blockquote><p>Quote g.</p><ul><li>In quote h.</li></ul></blockquote></dd></dl>"""


@pytest.mark.parametrize("page", [PAGE, LISTS])
def test_remembered_subtrees_render_as_a_fresh_rendering_does(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole block subtree is rendered from its remembered blocks (``SUBTREE_NODES``): on a page
    rendered again and again (every sentence's context, pairs of sentences, bare sentences whose
    list item's marker waits for them), each rendering equals one that remembers nothing."""
    import spire_core.document.render as rendering

    warm = parse_html(page)
    sents = sentences(warm)
    picks = [s.paths for s in sents] + [a.paths | b.paths for a in sents for b in sents[::3]]
    picks += [global_context(warm, p) for p in picks]
    got = [render(warm, p, fmt=fmt) for _ in range(2) for p in picks for fmt in ("markdown", "text")]
    assert len(rendering._SUBTREES(warm)) > 0  # (whole subtrees were remembered)
    monkeypatch.setattr(rendering, "SUBTREE_NODES", 0)
    cold = parse_html(page)
    assert got == [render(cold, p, fmt=fmt) for _ in range(2) for p in picks for fmt in ("markdown", "text")]
