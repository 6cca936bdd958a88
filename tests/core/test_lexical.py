"""The lexical signal: a BM25 index over sentences, fused with the passage ranking."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from spire_core import Document, Hit, aggregate, approx_tokens, parse_html, sentences
from spire_core.indexing.passages import passages
from spire_core.query.fusion import fused_search, rrf
from spire_core.query.lexical import (
    LexicalIndex,
    Lexicon,
    sentence_units,
    tokenizer,
)
from spire_core.query.passages import PassageHit, sentence_search

PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"

MANUAL = """<html><head><title>Widget manual</title></head><body>
<h1>Widget</h1>
<h2>Installation</h2>
<p>Download the archive. Unpack it anywhere. Run the installer as an administrator.</p>
<p>The installer asks for a folder. The default folder is fine for most users.</p>
<h2>Configuration</h2>
<p>The timeout setting ranges from 30 seconds to one day. Its default is five minutes.</p>
<p>Logging writes to the journal. The frobnicator flag enables verbose traces.</p>
</body></html>"""


@cache
def _page(name: str) -> Document:
    return parse_html((PAGES / name).read_bytes(), doc_id=name)


@cache
def _manual() -> Document:
    return parse_html(MANUAL, doc_id="manual")


# -- tokenizer -----------------------------------------------------------------------------
def test_tokenizer_keeps_accented_french_words() -> None:
    plain = tokenizer("french", stem=False)("L'élève a mangé une crème brûlée au café.")
    assert {"élève", "mangé", "crème", "brûlée", "café"} <= set(plain)
    stemmed = tokenizer("fr")("Les élèves mangent des crèmes brûlées.")
    assert stemmed == ["élev", "mangent", "crem", "brûl"]  # les/des are stop words; the accents stay


def test_tokenizer_keeps_german_words_and_case_folds() -> None:
    plain = tokenizer("german", stem=False, stopwords=False)("Die GRÖSSE der Straße über Äpfel")
    assert plain == ["die", "grösse", "der", "strasse", "über", "äpfel"]  # casefold: ß -> ss
    stemmed = tokenizer("de")("Die Größe der Straßen über den Äpfeln")
    assert "die" not in stemmed and "der" not in stemmed  # German stop words, by the language code
    assert len(stemmed) == 3 and all(stemmed), stemmed  # Größe, Straßen, Äpfeln: none dropped


def test_tokenizer_language_decides_stop_words_and_stems() -> None:
    english = tokenizer("english")("The checkpoints are running")
    assert english == ["checkpoint", "run"]
    assert tokenizer("english", stopwords=False)("The checkpoints") == ["the", "checkpoint"]
    # identifiers stay whole; other scripts are words too
    assert "checkpoint_timeout" in tokenizer()("Set checkpoint_timeout to 5min")
    assert tokenizer("russian", stem=False, stopwords=False)("Привет мир") == ["привет", "мир"]
    # a language without a stop-word list keeps every word
    assert tokenizer("finnish", stem=False)("ja kissa") == ["ja", "kissa"]


# -- index ---------------------------------------------------------------------------------
def test_a_sentence_naming_a_rare_query_word_ranks_first() -> None:
    doc = _manual()
    index = LexicalIndex.build(sentence_units(doc))
    best = index.search("How do I turn on the frobnicator?", 3)
    assert best
    doc_id, paths, score = best[0]
    assert doc_id == "manual" and score > 0
    text = next(s.text for s in sentences(doc) if s.paths == paths)
    assert "frobnicator" in text


def test_building_an_index_logs_nothing_at_the_applications_warning_level() -> None:
    """An application logging at WARNING (``logging.basicConfig``: a root handler without a level)
    sees no bm25s record: bm25s set its own logger to DEBUG, and ``spire query`` printed
    "Building index from tokens"."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    try:
        index = LexicalIndex.build(sentence_units(_manual()))
        assert index.search("timeout default", 1)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert [r.getMessage() for r in records if r.name.startswith("bm25s")] == []


