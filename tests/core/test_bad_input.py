"""Bad input: encodings, binary data, size limits, empty pages, deep nesting, malformed and huge HTML."""

from __future__ import annotations

import codecs
import json
import sys

import pytest

from spire_core import (
    HTML,
    DocumentTooLargeError,
    EmptyDocumentError,
    NotHTMLError,
    SpireError,
    global_context,
    parse_html,
    parse_page,
    render,
    sentences,
)
from spire_core.document.tree import SENTENCE_BEG
from spire_core.reading.decoding import DEFAULT_MAX_BYTES
from spire_core.reading.parse import MAX_DEPTH

PAGE = "<html><body><h2>Menu</h2><p>Café “crème” costs 3 € today. Naïve guests pay too.</p></body></html>"
EXPECTED = ["Menu", "Café “crème” costs 3 € today.", "Naïve guests pay too."]


def texts(html: str | bytes) -> list[str]:
    return [s.text for s in sentences(parse_html(html))]


# -- encodings -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (codecs.BOM_UTF8 + PAGE.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF16_LE + PAGE.encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + PAGE.encode("utf-16-be"), "utf-16-be"),
        (PAGE.encode("utf-8"), "utf-8"),
    ],
)
def test_byte_order_marks(data: bytes, encoding: str) -> None:
    doc = parse_html(data)
    assert doc.encoding == encoding
    assert doc.decode_errors == 0
    assert [s.text for s in sentences(doc)] == EXPECTED
    assert "\ufeff" not in render(doc, [()])


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("page", [PAGE, "<p>日本語のページです。二つ目の文。</p>", "\n\n<!doctype html><p>Ok.</p>"])
def test_utf16_without_a_bom_is_detected(codec: str, page: str) -> None:
    doc = parse_page(page.encode(codec), doc_id="u16")
    assert doc.encoding == codec
    assert [s.text for s in sentences(doc)] == texts(page)


def test_nul_laden_binary_is_still_not_html() -> None:
    with pytest.raises(NotHTMLError):
        parse_page(b"\x00\x00\x01\x00" * 500)


def test_meta_charset_windows_1252() -> None:
    page = PAGE.replace("<html>", '<html><head><meta charset="windows-1252"></head>')
    doc = parse_html(page.encode("cp1252"))
    assert doc.encoding == "windows-1252"
    assert doc.decode_errors == 0
    assert [s.text for s in sentences(doc)] == EXPECTED


def test_meta_http_equiv_latin1_is_read_as_windows_1252() -> None:
    """Browsers read a declared ISO-8859-1 page as windows-1252 (curly quotes, euro sign)."""
    page = PAGE.replace(
        "<html>", '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"></head>'
    )
    doc = parse_html(page.encode("cp1252"))
    assert doc.encoding == "windows-1252"
    assert doc.decode_errors == 0
    assert [s.text for s in sentences(doc)] == EXPECTED


def test_declared_utf16_in_ascii_bytes_is_utf8() -> None:
    """A <meta> found by reading bytes as ASCII cannot be telling the truth about UTF-16."""
    doc = parse_html('<html><head><meta charset="utf-16"></head><body><p>Hello wörld.</p></body></html>'.encode())
    assert doc.encoding == "utf-8"
    assert [s.text for s in sentences(doc)] == ["Hello wörld."]


def test_unknown_charset_falls_back_to_utf8_with_a_warning() -> None:
    doc = parse_html(b'<meta charset="x-no-such-charset"><p>Plain text.</p>')
    assert doc.encoding == "utf-8"
    assert any("x-no-such-charset" in w for w in doc.warnings)
    assert [s.text for s in sentences(doc)] == ["Plain text."]


def test_invalid_utf8_is_replaced_counted_and_kept() -> None:
    # UTF-8 (the caf\xc3\xa9) with corrupt sequences: replaced, not re-detected as a legacy encoding
    data = b"<p>Good start here. Bad caf\xc3\xa9 \xff\xfe bytes and \xc3( more. Good end.</p>"
    doc = parse_html(data)
    assert doc.decode_errors == 3
    assert any("replaced" in w for w in doc.warnings)
    got = [s.text for s in sentences(doc)]
    assert got[0] == "Good start here."
    assert got[-1] == "Good end."
    assert "\ufffd\ufffd bytes and \ufffd( more." in got[1]


def test_valid_bytes_have_no_decode_warnings() -> None:
    doc = parse_html(PAGE.encode())
    assert doc.decode_errors == 0 and doc.warnings == []


# -- binary and oversized input --------------------------------------------------------
@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00",
        b"\x00\x01\x02\x03" * 100,
    ],
    ids=["pdf", "png", "nul-bytes"],
)
def test_binary_input_is_not_html(data: bytes) -> None:
    with pytest.raises(NotHTMLError):
        parse_html(data)


