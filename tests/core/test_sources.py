"""Numbered sources for an answer prompt: one merged view per page, markers inside, within the budget."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spire_core import Hit, aggregate, approx_tokens, parse_html, seeds
from spire_core.results.sources import cite_sources, numbered

PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"


@pytest.fixture(scope="module")
def documents() -> dict[str, object]:
    return {name: parse_html((PAGES / name).read_bytes(), doc_id=name) for name in ("postgresql-wal.html",)}


def _results(documents: dict, budget: int, words: str = "checkpoint") -> list:
    doc = documents["postgresql-wal.html"]
    units = [s for s in seeds(doc) if words in s.own_text.lower()] + [s for s in seeds(doc)][:40]
    hits = [Hit("postgresql-wal.html", s.paths, 1.0 - i / 1000) for i, s in enumerate(units)]
    return aggregate(hits, documents=documents, budget=budget, size=approx_tokens)


@pytest.mark.parametrize("budget", [200, 1000])
def test_what_is_sent_fits_the_budget(documents: dict, budget: int) -> None:
    results = _results(documents, budget)
    assert sum(r.cost for r in results) <= budget
    sources = cite_sources(results, documents, budget=budget, size=approx_tokens)
    assert sources.cost == approx_tokens(sources.text) <= budget
    assert sources.shown, "something is sent"


def test_one_view_per_page_with_markers_for_its_citations(documents: dict) -> None:
    results = _results(documents, 1000)
    sources = cite_sources(results, documents)  # no budget: every citation shown
    assert sources.citations == numbered(results)
    assert sources.shown == frozenset(range(1, len(sources.citations) + 1))
    assert sources.text.count("Source: postgresql-wal.html") == 1
    marks = [int(n) for n in re.findall(r" \[(\d+)\]", sources.text)]
    assert sorted(set(marks)) == sorted(sources.shown)  # a citation spanning blocks is marked in each
    # the headings shared by all citations are sent once, not once per citation
    heading = "## 20.5. Write Ahead Log"
    assert sum(heading in c.text for c in sources.citations) > 1
    assert sources.text.count(heading) == 1
    # each marker follows its own citation's last words
    for n in (1, len(sources.citations)):
        own_last_line = sources.citations[n - 1].text.rstrip().splitlines()[-1]
        last_words = re.findall(r"\w+", own_last_line)[-1]
        before = sources.text.split(f" [{n}]", 1)[0]
        assert last_words in before[-200:]


def test_over_budget_leaves_out_the_lowest_scored_citations(documents: dict) -> None:
    results = _results(documents, 1000)
    full = cite_sources(results, documents)
    tight = cite_sources(results, documents, budget=full.cost // 2)
    assert tight.cost <= full.cost // 2
    left_out = full.shown - tight.shown
    assert left_out
    lowest = min(c.score or 0.0 for n, c in enumerate(full.citations, 1) if n in tight.shown)
    assert all((full.citations[n - 1].score or 0.0) <= lowest for n in left_out)
    for n in left_out:
        assert f"[{n}]" not in tight.text