def test_search_keeps_sentence_path_sets_and_respects_pages() -> None:
    wal, js = _page("postgresql-wal.html"), _page("python-json.html")
    units = sentence_units(wal) + sentence_units(js)
    index = LexicalIndex.build(units)
    own = {(d, p) for d, p, _ in units}
    hits = index.hits("checkpoint_timeout valid range", 10)
    assert hits and all((h.doc_id, h.paths) in own for h in hits)
    only_json = index.hits("checkpoint_timeout valid range", 10, doc_ids=["python-json.html"])
    assert all(h.doc_id == "python-json.html" for h in only_json)
    assert index.hits("checkpoint", 5, doc_ids=["no-such-page"]) == []
    assert index.hits("zzzz qqqq", 5) == [] and index.hits("", 5) == []
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_save_load_round_trip(tmp_path: Path) -> None:
    wal, js = _page("postgresql-wal.html"), _page("python-json.html")
    index = LexicalIndex.build(sentence_units(wal) + sentence_units(js), language="english")
    index.save(tmp_path / "lexical")
    loaded = LexicalIndex.load(tmp_path / "lexical")
    assert loaded.pages == index.pages and len(loaded) == len(index)
    for query in ("What is the valid range of checkpoint_timeout?", "json.dumps indent", "sort_keys default"):
        assert loaded.search(query, 20) == index.search(query, 20)
        assert loaded.search(query, 5, doc_ids=["python-json.html"]) == index.search(
            query, 5, doc_ids=["python-json.html"]
        )


GERMAN_MANUAL = """<html><body><h1>Komprimierung</h1>
<p>Mit xz lässt sich eine Datei besonders stark komprimieren. Das Werkzeug gzip ist schneller.</p>
<p>Die Archive werden im Verzeichnis des Benutzers abgelegt, bis sie gelöscht werden.</p></body></html>"""


def test_each_page_is_tokenized_in_its_own_language_and_questions_in_each(tmp_path: Path) -> None:
    """A German page (language detected) is stemmed as German, so "komprimiert" finds "komprimieren";
    an English page beside it is still stemmed as English; the languages survive a save."""
    german = parse_html(GERMAN_MANUAL, doc_id="de")
    assert german.language == "de"
    index = LexicalIndex()
    index.add_document(german)
    index.add_document(_manual())
    assert index.languages == {"de": "de", "manual": "en"}
    [hit] = index.hits("Womit wird eine Datei komprimiert?", 1)
    assert hit.doc_id == "de" and "xz" in next(s.text for s in sentences(german) if s.paths == hit.paths)
    english_only = LexicalIndex.build(sentence_units(german))  # the index's one language for every page
    assert english_only.hits("komprimiert", 1) == []
    assert index.hits("frobnicators", 1)[0].doc_id == "manual"  # English stems: frobnicators -> frobnic
    index.save(tmp_path / "lexical")
    loaded = LexicalIndex.load(tmp_path / "lexical")
    assert loaded.languages == index.languages
    question = "Womit wird eine Datei komprimiert?"
    assert loaded.search(question, 3) == index.search(question, 3)


COMPOUNDS = """<html lang="de"><head><title>Forensik</title></head><body>
<p>Beim Einhängen dieser Abbilder sollte man die Optionen ro und noexec verwenden.</p>
<p>Die Noten wurden von europäischen Notenverlagen herausgegeben.</p>
<p>Der Rechner startet nach dem Einspielen der Sicherung neu.</p>
</body></html>"""


def _compound_index() -> tuple[Document, LexicalIndex]:
    doc = parse_html(COMPOUNDS, doc_id="de")
    index = LexicalIndex()
    index.add_document(doc)
    return doc, index


def _best_text(doc: Document, index: LexicalIndex, query: str) -> str:
    [hit] = index.hits(query, 1)
    return next(s.text for s in sentences(doc) if s.paths == hit.paths)


def test_an_unseen_compound_is_matched_through_the_indexed_terms_it_holds() -> None:
    doc, index = _compound_index()
    [term] = index.query_terms("Festplattenabbilder")
    assert all(term not in t for t in index.parts([term]))  # unseen: no indexed term holds it
    assert "abbild" in index.parts([term])
    assert "noexec" in _best_text(doc, index, "Wie hänge ich Festplattenabbilder ein?")


def test_an_unseen_word_is_matched_through_the_indexed_compounds_holding_it() -> None:
    doc, index = _compound_index()
    assert "Notenverlagen" in _best_text(doc, index, "Welche Verlage?")


def test_a_term_the_pages_hold_is_matched_only_as_itself() -> None:
    doc, index = _compound_index()
    terms = index.query_terms("Noten Abbilder")
    assert index.parts(terms) == []  # both held: no stand-ins
    hits = index.hits("Abbilder", 5)
    assert len(hits) == 1 and "Abbilder" in _best_text(doc, index, "Abbilder")


