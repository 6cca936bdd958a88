"""Document-aware aggregation (Section 3.1.2)."""

from __future__ import annotations

import importlib
import logging
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spire_core import (
    HTML,
    BudgetError,
    Document,
    Hit,
    Subdocument,
    aggregate,
    approx_tokens,
    global_context,
    parse_html,
    render,
    sentences,
)
from spire_core.document.render import render_indices
from spire_core.document.tree import LRU
from spire_core.reading.sentences import previous_sentences

from .strategies import html_pages

#: the module (``spire_core.query.aggregate`` the attribute is the function)
aggregate_module = importlib.import_module("spire_core.query.aggregate")

PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"

FOO = """<html><head><title>Foo</title></head><body>
<h1>First header of Foo</h1>
<p>Foo is a small library for parsing configuration files.
The valid range of the timeout setting is between 30 seconds and one day.</p>
</body></html>"""


def _foo(page: str = FOO) -> tuple[Document, Hit, Hit]:
    doc = parse_html(page, doc_id="foo")
    generic, answer = (s for s in sentences(doc) if s.text.startswith(("Foo is", "The valid")))
    return doc, Hit("foo", generic.paths, 0.9), Hit("foo", answer.paths, 0.8)


def _own_cost(doc: Document, hit: Hit) -> int:
    """A hit's own cost: its own context (global context and the sentence before it) rendered."""
    own = aggregate_module.own_context(doc, HTML, frozenset(doc.indices(hit.paths)))
    return approx_tokens(render_indices(doc, own))


def _naive(doc: Document, hits: list[Hit], budget: int) -> list[Hit]:
    """Greedy admission costing each hit alone with its own global context (the paper's naive strategy)."""
    admitted, total = [], 0
    for hit in hits:
        cost = _own_cost(doc, hit)
        if total + cost <= budget:
            admitted.append(hit)
            total += cost
    return admitted


@lru_cache(maxsize=1)
def _corpus() -> tuple[dict[str, Document], list[tuple[str, frozenset[tuple[int, ...]]]]]:
    docs = {p.name: parse_html(p.read_bytes(), doc_id=p.name) for p in sorted(PAGES.glob("*.html"))}
    units = [(doc_id, s.paths) for doc_id, doc in docs.items() for s in sentences(doc)]
    return docs, units


# -- Example 3.1 -------------------------------------------------------------------------
def test_example_3_1_merged_view_admits_both_hits() -> None:
    doc, x1, x2 = _foo()
    budget = 35
    # costed separately, each with its own title + header, the two hits do not fit together
    assert _own_cost(doc, x1) <= budget
    assert _own_cost(doc, x1) + _own_cost(doc, x2) > budget
    assert _naive(doc, [x1, x2], budget) == [x1]

    [result] = aggregate([x1, x2], documents={"foo": doc}, budget=budget)
    assert result.seeds == x1.paths | x2.paths
    assert result.cost == approx_tokens(result.text) <= budget
    # title and header are paid once, both sentences are delivered
    assert result.text.startswith("# Foo\n\n# First header of Foo\n\n")
    assert result.text.count("# Foo\n") == 1 and result.text.count("First header of Foo") == 1
    assert "small library" in result.text and "30 seconds and one day" in result.text
    assert [c.paths for c in result.citations] == [x1.paths, x2.paths]


def test_budget_below_the_merged_view_keeps_only_the_first_hit() -> None:
    doc, x1, x2 = _foo()
    merged = approx_tokens(render(doc, global_context(doc, x1.paths | x2.paths)))
    [result] = aggregate([x1, x2], documents={"foo": doc}, budget=merged - 1)
    assert result.seeds == x1.paths
    assert "30 seconds" not in result.text


def test_a_later_hit_fits_when_an_earlier_one_does_not() -> None:
    doc, x1, x2 = _foo(FOO.replace("files.\n", "files.</p>\n<p>"))  # two paragraphs: x2's own context lacks x1
    budget = _own_cost(doc, x2)  # x1 alone is smaller: admitted, then x2 no longer fits
    big = Hit("foo", x2.paths, 0.95)
    [result] = aggregate([big, x1], documents={"foo": doc}, budget=budget)
    assert result.seeds == x2.paths  # the first hit fills the budget; x1 is skipped, not an error


