"""Citations: (de)serialisation and highlighting in the source page."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import lxml.html
import pytest

from spire_core import Citation, global_context, highlight, parse_html, render, sentences

PAGE = Path(__file__).resolve().parents[2] / "examples" / "pages" / "postgresql-wal.html"


# -- serialisation -----------------------------------------------------------------------
def test_json_round_trip() -> None:
    cit = Citation("pages/a.html", frozenset({(1, 0, 2), (1, 0, 3, 0), ()}), 'Grüße, <b> & "quotes"', 0.75)
    back = Citation.from_json(cit.to_json())
    assert back == cit and back.score == 0.75
    assert json.loads(cit.to_json())["text"] == cit.text  # not ASCII-escaped, valid JSON
    assert Citation.from_dict(cit.to_dict()) == cit


def test_round_trip_without_score_and_with_list_paths() -> None:
    cit = Citation("d", frozenset({(0, 1), (0, 2, 5)}), "text")
    data = cit.to_dict()
    assert "score" not in data and isinstance(data["paths"], str)
    assert Citation.from_json(cit.to_json()) == cit
    assert Citation.from_dict({"doc_id": "d", "paths": [[0, 1], [0, 2, 5]], "text": "text"}) == cit


def test_key_is_stable_and_identifies_the_path_set() -> None:
    a = Citation("d", frozenset({(0, 2), (0, 1)}), "x", 0.1)
    b = Citation("d", frozenset({(0, 1), (0, 2)}), "other rendering", 0.9)
    assert a.key() == b.key() and a.key().startswith("d#")
    assert a.key() != Citation("d", frozenset({(0, 1)}), "x").key()


# -- highlighting ------------------------------------------------------------------------
def _wal_citations(*needles: str) -> tuple[bytes, list[Citation]]:
    raw = PAGE.read_bytes()
    doc = parse_html(raw, doc_id="wal")
    cits = []
    for needle in needles:
        s = next(s for s in sentences(doc) if needle in s.text)
        cits.append(Citation("wal", s.paths, render(doc, global_context(doc, s.paths))))
    return raw, cits


def _marks(out: str) -> list[lxml.html.HtmlElement]:
    return list(lxml.html.document_fromstring(out).iter("mark"))


def test_highlight_marks_each_cited_sentence_once() -> None:
    needles = ("The valid range is between 30 seconds and one day.", "which disables forced writeback")
    raw, cits = _wal_citations(*needles)
    out = highlight(raw, cits, doc_id="wal")
    tree = lxml.html.document_fromstring(out)
    marks = _marks(out)
    assert [m.get("data-citation") for m in marks] == ["1", "2"]
    assert [m.get("id") for m in marks] == ["spire-cite-1", "spire-cite-2"]
    assert " ".join(marks[0].text_content().split()) == needles[0]
    assert needles[1] in " ".join(marks[1].text_content().split())
    assert all(m.get("class") == "spire-cite" for m in marks)
    # legend links to the anchors; style is inline; no sentinels leak out
    legend = tree.find(".//div[@class='spire-legend']")
    assert legend is not None and legend.getparent().tag == "body"
    links = [a.get("href") for a in legend.iter("a")]
    assert links == ["#spire-cite-1", "#spire-cite-2"]
    assert tree.find(".//style") is not None and "spire-cite" in tree.find(".//style").text
    assert "sentence-beg" not in out and "sentence-end" not in out


def test_highlight_keeps_the_page() -> None:
    raw, cits = _wal_citations("The valid range is between 30 seconds and one day.")
    out = highlight(raw, cits)
    original = parse_html(raw)
    again = parse_html(out)
    assert again.title == original.title
    text = " ".join(lxml.html.document_fromstring(out).text_content().split())
    for s in sentences(original)[::25]:
        assert s.text in text


def test_highlight_ignores_other_documents_and_unknown_paths(caplog: pytest.LogCaptureFixture) -> None:
    raw, [cit] = _wal_citations("The valid range is between 30 seconds and one day.")
    other = Citation("elsewhere", cit.paths, cit.text)
    stale = Citation("wal", frozenset({(7, 7, 7)}), "gone")
    assert _marks(highlight(raw, [other], doc_id="wal")) == []
    with caplog.at_level(logging.WARNING, logger="spire_core.results.highlight"):
        out = highlight(raw, [stale, cit], doc_id="wal")
    assert [m.get("data-citation") for m in _marks(out)] == ["2"]
    assert "not found" in out and any(r.levelno == logging.WARNING for r in caplog.records)


def test_highlight_escapes_text_and_attributes() -> None:
    page = (
        "<html><head><title>a &lt; b</title></head><body>"
        '<p title="say &quot;hi&quot; &amp; go">1 &lt; 2 &amp; 3 &gt; 2. <a href="?x=1&amp;y=2">Link</a> here.</p>'
        "</body></html>"
    )
    doc = parse_html(page, doc_id="x")
    cits = [Citation("x", s.paths, s.text) for s in sentences(doc) if s.text.startswith("1 <")]
    out = highlight(page, cits, doc_id="x")
    tree = lxml.html.document_fromstring(out)
    p = tree.find(".//p")
    assert p.get("title") == 'say "hi" & go'
    assert p.find("a").get("href") == "?x=1&y=2"
    [mark] = _marks(out)
    assert mark.text_content() == "1 < 2 & 3 > 2."
    assert tree.find(".//title").text == "a < b"


def test_highlight_wraps_inline_markup_in_one_mark() -> None:
    page = "<html><body><p>Before. Her <a href='#'>notes</a> described <em>the</em> Engine. After.</p></body></html>"
    doc = parse_html(page)
    s = next(s for s in sentences(doc) if s.text.startswith("Her"))
    [mark] = _marks(highlight(page, [Citation("d", s.paths, s.text)]))
    assert mark.text_content() == "Her notes described the Engine."
    assert [c.tag for c in mark] == ["a", "em"]


def test_overlapping_citations_nest() -> None:
    page = "<html><body><p>One two. Three four. Five six.</p><ul><li>Item a.</li><li>Item b.</li></ul></body></html>"
    doc = parse_html(page)
    s = sentences(doc)
    p = next(p for p in doc.paths() if doc.get(p).tag == "p")
    ul = next(p for p in doc.paths() if doc.get(p).tag == "ul")
    cits = [
        Citation("d", s[0].paths | s[1].paths, "1-2"),
        Citation("d", s[1].paths | s[2].paths, "2-3"),
        Citation("d", frozenset({p}), "paragraph"),
        Citation("d", frozenset({ul}), "list"),
    ]
    out = highlight(page, cits)
    tree = lxml.html.document_fromstring(out)
    text = {n: " ".join(m.text_content() for m in tree.iter("mark") if m.get("data-citation") == n) for n in "1234"}
    assert " ".join(text["1"].split()) == "One two. Three four."
    assert " ".join(text["2"].split()) == "Three four. Five six."
    assert " ".join(text["3"].split()) == "One two. Three four. Five six."
    assert text["4"] == "Item a. Item b."  # marked inside each item, never around the <li>
    assert all(m.getparent().tag != "ul" for m in tree.iter("mark"))
    assert len({m.get("id") for m in tree.iter("mark") if m.get("id")}) == 4


def test_highlight_deep_pages_do_not_recurse() -> None:
    depth = 5000
    page = "<html><body>" + "<div>" * depth + "<p>Deep text here.</p>" + "</div>" * depth + "</body></html>"
    doc = parse_html(page)
    [s] = sentences(doc)
    out = highlight(page, [Citation("d", s.paths, s.text)])
    assert out.count("<mark") == 1 and "Deep text here." in out


def test_citing_the_whole_page_marks_blocks_not_the_title() -> None:
    page = "<html><head><title>T</title></head><body><h1>H</h1><p>A <b>b</b>c. C d.</p></body></html>"
    out = highlight(page, [Citation("d", frozenset({()}), "everything")])
    tree = lxml.html.document_fromstring(out)
    assert tree.find(".//title").text == "T"
    assert [(m.getparent().tag, m.text_content()) for m in tree.iter("mark")] == [("h1", "H"), ("p", "A bc. C d.")]
    assert tree.find(".//div[@class='spire-legend']//a").text_content() == "[1] H A bc. C d."
