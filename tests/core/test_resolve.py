"""Query-time resolution: a cited sentence's references followed one hop, delivered as citations, failures reported."""

from __future__ import annotations

import pytest

from spire_core import Citation, Document, MissingSourceError, Subdocument, approx_tokens, parse_html, sentences
from spire_core.options import QueryOptions
from spire_core.pipeline import run_query
from spire_core.query.passages import PassageHit
from spire_core.query.references import (
    ANCHOR_MISSING,
    MAX_FOLLOWED,
    PAGE_MISSING,
    referenced_view,
)

CONFIG = """<html><head><title>Configuration</title></head><body><h1>Configuration</h1>
<h2>Logging</h2>
<p>Each <a href="#term-wal">WAL</a> record carries an <a href="../glossary.html#term-lsn">LSN</a>.</p>
<p>Set it as the <a href="../glossary.html#term-gone">vanished term</a> says, or see
<a href="missing.html#x">a missing page</a> and <a href="https://example.org/">the site</a>.</p>
<p>Archiving is covered in <a href="archive.html#sec-archive">the archive section</a> and <a href="archive.html">the
archive page</a>.</p>
<p>A <a href="#dfn-frozen">frozen</a> tuple is old.</p>
<dl><dt id="term-wal">WAL</dt><dd>The write-ahead log of every change.</dd></dl>
<p>A tuple is <dfn id="dfn-frozen">frozen</dfn> when its transaction id is replaced.</p>
</body></html>"""
GLOSSARY = """<html><head><title>Glossary</title></head><body><h1>Glossary</h1>
<dl><dt id="term-lsn">LSN</dt><dd>A log sequence number: a byte position in the <a href="#term-wal">WAL</a>.</dd>
<dt id="term-wal">WAL</dt><dd>The write-ahead log.</dd></dl></body></html>"""
ARCHIVE = """<html><head><title>Archiving</title></head><body><h1>Continuous archiving</h1>
<p>Archiving copies every WAL segment away.</p>
<div id="sec-archive"><h2>Setting up archiving</h2><p>Set archive_mode to on. Then restart the server.</p>
<p>A later paragraph.</p></div>
<h2>Another section</h2><p>Unrelated.</p></body></html>"""
PAGES = {"guide/config.html": CONFIG, "glossary.html": GLOSSARY, "guide/archive.html": ARCHIVE}


@pytest.fixture(scope="module")
def docs() -> dict[str, Document]:
    return {k: parse_html(v, doc_id=k) for k, v in PAGES.items()}


def _query(docs: dict[str, Document], start: str, *, budget: int = 1000, resolve: bool = True) -> list[Subdocument]:
    s = next(s for s in sentences(docs["guide/config.html"]) if s.text.startswith(start))
    hits = [PassageHit("guide/config.html", (s.paths,), 1.0)]
    return run_query("q", lambda n: hits[:n], docs, QueryOptions(budget=budget, resolve_refs=resolve))


def _citations(results: list[Subdocument]) -> list[Citation]:
    return [c for sub in results for c in sub.citations]


def test_a_reference_to_a_term_on_the_page_and_on_another_page_is_delivered(docs: dict[str, Document]) -> None:
    cited, wal, lsn = _citations(_query(docs, "Each WAL"))
    assert cited.text.endswith("Each WAL record carries an LSN.")  # nothing substituted into it
    assert (wal.doc_id, lsn.doc_id) == ("guide/config.html", "glossary.html")
    assert wal.text.endswith("WAL\n: The write-ahead log of every change.")
    assert lsn.text == "# Glossary\n\nLSN\n: A log sequence number: a byte position in the WAL."
    assert wal.referenced_by == lsn.referenced_by == cited.key()
    assert [r.cited for r in cited.references] == [wal.key(), lsn.key()]
    assert not lsn.references[0].cited  # one hop: the definition's own link is recorded, not followed


def test_a_reference_that_cannot_be_resolved_is_reported_not_guessed(docs: dict[str, Document]) -> None:
    (cited,) = _citations(_query(docs, "Set it as"))
    gone, missing, site = cited.references
    assert (gone.doc_id, gone.unresolved, gone.cited) == ("glossary.html", ANCHOR_MISSING, None)
    assert (missing.doc_id, missing.unresolved) == ("guide/missing.html", PAGE_MISSING)
    assert site.url == "https://example.org/" and site.unresolved is None and site.cited is None  # not followed
    assert cited.to_dict()["references"][0]["unresolved"] == ANCHOR_MISSING


def test_a_section_and_a_page_deliver_their_head(docs: dict[str, Document]) -> None:
    cited, section, page = _citations(_query(docs, "Archiving is covered"))
    assert section.doc_id == page.doc_id == "guide/archive.html"
    assert section.text.endswith("## Setting up archiving\n\nSet archive_mode to on. Then restart the server.")
    assert "later paragraph" not in section.text and "Unrelated" not in section.text
    assert page.text.endswith("# Continuous archiving\n\nArchiving copies every WAL segment away.")
    assert all(c.referenced_by == cited.key() for c in (section, page))


