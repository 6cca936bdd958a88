"""Inline text (issue 50): what a page's markup becomes in sentences, renderings, titles and highlights."""

from __future__ import annotations

import pytest

from spire_core import Citation, Document, Path, highlight, parse_html, render, sentences
from spire_core.indexing.units import seeds


def read(page: str) -> list[str]:
    return [s.text for s in sentences(parse_html(page, doc_id="p"))]


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        # superscripts keep their number: ^ and the script, parenthesised when more than one token
        ("<p>The maximum number of rows in a table is 2<sup>64</sup>.</p>",
         "The maximum number of rows in a table is 2^64."),
        ("<p>Sorting is O(n<sup>2</sup>) at worst.</p>", "Sorting is O(n^2) at worst."),
        ("<p>The limit is 2<sup>31</sup>-1 bytes.</p>", "The limit is 2^31-1 bytes."),
        ("<p>A value of 10<sup>-6</sup> is small.</p>", "A value of 10^-6 is small."),
        ("<p>It grows as x<sup>n+1</sup> here.</p>", "It grows as x^(n+1) here."),
        ("<p>Tower 2<sup>2<sup>n</sup></sup> grows.</p>", "Tower 2^(2^n) grows."),
        # subscripts: _ and the script; a formula's counts stay (H2O, CO2)
        ("<p>Let x<sub>i</sub> be the i-th value and log<sub>2</sub> n the depth.</p>",
         "Let x_i be the i-th value and log_2 n the depth."),
        ("<p>Water is H<sub>2</sub>O and CO<sub>2</sub> is a gas; Ca(OH)<sub>2</sub> too.</p>",
         "Water is H2O and CO2 is a gas; Ca(OH)2 too."),
        ("<p>Take a<sub>i+1</sub> next.</p>", "Take a_(i+1) next."),
        # superscripts read as part of their word stay as written
        ("<p>In the 19<sup>th</sup> century, the 1<sup>er</sup> and M<sup>me</sup> Curie.</p>",
         "In the 19th century, the 1er and Mme Curie."),
        ("<p>Windows<sup>®</sup> and Java<sup>TM</sup> and a note<sup>*</sup>.</p>",
         "Windows® and JavaTM and a note*."),
        ("<p>As shown before<sup>[1]</sup>, it holds.</p>", "As shown before[1], it holds."),
        # an image in running text is its alt text
        ("<p>Press <img src='b.png' alt='the red button'> to stop.</p>", "Press the red button to stop."),
        ("<p>Press <a href='#'><img alt='Stop'></a> now.</p>", "Press Stop now."),
        # a line break separates words; wbr and soft hyphens join a word and leave no trace
        ("<p>First line<br>second line.</p>", "First line second line."),
        ("<p>An inter<wbr>national inter&shy;national co\u00adoperation.</p>",
         "An international international cooperation."),
        ("<p>A long <em>inter\u00ad</em>national word.</p>", "A long international word."),
        # MathML: its TeX source (alttext, else a TeX annotation), else its text with scripts marked
        ("<p>Euler: <math alttext='e^{i\\pi}+1=0'><mi>e</mi></math> holds.</p>", "Euler: e^{i\\pi}+1=0 holds."),
        ("<p>Let <math><semantics><mi>x</mi><annotation encoding='application/x-tex'>\\alpha</annotation>"
         "</semantics></math> be.</p>", "Let \\alpha be."),
        ("<p>Then <math><msup><mi>n</mi><mn>2</mn></msup></math> steps.</p>", "Then n^2 steps."),
        ("<p>Half is <math><mfrac><mn>1</mn><mn>2</mn></mfrac></math> here.</p>", "Half is 1/2 here."),
    ],
)  # fmt: skip
def test_inline_markup_reads_as_the_page_shows_it(page: str, expected: str) -> None:
    assert read(page) == [expected]


def test_a_standalone_image_is_no_sentence_but_a_cells_image_is_its_text() -> None:
    page = (
        "<p><a href='/'><img alt='Build status'></a> <img alt='PyPI version'></p><p>Real text here.</p>"
        "<table><tr><th>Feature</th><th>Supported</th></tr><tr><td>Joins</td><td><img alt='Yes'></td></tr></table>"
    )
    got = read(page)
    assert "Real text here." in got and "Yes" in got
    assert not any("Build status" in t for t in got)
    assert read("<p><img alt=''> Decorative.</p>") == ["Decorative."]


def test_an_alt_that_is_a_file_name_is_no_text() -> None:
    """MediaWiki gives an image without alt its file name as alt: a photo column's cells stay empty."""
    page = (
        "<table><tr><th>Park</th><th>Image</th><th>Established</th></tr>"
        "<tr><td>Nuuksio</td><td><img alt='Mustalampi Lake in Nuuksio.jpg' src='a.jpg'></td><td>1994</td></tr>"
        "<tr><td>Oulanka</td><td><img alt='FI-Oulanka NP1.JPG'></td><td>1956</td></tr></table>"
        "<p>See <img alt='diagram.svg'> and <img alt='the map'> here.</p>"
    )
    got = read(page)
    assert not any(".jpg" in t.casefold() or "diagram" in t for t in got)
    assert "See and the map here." in got
    assert read("<table><tr><td>Joins</td><td><img alt='Yes'></td></tr></table>")[-1] == "Yes"


def test_a_line_break_in_a_heading_separates_the_title_words() -> None:
    doc = parse_html("<h1>Release<br>notes</h1><p>Text.</p>")
    assert doc.title == "Release notes"


def test_embedded_cited_and_highlighted_text_agree() -> None:
    """What is embedded (a unit's text), what is cited (the sentence rendered) and what the
    highlighted page marks read the same number."""
    page = (
        "<html><head><title>Limits</title></head><body><p>A table holds at most 2<sup>64</sup> rows.</p></body></html>"
    )
    doc = parse_html(page, doc_id="limits.html")
    [sentence] = [s for s in sentences(doc) if "rows" in s.text]
    assert sentence.text == "A table holds at most 2^64 rows."
    assert render(doc, sentence.paths) == "A table holds at most 2^64 rows."
    assert any("2^64 rows" in u.text for u in seeds(doc, unit="sentence"))
    assert any("2^64 rows" in u.text for u in seeds(doc, unit="passage"))
    marked = highlight(page, [Citation("limits.html", sentence.paths, sentence.text)], doc_id="limits.html")
    assert "2<sup>^64</sup> rows" in marked
    assert "[1] A table holds at most 2^64 rows." in marked


def test_paths_stay_those_of_the_markup() -> None:
    """Rewriting adds text inside an element, never an element: every element keeps its path."""
    marked = parse_html("<p>A 2<sup>x+1</sup> b <img alt='c'> d.</p><p>Next.</p>")
    plain = parse_html("<p>A 2<span>x+1</span> b <img> d.</p><p>Next.</p>")

    def elements(doc: Document) -> list[tuple[Path, str | None]]:
        return [(p, doc.get(p).tag) for p in doc.paths() if doc.get(p).tag is not None]

    assert [(p, "span" if t == "sup" else t) for p, t in elements(marked)] == elements(plain)
    assert [s.text for s in sentences(marked)] == ["A 2^(x+1) b c d.", "Next."]
