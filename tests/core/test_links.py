"""References: every link shape a unit's text makes is recorded as the user reads it back."""

from __future__ import annotations

import pytest

from spire_core import Citation, aggregate, from_metadata, parse_html, seeds, sentences, subdocuments, to_metadata
from spire_core.document.links import (
    MAX_HREF_CHARS,
    MAX_REFERENCES,
    Reference,
    decode_references,
    encode_references,
    path_references,
    resolve_href,
)
from spire_core.errors import PathFormatError
from spire_core.options import QueryOptions
from spire_core.pipeline import run_query
from spire_core.query.passages import PassageHit
from spire_core.results.schema import REFERENCES, SPIRE_KEYS, references_of, seed_metadata
from spire_core.values import Hit

PAGE = """<html><head><title>Settings</title></head><body>
<h1>Settings</h1>
<p>Each <a href="#term-wal">WAL</a> record is flushed; see <a href="other.html#guc-x">guc_x</a>,
<a href="../up/top.html">the top page</a>, <a href="https://example.org/doc">the site</a>,
<a href="javascript:alert(1)">a script</a>, <a href="#gone">a dead anchor</a>
and <a href="#term-wal">WAL</a> again.</p>
<p>Nothing links here.</p>
<p><a name="old-anchor">An old anchor.</a> See <a href="#old-anchor">above</a>.</p>
<dl><dt id="term-wal">WAL</dt><dd>The write-ahead log.</dd></dl>
</body></html>"""


def _sentence(doc, start: str):  # type: ignore[no-untyped-def]
    return next(s for s in sentences(doc) if s.text.startswith(start))


def test_each_link_shape_is_recorded_resolved_against_the_page() -> None:
    doc = parse_html(PAGE, doc_id="docs/settings.html")
    s = _sentence(doc, "Each WAL")
    refs = path_references(doc, s.paths)
    wal_dt = next(p for p in doc.paths() if doc.get(p).attrs.get("id") == "term-wal")
    assert refs == (
        Reference("docs/settings.html", "term-wal", frozenset({wal_dt})),  # same page: the anchor's path
        Reference("docs/other.html", "guc-x"),  # another page: its id, the anchor kept
        Reference("up/top.html"),  # a relative page without anchor
        Reference(url="https://example.org/doc"),  # external: the URL as written
        Reference("docs/settings.html", "gone"),  # a missing anchor: no paths
    )  # javascript: is not recorded, and WAL named twice is one reference
    assert doc.get(wal_dt).tag == "dt"
    assert path_references(doc, _sentence(doc, "Nothing").paths) == ()


def test_a_named_anchor_and_the_first_id_are_found() -> None:
    doc = parse_html(PAGE, doc_id="p.html")
    (ref,) = path_references(doc, _sentence(doc, "See above").paths)
    assert ref.anchor == "old-anchor" and len(ref.paths) == 1
    assert doc.get(next(iter(ref.paths))).tag == "a"
    twice = parse_html('<p id="a">First.</p><p id="a">Second.</p><p><a href="#a">Link</a>.</p>', doc_id="p.html")
    (ref,) = path_references(twice, _sentence(twice, "Link").paths)
    assert "First." in twice.subtree_text(twice.index(next(iter(ref.paths))))


@pytest.mark.parametrize(
    ("base", "href", "expected"),
    [
        ("a/b.html", "c.html", Reference("a/c.html")),
        ("a/b.html", "../c.html#x%20y", Reference("c.html", "x y")),
        ("a/b.html", "/root.html", Reference("root.html")),
        ("a/b.html", "c.html?q=1#k", Reference("a/c.html", "k")),
        ("a/b.html", "b.html#k", Reference("a/b.html", "k")),
        ("a/b.html", "../../out.html", Reference(url="../../out.html")),  # above the corpus root
        ("a/b.html", "HTTPS://example.org/", Reference(url="HTTPS://example.org/")),
        ("a/b.html", "//cdn.example.org/x", Reference(url="//cdn.example.org/x")),
        ("https://d.org/3/lib/a.html", "../glossary.html#term-h", Reference("https://d.org/3/glossary.html", "term-h")),
        ("https://d.org/3/lib/a.html", "https://d.org/3/x.html#k", Reference("https://d.org/3/x.html", "k")),
        ("https://d.org/3/lib/a.html", "https://other.org/x", Reference(url="https://other.org/x")),
        (None, "#k", Reference("", "k")),
        ("a/b.html", "#", None),  # the page itself: nothing to follow
        ("a/b.html", "b.html", None),
        ("a/b.html", " java\nscript:alert(1)", None),
        ("a/b.html", "JavaScript:alert(1)", None),
        ("a/b.html", "data:text/html,<p>x</p>", None),
        ("a/b.html", "mailto:someone@example.org", None),
        ("a/b.html", "", None),
        ("a/b.html", "x" * (MAX_HREF_CHARS + 1), None),
    ],
)
def test_hrefs_resolve_to_a_page_an_external_url_or_nothing(
    base: str | None, href: str, expected: Reference | None
) -> None:
    assert resolve_href(base, href) == expected