def test_a_dfn_delivers_its_sentence(docs: dict[str, Document]) -> None:
    _, frozen = _citations(_query(docs, "A frozen tuple"))
    assert frozen.text.endswith("A tuple is frozen when its transaction id is replaced.")


def test_resolution_is_off_by_default_and_changes_nothing_then(docs: dict[str, Document]) -> None:
    assert QueryOptions().resolve_refs is False
    (cited,) = _citations(_query(docs, "Each WAL", resolve=False))
    assert all(r.cited is None and r.unresolved is None for r in cited.references)


@pytest.mark.parametrize("budget", [20, 30, 45, 1000])
def test_resolved_citations_share_the_budget(docs: dict[str, Document], budget: int) -> None:
    results = _query(docs, "Each WAL", budget=budget)
    assert sum(approx_tokens(sub.text) for sub in results) <= budget
    first = _citations(results)[0]
    assert first.referenced_by is None  # the cited sentence comes first, what it names after it
    delivered = {c.key() for c in _citations(results)}
    assert all(r.cited in delivered for r in first.references if r.cited)  # cited only when delivered


def test_a_page_of_many_links_follows_a_bounded_number() -> None:
    links = " ".join(f'<a href="#t{k}">t{k}</a>' for k in range(60))
    terms = "".join(f'<dt id="t{k}">t{k}</dt><dd>Meaning {k}.</dd>' for k in range(60))
    sents = "".join(f"<p>Sentence {k} names {links}.</p>" for k in range(5))
    doc = parse_html(f"<h1>T</h1>{sents}<dl>{terms}</dl>", doc_id="p.html")
    hits = [PassageHit("p.html", tuple(s.paths for s in sentences(doc)[1:6]), 1.0)]
    results = run_query("q", lambda n: hits[:n], {"p.html": doc}, QueryOptions(budget=5000, resolve_refs=True))
    followed = [c for c in _citations(results) if c.referenced_by]
    assert 0 < len(followed) <= MAX_FOLLOWED


def test_a_page_lookup_that_raises_reports_the_page_missing(docs: dict[str, Document]) -> None:
    def lookup(doc_id: str) -> Document:
        if doc_id not in docs:
            raise MissingSourceError("not stored", doc_id=doc_id)
        return docs[doc_id]

    s = next(s for s in sentences(docs["guide/config.html"]) if s.text.startswith("Set it as"))
    hits = [PassageHit("guide/config.html", (s.paths,), 1.0)]
    (sub,) = run_query("q", lambda n: hits[:n], lookup, QueryOptions(resolve_refs=True))
    assert sub.citations[0].references[1].unresolved == PAGE_MISSING


def test_the_referenced_view_is_bounded(docs: dict[str, Document]) -> None:
    long = " ".join(f"Sentence {k} of the description." for k in range(200))
    doc = parse_html(f'<dl><dt id="t">term</dt><dd><p>{long}</p></dd></dl>')
    view = referenced_view(doc, doc.index(next(p for p in doc.paths() if doc.get(p).attrs.get("id") == "t")))
    text = "".join(doc.text[i] for i in sorted(view) if doc.tag[i] is None)
    assert text.startswith("termSentence 0") and "Sentence 199" not in text and len(text) < 700


def test_pages_looked_up_while_following_are_bounded_and_a_missing_page_is_asked_once() -> None:
    from spire_core.query.references import MAX_LOOKUPS

    links = " ".join(f'<a href="gone{k % 40}.html#x">g{k}</a>' for k in range(80))
    doc = parse_html("<h1>T</h1>" + "".join(f"<p>Sentence {k} names {links}.</p>" for k in range(5)), doc_id="p.html")
    asked: list[str] = []

    def lookup(doc_id: str) -> Document:
        asked.append(doc_id)
        if doc_id != "p.html":
            raise MissingSourceError("not stored", doc_id=doc_id)
        return doc

    hits = [PassageHit("p.html", tuple(s.paths for s in sentences(doc)[1:6]), 1.0)]
    (sub,) = run_query("q", lambda n: hits[:n], lookup, QueryOptions(budget=5000, resolve_refs=True))
    missing = [d for d in asked if d != "p.html"]
    assert len(missing) == len(set(missing)) <= MAX_LOOKUPS
    assert all(r.unresolved == PAGE_MISSING for r in sub.citations[0].references[: len(set(missing))])


@pytest.mark.parametrize("budget", [40, 120, 1000])
def test_following_nothing_admits_what_aggregation_admits_without_it(budget: int) -> None:
    """Hit by hit (references followed) or by bisection (not): the same sentences fit the budget."""
    body = "".join(f'<p>Sentence {k} is here, see <a href="gone.html#k{k}">note {k}</a>.</p>' for k in range(12))
    doc = parse_html(f"<h1>Title</h1><h2>Part</h2>{body}", doc_id="p.html")
    hits = [PassageHit("p.html", tuple(s.paths for s in sentences(doc)[2:]), 1.0)]

    def results(resolve: bool) -> list[tuple[str, str]]:
        found = run_query("q", lambda n: hits[:n], {"p.html": doc}, QueryOptions(budget=budget, resolve_refs=resolve))
        return [(c.key(), c.text) for sub in found for c in sub.citations] + [("", sub.text) for sub in found]

    assert results(True) == results(False)