def test_not_html_error_is_a_spire_value_error() -> None:
    with pytest.raises(SpireError):
        parse_html(b"%PDF-1.4")
    with pytest.raises(ValueError):
        parse_html(b"%PDF-1.4")


def test_too_large_input() -> None:
    page = "<p>" + "x" * 500 + "</p>"
    with pytest.raises(DocumentTooLargeError) as info:
        parse_html(page.encode(), max_bytes=100)
    assert info.value.size == len(page) and info.value.limit == 100
    with pytest.raises(DocumentTooLargeError):
        parse_html(page, max_bytes=100)
    assert parse_html(page, max_bytes=len(page)).has_content()  # the limit itself is allowed


# -- empty pages -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "page",
    [
        "",
        "   \n\t  ",
        "<!-- only a comment -->",
        b"",
        b"\xef\xbb\xbf",
        "<html><head><title>Only a title</title></head></html>",
    ],
    ids=["empty", "whitespace", "comment", "empty-bytes", "bom-only", "title-only"],
)
def test_empty_pages_have_no_content(page: str | bytes) -> None:
    doc = parse_html(page)
    assert not doc.has_content()
    assert sentences(doc) == []
    assert render(doc, global_context(doc, [])) in ("", "# Only a title")
    assert next(iter(doc.paths())) == ()


def test_script_only_page_has_no_content() -> None:
    assert not parse_html("<html><body><script>document.write('hi')</script></body></html>").has_content()


def test_require_content_names_the_empty_document() -> None:
    with pytest.raises(EmptyDocumentError, match=r"blank\.html"):
        parse_html("<html><body>  <!-- nothing --> </body></html>", doc_id="blank.html", require_content=True)
    assert parse_html("<p>Some text.</p>", require_content=True).has_content()


# -- deep nesting ----------------------------------------------------------------------
DEPTH = 5000


def test_deeply_nested_page() -> None:
    """5,000 nested divs: the fallback tokenizer builds it, and nothing recurses."""
    limit = sys.getrecursionlimit()
    page = "<html><head><title>Deep</title></head><body><h2>Top</h2>" + "<div>" * DEPTH
    page += "<p>Deep text is here. And a second sentence.</p>" + "</div>" * DEPTH + "<p>After.</p></body></html>"
    doc = parse_html(page)
    assert any("fallback" in w for w in doc.warnings)
    ss = sentences(doc)
    assert [s.text for s in ss] == ["Top", "Deep text is here.", "And a second sentence.", "After."]
    deepest = ss[2]
    assert limit < DEPTH and len(deepest.begin) <= MAX_DEPTH + 1  # deeper elements are placed at MAX_DEPTH
    got = render(doc, global_context(doc, deepest.paths, HTML))
    assert got == "# Deep\n\n## Top\n\nAnd a second sentence."
    assert sys.getrecursionlimit() == limit


def test_deep_inline_nesting() -> None:
    page = "<p>Start here. " + "<span>" * DEPTH + "Deep inline words. More." + "</span>" * DEPTH + " End.</p>"
    assert texts(page) == ["Start here.", "Deep inline words.", "More.", "End."]


@pytest.mark.parametrize("control", ["\f", "\x0b", "\x01", "\x1f", "\x7f"])
def test_control_characters_on_a_deep_page_parse(control: str) -> None:
    """The deep-nesting builder handed a form feed to lxml: ``ValueError: All strings must be
    XML compatible`` (issue 36, all 18 untyped crashes of the audit's 4,000 pages)."""
    doc = parse_html("<i>" * 2047 + f"a{control}b")
    assert any("fallback" in w for w in doc.warnings)
    assert [" ".join(s.text.split()) for s in sentences(doc)] in (["a b"], ["ab"])
    deep_attr = parse_html(f'<i title="x{control}y">' * 2047 + "Words here.")
    assert [s.text for s in sentences(deep_attr)] == ["Words here."]


# -- foreign content ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("page", "expected"),
    [
        # an unclosed <svg>: browsers show the paragraph, as HTML after the svg
        ("<p>Before.</p><svg><p>Visible in browsers.</p>", ["Before.", "Visible in browsers."]),
        ("<p>Before.</p><svg><g><text>label</text><div>Out.</div>tail.</g></svg><p>After.</p>",
         ["Before.", "Out.", "tail.", "After."]),
        ("<svg><circle/></svg><p>After a closed svg.</p>", ["After a closed svg."]),
        # an HTML integration point: its HTML stays inside the (dropped) svg, as in browsers
        ("<svg><foreignObject><p>Inside.</p></foreignObject></svg><p>Out.</p>", ["Out."]),
        ("<svg><font color=red>Broke out.</font></svg>", ["Broke out."]),
        ("<svg><font>Stays.</font></svg><p>Out.</p>", ["Out."]),
        # MathML is inline text (its TeX annotation hidden, as in browsers); a block in it is still read
        ("<p>Let <math><semantics><mi>x</mi><annotation>\\alpha</annotation></semantics></math> be.</p>",
         ["Let x be."]),
        ("<p>Then <math><mrow><mi>y</mi><mo>=</mo><mn>2</mn></mrow></math>.</p><math><div>Broke.</div></math>",
         ["Then y=2.", "Broke."]),
    ],
)  # fmt: skip
def test_foreign_content_is_read_as_browsers_show_it(page: str, expected: list[str]) -> None:
    assert texts(page) == expected