def test_units_carry_their_references_and_their_text_is_unchanged() -> None:
    doc = parse_html(PAGE, doc_id="docs/settings.html")
    plain = parse_html(PAGE.replace("href=", "data-x="), doc_id="docs/settings.html")
    for unit in ("sentence", "passage", "block"):
        linked, bare = seeds(doc, unit=unit), seeds(plain, unit=unit)  # type: ignore[arg-type]
        assert [s.text for s in linked] == [s.text for s in bare]  # recording changes no rendering
        assert all(not s.references for s in bare)
        carried = [r for s in linked for r in s.references]
        assert Reference("docs/other.html", "guc-x") in carried
        meta = seed_metadata("docs/settings.html", next(s for s in linked if s.references))
        assert REFERENCES in SPIRE_KEYS and isinstance(meta[REFERENCES], str)  # flat, hidden from embedding
        assert references_of(meta) == next(s for s in linked if s.references).references


def test_references_round_trip_and_bad_metadata_reads_as_none() -> None:
    refs = (
        Reference("p.html", "a", frozenset({(1, 2)})),
        Reference("p.html", "gone"),
        Reference("q.html"),
        Reference("q.html", "k"),
        Reference(url="https://x.org/ü"),
    )
    assert decode_references(encode_references(refs, "p.html"), "p.html") == refs
    assert encode_references(refs, "p.html").startswith('[["s","a","1.2"],["s","gone"],["p","q.html"]')
    for bad in ("{", "[1, 2]x", '{"a": 1}', '[["x", "y"]]', '[["p"]]', '[["s", "a", "x.y"]]', "[[1, 2]]"):
        with pytest.raises(PathFormatError):
            decode_references(bad)
        assert references_of({REFERENCES: bad}) == ()
    assert references_of({}) == ()


def test_citations_carry_references_through_the_result_metadata() -> None:
    doc = parse_html(PAGE, doc_id="docs/settings.html")
    s = _sentence(doc, "Each WAL")
    (sub,) = aggregate([Hit("docs/settings.html", s.paths, 1.0)], documents={"docs/settings.html": doc}, budget=500)
    assert sub.citations[0].references == ()  # aggregation itself records nothing: the pipeline does
    hits = [PassageHit("docs/settings.html", (s.paths,), 1.0)]
    (sub,) = run_query("wal", lambda n: hits[:n], {"docs/settings.html": doc}, QueryOptions(budget=500))
    (cit,) = sub.citations
    assert cit.references == path_references(doc, s.paths)
    back = from_metadata(to_metadata(sub), sub.text)
    assert back is not None and back.citations[0].references == cit.references
    data = cit.to_dict()
    assert data["references"][1] == {"doc_id": "docs/other.html", "anchor": "guc-x"}
    assert data["references"][3] == {"url": "https://example.org/doc"}
    assert Citation.from_dict(data).references == cit.references
    (chosen,) = subdocuments([Citation("docs/settings.html", s.paths, "")], {"docs/settings.html": doc})
    assert chosen.citations[0].references == cit.references  # the evidence filter's results too


def test_a_page_of_many_links_records_a_bounded_share_per_unit() -> None:
    links = "".join(f'<a href="p{k}.html#a{k}">w{k}</a> ' for k in range(5000))
    doc = parse_html(f"<p>{links}end.</p><p>{links * 2}again.</p>", doc_id="p.html")
    size = len(links) * 3
    for unit in ("sentence", "passage"):
        units = seeds(doc, unit=unit)  # type: ignore[arg-type]
        assert all(len(s.references) <= MAX_REFERENCES for s in units)
        recorded = sum(len(encode_references(s.references)) for s in units)
        assert recorded <= size  # linear in the page, whatever its number of links
    long = "x" * (MAX_HREF_CHARS - 10)
    doc = parse_html("".join(f'<p><a href="{long}{k}">w</a>.</p>' for k in range(50)), doc_id="p.html")
    assert all(len(encode_references(s.references)) <= 2 * MAX_HREF_CHARS for s in seeds(doc, unit="sentence"))