def test_an_exact_term_outranks_a_stand_in() -> None:
    """Two sentences alike but for the word the question names: the one holding it as asked
    ranks above the one reached through a stand-in (:data:`PART_WEIGHT`)."""
    doc = parse_html(
        '<html lang="de"><body><p>Die Verlage liegen hier.</p><p>Die Abbilder liegen hier.</p></body></html>',
        doc_id="de",
    )
    index = LexicalIndex()
    index.add_document(doc)
    assert _best_text(doc, index, "Verlage oder Festplattenabbilder") == "Die Verlage liegen hier."
    assert _best_text(doc, index, "Notenverlage oder Abbilder") == "Die Abbilder liegen hier."


def test_stand_ins_are_bounded_for_long_and_short_unseen_terms() -> None:
    _, index = _compound_index()
    assert index.parts(["abbild" * 2_000]) == []  # longer than MAX_SPLIT_CHARS: not split, held by no term
    assert index.parts(["abbildx"]) == ["abbild"]  # (split when short)
    assert index.parts(["rbe"]) == []  # under MIN_PART_CHARS
    assert index.hits("x" * 100_000, 3) == []


def test_a_saved_lexicon_indexes_again_only_the_pages_that_changed(tmp_path: Path) -> None:
    pages = {"postgresql-wal.html": _page("postgresql-wal.html"), "python-json.html": _page("python-json.html")}
    versions = {"postgresql-wal.html": "v1", "python-json.html": "v1"}
    parsed: list[str] = []

    def read(doc_id: str) -> Document:
        parsed.append(doc_id)
        return pages[doc_id]

    lexicon = Lexicon(lambda: versions, read)
    lexicon.save(tmp_path)  # brought in step first: both pages parsed once
    assert sorted(parsed) == sorted(pages)
    saved = LexicalIndex.load(tmp_path)
    assert saved.versions == versions

    parsed.clear()
    reopened = Lexicon(lambda: versions, read)
    reopened.restore(saved)
    query = "What is the valid range of checkpoint_timeout?"
    assert reopened.hits(query, 5) == lexicon.hits(query, 5) and parsed == []  # nothing parsed again

    pages["python-json.html"] = _manual()
    versions["python-json.html"] = "v2"
    gone = Lexicon(lambda: versions, read)
    gone.restore(LexicalIndex.load(tmp_path))
    hits = gone.hits("frobnicator traces", 3)
    assert parsed == ["python-json.html"]  # only the changed page
    assert hits and hits[0].doc_id == "python-json.html"

    # an index read at the first search (``saved``, e.g. from a database) is read once, and only
    # the pages changed since are parsed; a restore before that search wins over it
    parsed.clear()
    reads: list[int] = []
    lazy = Lexicon(lambda: versions, read, saved=lambda: reads.append(1) or LexicalIndex.load(tmp_path))
    assert reads == []  # nothing read at construction
    assert lazy.hits("frobnicator traces", 3)[0].doc_id == "python-json.html" and lazy.hits(query, 5)
    assert reads == [1] and parsed == ["python-json.html"]
    given = Lexicon(lambda: versions, read, saved=lambda: reads.append(2) or None)
    given.restore(lazy.index)
    given.refresh()
    assert reads == [1]  # the saved index was never read


def test_a_damaged_saved_index_is_refused(tmp_path: Path) -> None:
    LexicalIndex.build(sentence_units(_manual())).save(tmp_path)
    (tmp_path / "lexical-lengths.npy").write_bytes(b"garbage")
    with pytest.raises(ValueError):
        LexicalIndex.load(tmp_path)


def test_a_saved_page_language_that_is_no_string_is_refused(tmp_path: Path) -> None:
    LexicalIndex.build(sentence_units(_manual())).save(tmp_path)
    meta = json.loads(gzip.decompress((tmp_path / "lexical.json.gz").read_bytes()))
    meta["pages"][0]["language"] = ["de"]
    (tmp_path / "lexical.json.gz").write_bytes(gzip.compress(json.dumps(meta).encode()))
    with pytest.raises(ValueError, match="language"):
        LexicalIndex.load(tmp_path)