def test_a_citation_shows_the_sentence_before_it_in_its_block() -> None:
    page = """<html><head><title>Settings</title></head><body><h2>Autovacuum</h2>
<p>The first paragraph ends here.</p>
<p>autovacuum_max_workers sets how many worker processes run at once. The default is three.</p>
<p>Another block. Its second sentence.</p></body></html>"""
    doc = parse_html(page, doc_id="s")
    by_text = {s.text: s for s in sentences(doc)}
    texts = ["The default is three.", "Another block."]
    cited = [Hit("s", by_text[t].paths, 1.0 - k / 10) for k, t in enumerate(texts)]
    [result] = aggregate(cited, documents={"s": doc}, budget=200)
    default, another = result.citations
    # "The default is three." names nothing alone: its citation shows the sentence before it ...
    assert "autovacuum_max_workers sets how many" in default.text and "Autovacuum" in default.text
    assert default.paths == by_text["The default is three."].paths  # ... and cites its own sentence only
    # the first sentence of a block gets none: the sentence before it is another block's
    assert "first paragraph" not in default.text and "three" not in another.text
    assert "Its second sentence" not in result.text


def test_no_hit_fitting_the_budget_is_logged_not_silent(caplog: pytest.LogCaptureFixture) -> None:
    doc, x1, x2 = _foo()
    with caplog.at_level(logging.WARNING, logger="spire_core.query.aggregate"):
        assert aggregate([x1, x2], documents={"foo": doc}, budget=_own_cost(doc, x1) - 1) == []
    assert "none of 2 hits fits the budget" in caplog.text and "'foo'" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spire_core.query.aggregate"):
        assert aggregate([x1, x2], documents={"foo": doc}, budget=_own_cost(doc, x1))
    assert "no evidence" not in caplog.text


def test_budget_must_be_positive() -> None:
    doc, x1, _ = _foo()
    for budget in (0, -5):
        with pytest.raises(BudgetError):
            aggregate([x1], documents={"foo": doc}, budget=budget)


def test_documents_may_be_a_callable() -> None:
    doc, x1, x2 = _foo()
    asked: list[str] = []

    def load(doc_id: str) -> Document:
        asked.append(doc_id)
        return doc

    [result] = aggregate([x1, x2], documents=load, budget=1000)
    assert result.seeds == x1.paths | x2.paths
    assert asked == ["foo"]  # loaded once per document