def test_svg_breakout_on_a_deep_page() -> None:
    page = "<div>" * 3000 + "<svg><p>Deep breakout.</p>"
    assert texts(page) == ["Deep breakout."]


# -- malformed HTML --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("page", "words"),
    [
        (
            "<div><p>Unclosed para <b>bold <i>both</div></div></div><p>after stray</span> close</p>",
            "Unclosed para bold both after stray close",
        ),
        ("<ul><li>one<li>two</ul><li>loose item", "one two loose item"),
        ("<table><tr><td>cell<td>next</table>text after table", "cell next text after table"),
        ("<html><body><p>Inside.</p></body></html><p>After the end tag.</p>", "Inside. After the end tag."),
        ("<p>Before</body> middle</html> end", "Before middle end"),
        ("<h2>Head<p>para text", "Head para text"),
        ("text <a href='x'>link <p>block in link</p> tail</a> more", "text link block in link tail more"),
        ("<p>a < b and c > d & e</p>", "a < b and c > d & e"),
    ],
)
def test_malformed_html_keeps_all_text(page: str, words: str) -> None:
    assert " ".join(" ".join(texts(page)).split()) == words  # every word is in a sentence, once
    rendered = iter(render(parse_html(page), [()], fmt="text").split())
    assert all(word in rendered for word in words.split())  # and rendered, in order


# -- a large page ----------------------------------------------------------------------
def _chunk(i: int) -> str:
    """One section of a modern page: prose, a list and a table amid attributes, JSON and CSS."""
    prose = " ".join(
        f"Sentence {j} of part {i} is about the history of the region and its rivers, e.g. the Loire." for j in range(4)
    )
    rows = "".join(
        f'<tr class="row row-{r}" data-row="{r}"><td class="cell town">Town {i}-{r}</td>'
        f'<td class="cell num" style="text-align:right">{r * 17}</td></tr>'
        for r in range(3)
    )
    data = json.dumps({"part": i, "items": [{"id": k, "label": f"item {k}", "tags": ["a", "b"]} for k in range(8)]})
    return (
        f'<section id="part-{i}" class="article-section" data-analytics-id="sec-{i}" data-index="{i}">'
        f'<script type="application/json" class="hydration">{data}</script>'
        f"<style>.part-{i} .cell{{padding:2px 4px;border:1px solid #ccc}} .part-{i} h2{{font-size:1.3em}}</style>"
        f'<div class="section-heading-wrapper"><h2 class="section-heading" id="h-{i}">Part {i}</h2></div>'
        f'<div class="content-wrapper"><p class="lead">{prose}</p>'
        f'<ul class="bullets"><li class="bullet"><span class="icon" aria-hidden="true"></span>Point of {i}.</li></ul>'
        f'<table class="wikitable"><tr><th scope="col">Town</th><th scope="col">Population</th></tr>{rows}</table>'
        "</div></section>\n"
    )


SENTENCES_PER_CHUNK = 1 + 4 + 1 + 2 + 6  # heading, prose, item, header cells, body cells


def test_twenty_megabyte_page() -> None:
    """A 20 MB page parses under the default limit; every sentence is seeded; context works."""
    parts: list[str] = []
    size = 0
    while size < 20_000_000:
        parts.append(_chunk(len(parts)))
        size += len(parts[-1])
    page = "<html><head><title>Big</title></head><body>" + "".join(parts) + "</body></html>"
    assert 20_000_000 <= len(page.encode()) < DEFAULT_MAX_BYTES
    doc = parse_html(page)
    n = len(parts)
    assert doc.tag.count(SENTENCE_BEG) == n * SENTENCES_PER_CHUNK
    assert "script" not in doc.tag and "style" not in doc.tag
    last_cell = doc.text.index(f"Town {n - 1}-2")
    got = render(doc, global_context(doc, [doc.path(last_cell)]))
    assert got == f"# Big\n\n## Part {n - 1}\n\n| Town |\n|---|\n| Town {n - 1}-2 |"
    first_section = doc.path(doc.text.index("Part 0"))[:-3]  # section > div > h2 > text
    assert doc.get(first_section).tag == "section"
    assert "Sentence 3 of part 0 is about the history of the region" in render(doc, [first_section])