def test_replacing_a_page_matches_a_fresh_build() -> None:
    wal, js = _page("postgresql-wal.html"), _page("python-json.html")
    index = LexicalIndex.build(sentence_units(wal) + sentence_units(js))
    index.hits("warm", 1)
    manual = _manual()
    index.add_page("python-json.html", [(p, t) for _, p, t in sentence_units(manual)])
    fresh = LexicalIndex.build(sentence_units(wal) + [("python-json.html", p, t) for _, p, t in sentence_units(manual)])
    assert index.search("frobnicator checkpoint", 10) == fresh.search("frobnicator checkpoint", 10)
    index.remove_page("python-json.html")
    assert all(d == "postgresql-wal.html" for d, _, _ in index.search("frobnicator checkpoint", 10))


# -- fusion --------------------------------------------------------------------------------
def _dense(doc: Document, query_words: str) -> tuple[list[PassageHit], list[Hit]]:
    """A stand-in passage ranking (passages in document order, falling scores), expanded."""
    ranked = [PassageHit(doc.doc_id or "", p.members, 1.0 / (1 + i)) for i, p in enumerate(passages(doc))]
    search = sentence_search(
        lambda n: ranked[:n], query=query_words, documents={doc.doc_id or "": doc}, order="overlap"
    )
    return ranked, list(search(256))


def test_rrf_orders_by_summed_reciprocal_ranks_and_keeps_hits() -> None:
    a = [Hit("d", frozenset({(0,)}), 0.9), Hit("d", frozenset({(1,)}), 0.8), Hit("d", frozenset({(2,)}), 0.7)]
    b = [Hit("d", frozenset({(2,)}), 5.0), Hit("d", frozenset({(3,)}), 4.0)]
    fused = rrf([a, b], k=1)
    assert [h.paths for h in fused] == [frozenset({(2,)}), frozenset({(0,)}), frozenset({(1,)}), frozenset({(3,)})]
    assert fused[0].score == pytest.approx(1 / 4 + 1 / 2)
    shared = rrf(
        [[Hit("d", frozenset({(0,)}), 1.0), Hit("d", frozenset({(1,)}), 1.0)], b[:0]], k=1, shared_ties=[True, False]
    )
    assert shared[0].score == shared[1].score == pytest.approx(1 / 2)


def test_fusion_keeps_sentence_path_sets_and_lifts_the_named_sentence() -> None:
    doc = _manual()
    query = "Which flag enables frobnicator traces?"
    _, dense = _dense(doc, query)
    index = LexicalIndex.build(sentence_units(doc))
    search = fused_search(lambda n: dense[:n], lambda n: index.hits(query, n), pool=64, lexical_pool=8, k=1)
    fused = search(32)
    members = {s.paths for s in sentences(doc)}
    assert fused and all(h.doc_id == "manual" and h.paths in members for h in fused)
    text = {paths: t for _, paths, t in sentence_units(doc)}
    assert "frobnicator" in text[fused[0].paths]
    assert search(4) == fused[:4]  # every round reads a prefix of one ranking
    results = aggregate(search, documents={"manual": doc}, budget=200, size=approx_tokens)
    for r in results:
        for c in r.citations:
            assert c.paths in members
            own = next(s.text for s in sentences(doc) if s.paths == c.paths)
            assert " ".join(own.split()) in " ".join(c.text.split())


def test_an_index_holds_its_units_compactly() -> None:
    """Every page's sentences stay in memory as long as a retriever or ``spire index`` runs: held
    as path-set sets and lists of term strings they took 704 bytes per 20-term unit (65 MB for
    the 140 bench pages), encoded and as vocabulary ids 177."""
    import gc
    import random
    import tracemalloc

    words = [f"word{i}ing" for i in range(300)]

    def units() -> Iterator[tuple[frozenset[tuple[int, ...]], str]]:  # fresh path sets, as a parse makes them
        rng = random.Random(2)
        for i in range(5000):
            paths = frozenset({(1, 0, 3, i // 7, i % 7), (1, 0, 3, i // 7, i % 7, 0)})
            yield paths, " ".join(rng.choice(words) for _ in range(20))

    index = LexicalIndex()
    index.add_page("warm", list(units())[:10])  # the tokenizer's and stemmer's own tables
    index.remove_page("warm")
    tracemalloc.start()
    try:
        index.add_page("page", units())
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held / 5000 < 300
    [hit] = index.hits("word7ing word8ing word9ing", 1)  # still searchable
    assert hit.doc_id == "page" and len(hit.paths) == 2