def test_unknown_paths_are_skipped_with_a_log_record(caplog: pytest.LogCaptureFixture) -> None:
    doc, x1, x2 = _foo()
    stale = Hit("foo", frozenset({(9, 9, 9)}), 0.99)
    with caplog.at_level(logging.WARNING, logger="spire_core.query.aggregate"):
        [result] = aggregate([stale, x1, x2], documents={"foo": doc}, budget=1000)
    assert result.seeds == x1.paths | x2.paths
    records = [r for r in caplog.records if r.name == "spire_core.query.aggregate"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    assert "[9, 9, 9]" in records[0].getMessage()


def test_duplicate_hits_are_cited_once() -> None:
    doc, x1, _ = _foo()
    [result] = aggregate([x1, x1, x1], documents={"foo": doc}, budget=1000)
    assert len(result.citations) == 1


# -- over real pages ---------------------------------------------------------------------
def _hits(units: list[tuple[str, frozenset[tuple[int, ...]]]], picks: list[int]) -> list[Hit]:
    return [Hit(units[k][0], units[k][1], 1.0 - n / 1000) for n, k in enumerate(picks)]


def test_one_subdocument_per_document_in_rank_order() -> None:
    docs, units = _corpus()
    by_doc: dict[str, list[int]] = {}
    for k, (doc_id, _) in enumerate(units):
        by_doc.setdefault(doc_id, []).append(k)
    names = sorted(by_doc)
    # interleave hits of every page: b, a, c, a, b, c, ...
    picks = [by_doc[names[(n + 1) % len(names)]][n] for n in range(12)]
    results = aggregate(_hits(units, picks), documents=docs, budget=4000)
    ids = [r.doc_id for r in results]
    assert len(ids) == len(set(ids)) == len(names)
    first_rank = {}
    for n, k in enumerate(picks):
        first_rank.setdefault(units[k][0], n)
    assert ids == sorted(ids, key=first_rank.__getitem__)
    for r in results:
        assert r.score == max(h.score for h in _hits(units, picks) if h.doc_id == r.doc_id)


def test_citations_are_per_seed_with_their_own_global_context() -> None:
    docs, units = _corpus()
    picks = list(range(0, len(units), max(1, len(units) // 25)))
    results = aggregate(_hits(units, picks), documents=docs, budget=1500)
    assert results
    for r in results:
        doc = docs[r.doc_id]
        assert frozenset().union(*(c.paths for c in r.citations)) == r.seeds
        # the global context of the seeds and of the sentence before each (in its block)
        before = doc.to_paths(previous_sentences(doc, frozenset(doc.indices(r.seeds))))
        assert r.paths == global_context(doc, r.seeds | before) == aggregate_module.own_paths(doc, r.seeds)
        for c in r.citations:
            assert c.doc_id == r.doc_id
            before = doc.to_paths(previous_sentences(doc, frozenset(doc.indices(c.paths))))
            assert c.text == render(doc, global_context(doc, c.paths | before))
            assert c.paths <= r.seeds


def test_search_prefix_grows_until_exhausted() -> None:
    doc, x1, x2 = _foo()
    pool = [x1, x2, *(Hit("foo", frozenset({p}), 0.5) for p in sentences(doc)[0].paths)]
    calls: list[int] = []

    def search(k: int) -> list[Hit]:
        calls.append(k)
        return pool[:k]

    aggregate(search, documents={"foo": doc}, budget=10_000, first_k=2)
    assert calls == [2, 4, 8]  # 5 hits: the prefix of 8 came back short, the search is exhausted


def test_search_prefix_stops_when_the_budget_is_filled() -> None:
    doc, x1, x2 = _foo()
    calls: list[int] = []

    def search(k: int) -> list[Hit]:
        calls.append(k)
        return [x2, x1][:k]

    aggregate(search, documents={"foo": doc}, budget=_own_cost(doc, x2), first_k=1)
    assert calls == [1]


def test_search_prefix_growth_is_bounded() -> None:
    docs, units = _corpus()
    calls: list[int] = []

    def search(k: int) -> list[Hit]:
        calls.append(k)
        return _hits(units, list(range(k)))

    aggregate(search, documents=docs, budget=10**9, first_k=3, max_rounds=3)
    assert calls == [3, 6, 12]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(min_value=0, max_value=10**6), min_size=0, max_size=40),
    budget=st.integers(min_value=1, max_value=1200),
)
def test_results_always_fit_the_budget(picks: list[int], budget: int) -> None:
    docs, units = _corpus()
    hits = _hits(units, [k % len(units) for k in picks])
    results = aggregate(hits, documents=docs, budget=budget, size=approx_tokens)
    assert sum(r.cost for r in results) <= budget
    for r in results:
        assert r.cost == approx_tokens(r.text)
        assert r.text == render(docs[r.doc_id], r.paths)
    assert len({r.doc_id for r in results}) == len(results)


def _one_by_one(hits: list[Hit], docs: dict[str, Document], budget: int) -> list[Subdocument]:
    """Admission hit by hit, with a rendering per admitted hit (what :func:`aggregate` did before runs)."""
    state = aggregate_module._Admission(docs, budget, approx_tokens, HTML, "markdown")
    for hit in hits:
        state.offer(hit)
    return state.result()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=st.lists(
        st.tuples(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=12)),
        min_size=1,
        max_size=14,
    ),
    budget=st.integers(min_value=1, max_value=1500),
)
@example(runs=[(2, 1), (0, 1)], budget=19)  # a heading already shown under the first hit costs the second nothing
def test_a_run_of_one_pages_hits_admits_what_one_by_one_admission_does(
    runs: list[tuple[int, int]], budget: int
) -> None:
    """Consecutive hits of a page (a passage's members) are tried together: the same hits are admitted,
    with the same citations, renderings and costs, as when each is tried alone."""
    docs, units = _corpus()
    picks = [(start + n) % len(units) for start, length in runs for n in range(length)]
    hits = _hits(units, picks)
    assert aggregate(hits, documents=docs, budget=budget, first_k=len(hits), max_rounds=1) == _one_by_one(
        hits, docs, budget
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page=html_pages(), data=st.data())
def test_what_a_rendering_grows_by_is_bounded_below_without_rendering(page: str, data: st.DataObject) -> None:
    """The bound that lets admission reject a hit unrendered: showing more of a page costs at least
    the tokens of the texts it newly shows joined with nothing between, less one per run of them
    that follow each other on the page (each may join a word already shown); and any rendering
    costs at least the tokens of all the texts it shows, joined with nothing between."""
    doc = parse_html(page)
    seeds = [s.paths for s in sentences(doc)]
    if not seeds:
        return
    shown = data.draw(st.lists(st.sampled_from(seeds), max_size=4))
    added = data.draw(st.lists(st.sampled_from(seeds), min_size=1, max_size=4))
    context: set[int] = set().union(*(set(HTML.indices(doc, doc.indices(p))) for p in shown))
    more = set().union(*(set(HTML.indices(doc, doc.indices(p))) for p in added))
    before = approx_tokens(render_indices(doc, context)) if context else 0
    grown = approx_tokens(render_indices(doc, context | more)) - before
    texts = aggregate_module._undelivered(doc, more - context, context)
    assert aggregate_module._least_added(doc, approx_tokens, texts, bool(context)) <= grown
    # from nothing: a bound of any rendering that shows ``more`` (what a seed offered to a group costs at least)
    alone = aggregate_module._undelivered(doc, more, set())
    assert aggregate_module._least_added(doc, approx_tokens, alone, False) <= before + grown