# -- errors name the page once, where they are raised ------------------------------------
def test_empty_page_error_names_the_document_once() -> None:
    with pytest.raises(EmptyDocumentError) as info:
        parse_page("<p> </p>", doc_id="x", require_content=True)
    assert str(info.value).count("'x'") == 1
    assert str(info.value).startswith("document 'x': ")
    assert info.value.doc_id == "x"


@pytest.mark.parametrize("content", ["", "  \n\n  "])
def test_require_content_holds_for_plain_text(content: str) -> None:
    with pytest.raises(EmptyDocumentError, match=r"'notes\.txt'"):
        parse_page(content, doc_id="notes.txt", require_content=True)
    assert not parse_page(content).has_content()  # without require_content an empty page is a document


@pytest.mark.parametrize(
    ("content", "error", "limit"),
    [(b"%PDF-1.7 binary", NotHTMLError, DEFAULT_MAX_BYTES), ("<p>" + "x" * 200 + "</p>", DocumentTooLargeError, 100)],
)
def test_decoding_errors_name_the_document_once(content: str | bytes, error: type[SpireError], limit: int) -> None:
    for doc_id in ("a.html", None):
        with pytest.raises(error) as info:
            parse_page(content, doc_id=doc_id, max_bytes=limit)
        assert info.value.doc_id == doc_id
        assert str(info.value).count("document 'a.html'") == (doc_id is not None)


def test_parse_page_options_are_explicit() -> None:
    with pytest.raises(TypeError):
        parse_page("<p>x</p>", segmnt=False)  # type: ignore[call-arg]
    assert "sentence-beg" not in parse_page("plain words. More words.", segment=False).tag


# -- redirect stubs (issue 50) ---------------------------------------------------------------
REDIRECT = (
    '<html><head><meta http-equiv="refresh" content="0; url=checkpoints.html">'
    "<title>Checkpoint timeout settings</title></head><body></body></html>"
)
REAL_PAGES = {
    "checkpoints.html": "<title>Checkpoints</title><h1>Checkpoints</h1><p>The checkpoint timeout setting "
    "ranges between 30 seconds and one day.</p><p>Checkpoints flush dirty pages.</p>",
    "vacuum.html": "<title>Vacuum</title><h1>Vacuum</h1><p>Vacuum reclaims storage occupied by dead tuples.</p>",
}


def test_a_redirect_stub_has_no_units_and_is_never_a_result(caplog: pytest.LogCaptureFixture) -> None:
    """A page that only sends its reader elsewhere (a meta refresh, a title, no text) is not content."""
    import logging

    from spire_core.indexing.units import seeds
    from spire_core.options import QueryOptions
    from spire_core.pipeline import StoreHit, retrieve
    from spire_core.results.schema import seed_metadata

    docs = {doc_id: parse_page(html, doc_id=doc_id) for doc_id, html in {**REAL_PAGES, "old.html": REDIRECT}.items()}
    assert docs["old.html"].redirect == "checkpoints.html"
    with caplog.at_level(logging.INFO, logger="spire_core.indexing.units"):
        units = [(doc_id, s) for doc_id, doc in docs.items() for s in seeds(doc, unit="passage")]
    assert "old.html" in caplog.text and "redirect" in caplog.text
    assert units and all(doc_id != "old.html" for doc_id, _ in units)
    assert seeds(docs["old.html"], unit="sentence") == seeds(docs["old.html"], unit="block") == []
    query = "checkpoint timeout settings"

    def overlap(text: str) -> float:
        return len(set(query.split()) & set(text.lower().split())) / 10

    ranked = sorted(units, key=lambda u: -overlap(u[1].text))
    hits = [StoreHit(seed_metadata(doc_id, s), overlap(s.text)) for doc_id, s in ranked]
    found = retrieve(query, lambda: lambda n: hits[:n], lambda doc_id, _hash: docs[doc_id], QueryOptions(budget=300))
    assert found.results and found.results[0].doc_id == "checkpoints.html"
    assert all(r.doc_id != "old.html" for r in found.results)


@pytest.mark.parametrize(
    "page",
    [
        # a refresh without a URL reloads the page itself: content
        '<meta http-equiv="refresh" content="300"><title>News</title><p>Today the council met.</p>',
        # a redirect with content of its own (longer than a "Redirecting..." line) is read
        '<meta http-equiv="refresh" content="5; url=new.html"><title>Old</title><p>'
        + "This page keeps its own long text while it announces a move to another address. " * 4
        + "</p>",
    ],
)
def test_a_page_with_a_refresh_and_content_keeps_its_units(page: str) -> None:
    from spire_core.indexing.units import seeds

    assert seeds(parse_page(page, doc_id="p.html"))
