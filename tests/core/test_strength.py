"""Ranked evidence: each citation's own strength in [0, 1], strongest first, and the citation cut."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spire_core import Document, PassageHit, approx_tokens, parse_html, seeds
from spire_core.options import Cut, QueryOptions
from spire_core.pipeline import run_query
from spire_core.query.lexical import LexicalIndex
from spire_core.query.strength import _fold, _pointed, _score_views, ranked_evidence
from spire_core.values import Citation

FILLER = [
    "The archive keeps every record for later inspection by the staff.",
    "Records are grouped by the month in which they were written down.",
    "Each group is stored on its own shelf in the reading room.",
    "Visitors may ask the desk for any group they wish to consult.",
    "A copy of each record is made when the original is too fragile.",
]
ANSWER = "The harbour lighthouse was first lit on 14 March 1871 by the keeper Anna Berg."
# the answer sentence sits in the middle of one long paragraph (one passage), after other sentences
LONG = " ".join([*FILLER[:3], ANSWER, *FILLER[3:]])
PAGE = f"""<html><head><title>Town archive</title></head><body>
<h1>Town archive</h1>
<h2>Holdings</h2><p>{LONG}</p>
<h2>Opening hours</h2><p>The archive opens at nine and closes at five. It is shut on Sundays.</p>
<h2>Staff</h2><p>The archive has four archivists and a keeper of maps. New staff are trained for a year.</p>
</body></html>"""
QUESTION = "When was the harbour lighthouse first lit?"


def _vector(text: str) -> Counter[str]:
    return Counter(w for w in re.findall(r"\w+", text.lower()) if len(w) > 3)


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(a[w] * b[w] for w in a)
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


@pytest.fixture(scope="module")
def page() -> Document:
    return parse_html(PAGE, doc_id="archive.html")


def _query(doc: Document, question: str = QUESTION, **options: object) -> list:
    units = seeds(doc)
    q = _vector(question)
    ranked = sorted(((u, _cosine(q, _vector(u.text))) for u in units), key=lambda t: -t[1])

    def passages(n: int) -> list[PassageHit]:
        return [PassageHit(doc.doc_id or "", u.members or (u.paths,), score) for u, score in ranked[:n]]

    index = LexicalIndex()
    index.add_document(doc)
    opts = QueryOptions(budget=400, size=approx_tokens, **options)  # type: ignore[arg-type]
    return run_query(question, passages, {doc.doc_id or "": doc}, opts, lambda q, n: index.hits(q, n))


def test_the_answer_in_the_middle_of_a_long_passage_is_cited_first(page: Document) -> None:
    results = _query(page)
    first = ranked_evidence(results)[0]
    assert "14 March 1871" in first.text
    # its passage's other sentences are cited with it, not before it
    assert all("14 March 1871" not in c.text for c in ranked_evidence(results)[1:])


def test_strengths_are_in_the_unit_range_and_ordered(page: Document) -> None:
    results = _query(page, max_citations=None)
    strengths = [c.score for c in ranked_evidence(results, context=True)]
    assert strengths and all(s is not None and 0.0 <= s <= 1.0 for s in strengths)
    assert strengths == sorted(strengths, reverse=True)
    for sub in results:
        assert sub.score == max(c.score or 0.0 for c in sub.citations)
        assert [c.score for c in sub.citations] == sorted((c.score for c in sub.citations), reverse=True)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_the_cut_changes_what_is_cited_not_what_is_delivered(page: Document) -> None:
    full = _query(page, max_citations=None, relative_score=0.0)
    one = _query(page, max_citations=1)
    assert [r.text for r in full] == [r.text for r in one]  # the same delivered text and cost
    assert [r.cost for r in full] == [r.cost for r in one]
    named = ranked_evidence(one)
    assert len(named) == 1 and "14 March 1871" in named[0].text
    context = [c for r in one for c in r.citations if not c.evidence]
    assert len(context) == len(ranked_evidence(full)) - 1
    strict = _query(page, max_citations=None, min_score=1.0)
    assert ranked_evidence(strict) == []  # no citation is that strong: all delivered as context


def test_without_the_lexical_ranking_strengths_are_the_passages_similarity(page: Document) -> None:
    units = seeds(page)
    q = _vector(QUESTION)
    ranked = sorted(((u, _cosine(q, _vector(u.text))) for u in units), key=lambda t: -t[1])

    def passages(n: int) -> list[PassageHit]:
        return [PassageHit("archive.html", u.members or (u.paths,), score) for u, score in ranked[:n]]

    results = run_query(QUESTION, passages, {"archive.html": page}, QueryOptions(budget=400, max_citations=None))
    best = ranked_evidence(results)[0]
    assert best.score == pytest.approx(ranked[0][1])


@given(
    scores=st.lists(st.floats(0.0, 1.0), max_size=30).map(lambda s: sorted(s, reverse=True)),
    most=st.none() | st.integers(1, 40),
    floor=st.floats(0.0, 1.0),
    relative=st.floats(0.0, 1.0),
)
def test_the_cut_names_a_prefix_within_its_bounds(
    scores: list[float], most: int | None, floor: float, relative: float
) -> None:
    cut = Cut(most, floor, relative)
    n = cut.named(scores)
    assert 0 <= n <= len(scores) and (most is None or n <= most)
    assert all(s >= floor and s >= relative * scores[0] for s in scores[:n])
    if n < len(scores) and (most is None or n < most):
        assert scores[n] < max(floor, relative * scores[0])  # the first left out is too weak
    assert Cut(most, floor, relative).named(scores) <= Cut(None, floor, relative).named(scores)


def test_a_cut_is_checked() -> None:
    with pytest.raises(ValueError):
        Cut(0)
    with pytest.raises(ValueError):
        QueryOptions(min_score=1.5)
    with pytest.raises(ValueError):
        QueryOptions(relative_score=-0.1)


def test_the_filters_fallback_keeps_the_ranked_cut(page: Document) -> None:
    from spire_core.pipeline import filter_results

    results = _query(page, max_citations=2, relative_score=0.0)

    def ask(prompt: str) -> str:
        raise TimeoutError("the model is down")

    filtered = filter_results(QUESTION, results, {"archive.html": page}, ask, options=QueryOptions(budget=400))
    assert filtered.kept is None and not filtered.report["ok"]
    assert filtered.evidence.citations == ranked_evidence(results)
    assert len(filtered.evidence.citations) == 2 and "14 March 1871" in filtered.evidence.citations[0].text


def _rows(n: int) -> str:
    return "".join(
        f"<tr><td>Tower {chr(65 + k)}</td><td>{1850 + 3 * k}</td><td>{20 + (7 * k) % 23} m</td></tr>" for k in range(n)
    )


# a table page: a line of prose, then the table that answers
TABLE_PAGE = f"""<html><head><title>Coast towers</title></head><body><h1>Coast towers</h1>
<p>The coast has many lighthouse towers, and each tower has its own height and year.</p>
<table><tr><th>Tower</th><th>Year</th><th>Height</th></tr>{_rows(12)}</table></body></html>"""
# a manual page: prose that answers, and a table beside it whose notes share the question's words
NOTES = ["The lamp is lit at dusk.", "Painted white.", "Built of stone."]
MANUAL_PAGE = f"""<html><head><title>Keeper's manual</title></head><body><h1>Keeper's manual</h1>
<h2>The lamp</h2>{"".join(f"<p>{' '.join(FILLER[k:] + FILLER[:k])}</p>" for k in range(5))}
<p>The keeper trims the lamp wick every four hours through the night.</p>
{"".join(f"<p>{' '.join(reversed(FILLER[k:] + FILLER[:k]))}</p>" for k in range(5))}
<h2>Towers</h2><table><tr><th>Tower</th><th>Year</th><th>Note</th></tr>
{"".join(f"<tr><td>Tower {chr(65 + k)}</td><td>{1850 + k}</td><td>{NOTES[k % 3]}</td></tr>" for k in range(9))}
</table></body></html>"""


def test_a_table_pages_view_is_cited_first() -> None:
    doc = parse_html(TABLE_PAGE, doc_id="towers.html")
    first = ranked_evidence(_query(doc, "Which lighthouse tower has the greatest height?"))[0]
    tallest = max(range(12), key=lambda k: (20 + (7 * k) % 23, -k))
    assert "|---" in first.text and f"Tower {chr(65 + tallest)} |" in first.text  # the view, with the answer row


def test_a_table_beside_the_prose_that_answers_is_not_cited_first() -> None:
    doc = parse_html(MANUAL_PAGE, doc_id="manual.html")
    results = _query(doc, "How often does the keeper trim the lamp wick through the night?")
    cited = ranked_evidence(results, context=True)
    assert any("|---" in c.text for c in cited)  # the table was viewed, and is delivered
    assert "every four hours" in cited[0].text


# a reference page: each definition's term is a sentence of its own, and names the question's words best
REFERENCE_PAGE = """<html><head><title>Regular expressions</title></head><body>
<h1>Regular expressions</h1><h2>Functions</h2>
<dl><dt>compile(pattern)</dt><dd>Compile a regular expression pattern into a pattern object.
The object can be used for matching.</dd>
<dt>purge()</dt><dd>Clear the regular expression cache.</dd>
<dt>escape(pattern)</dt><dd>Escape special characters in pattern.
This is useful to match an arbitrary literal string.</dd></dl>
<h2>Caching</h2><p>Compiled patterns are kept in a cache of limited size. The most recent patterns are reused.</p>
</body></html>"""


def test_a_term_cited_alone_is_folded_into_its_definition() -> None:
    doc = parse_html(REFERENCE_PAGE, doc_id="re.html")
    results = _query(doc, "What does purge() do?")
    cited = ranked_evidence(results, context=True)
    # the term alone was the strongest match; the citation showing it (its definition under it) comes first
    assert cited[0].text.endswith("purge()\n: Clear the regular expression cache.")
    term = next(u.paths for u in seeds(doc, unit="sentence") if u.text.endswith("purge()"))
    assert term <= cited[0].paths  # it holds the term's sentence
    # no citation repeats another of its page whole: a reader reads each sentence once
    for c in cited:
        assert not any(o is not c and c.text.strip() in o.text for o in cited if o.doc_id == c.doc_id)
    # nothing is lost: every path the results delivered is still cited
    assert frozenset().union(*(c.paths for c in cited)) == frozenset().union(*(sub.seeds for sub in results))


def test_a_reference_made_by_a_folded_citation_points_at_the_one_holding_it() -> None:
    term = Citation("p", frozenset({(1, 0)}), "# Title\n\npurge()", score=0.6)
    definition = Citation("p", frozenset({(1, 1)}), "# Title\n\npurge()\n: Clear the cache.", score=0.4)
    followed = Citation("q", frozenset({(2, 0)}), "The cache.", score=0.3, referenced_by=term.key())
    keys: dict[str, str] = {}
    page = _fold([(term, False), (definition, False)], keys)
    assert [(c.paths, c.text, c.score) for c, _ in page] == [((term.paths | definition.paths), definition.text, 0.6)]
    assert _pointed(followed, keys).referenced_by == page[0][0].key()


def test_the_same_text_cited_twice_is_one_citation() -> None:
    row = "# Clubs\n\n| Club | Ground |\n|---|---|\n| Sholing | VT Group Sports Ground |"
    first, again = (
        Citation("p", frozenset({(1, 0)}), row, score=0.5),
        Citation("p", frozenset({(1, 1)}), row, score=0.4),
    )
    page = _fold([(first, True), (again, False)], {})
    assert [(c.paths, c.score, view) for c, view in page] == [(first.paths | again.paths, 0.5, True)]


def test_a_row_cited_beside_its_tables_view_is_folded_into_the_view() -> None:
    doc = parse_html(TABLE_PAGE, doc_id="towers.html")
    results = _query(doc, "Which lighthouse tower has the greatest height?")
    cited = ranked_evidence(results, context=True)
    assert any("|---" in c.text for c in cited)  # the view
    # no citation renders only sentences another one renders too
    assert not [(a.text, b.text) for a in cited for b in cited if a.doc_id == b.doc_id and a.paths < b.paths]
    assert frozenset().union(*(c.paths for c in cited)) == frozenset().union(*(sub.seeds for sub in results))


def test_a_view_no_seed_reached_comes_after_the_citation_as_strong() -> None:
    prose = Citation("p", frozenset({(1, 0)}), "The keeper trims the wick every four hours.", score=0.8)
    cell = Citation("p", frozenset({(3, 0)}), "| Tower A | 20 m |", score=0.5)
    named = Citation("p", frozenset({(2, 0), (2, 1)}), "| Tower | Year |", score=5.0)  # ranked first, holds no seed
    holding = Citation("p", frozenset({(3, 0), (3, 1)}), "| Tower | Height |", score=4.0)
    page = [(prose, False), (cell, False), (named, True), (holding, True)]
    _score_views([page], [True])
    # the best-ranked view is as strong as the page's best citation, but does not lead among equals
    assert page[2] == (named, False) and page[2][0].score == 0.8
    assert page[3][1] is True and page[3][0].score == 0.5  # a view holding a cell: as strong as it, and leads