def test_the_bound_allows_for_texts_that_join_into_one_word() -> None:
    doc = parse_html("<html><body><p>Release<span>15</span> ships today.</p></body></html>")
    [s] = sentences(doc)
    more = set(HTML.indices(doc, doc.indices(s.paths)))
    texts = aggregate_module._undelivered(doc, more, set())
    grown = approx_tokens(render_indices(doc, more))
    assert approx_tokens(" ".join(doc.text[i] for i in texts)) > grown  # rendered, "Release15" is one word
    assert aggregate_module._least_added(doc, approx_tokens, texts, False) == grown


# -- options ---------------------------------------------------------------------------------
def test_the_size_function_counts_the_budget() -> None:
    doc, generic, answer = _foo()
    by_size = aggregate([generic, answer], documents={"foo": doc}, budget=40, size=len)
    assert sum(r.cost for r in by_size) == sum(len(r.text) for r in by_size)  # the size function was used
    assert sum(r.cost for r in by_size) <= 40


def test_per_page_memos_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aggregate_module, "OWN_MEMO_SIZE", 3)
    doc = parse_html(FOO, doc_id="foo")
    hits = [Hit("foo", frozenset({p}), 1.0) for p in doc.paths()]
    assert len(hits) > 3
    monkeypatch.setattr(aggregate_module, "INDICES_MEMO_SIZE", 2)
    aggregate(hits, documents={"foo": doc}, budget=10_000)
    own, indices = doc.memos[aggregate_module._OWN], doc.memos[aggregate_module._INDICES]
    closed = doc.memos[aggregate_module._CLOSED]
    assert isinstance(own, LRU) and isinstance(indices, LRU) and isinstance(closed, LRU)
    assert len(own) == len(closed) == 3 and len(indices) == 2


def test_memoised_aggregation_delivers_what_a_fresh_page_does() -> None:
    doc = parse_html(FOO, doc_id="foo")
    hits = [Hit("foo", frozenset({p}), 1.0 - i / 100) for i, p in enumerate(doc.paths())]
    first = aggregate(hits, documents={"foo": doc}, budget=60)
    again = aggregate(hits, documents={"foo": doc}, budget=60)  # every seed's indices and context memoised now
    fresh = aggregate(hits, documents={"foo": parse_html(FOO, doc_id="foo")}, budget=60)
    assert first == again == fresh


def test_searched_once_asks_once_and_again_only_for_more_than_it_holds() -> None:
    from spire_core.pipeline import searched_once

    asked: list[int] = []

    def search(n: int) -> list[int]:
        asked.append(n)
        return list(range(min(n, 100)))  # a store of 100 entries, best first

    ranked = searched_once(search, 32)
    assert [ranked(k) for k in (4, 8, 32)] == [list(range(4)), list(range(8)), list(range(32))]
    assert asked == [32]
    assert ranked(64) == list(range(64)) and asked == [32, 64]  # a round wanting more: asked again
    assert ranked(256) == list(range(100)) and asked == [32, 64, 256]
    assert ranked(512) == list(range(100)) and asked == [32, 64, 256]  # the store gave all it holds
