"""Table views (issue 11): positional, neighbour and extreme questions answered from the table itself.

A constructed results table (30 rows, too long to deliver whole) and a prose page compete
for the budget; each question's seed is the cell the question names, as similarity
ranking would find it. The delivered path sets must hold the row the question points at,
and the rendering must stay a well-formed Markdown table under its labels.
"""

from __future__ import annotations

import re

import pytest

from spire_core import (
    BudgetError,
    Citation,
    Document,
    Hit,
    Subdocument,
    aggregate,
    approx_tokens,
    down,
    global_context,
    parse_html,
    render,
    seeds,
)
from spire_core.table_view import SHAPES, question_shape, table_views

NAMES = [
    "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliett",
    "Kilo", "Lima", "Mike", "November", "Oscar", "Papa", "Quebec", "Romeo", "Sierra", "Tango",
    "Uniform", "Victor", "Whiskey", "Xray", "Yankee", "Zulu", "Ares", "Boreas", "Castor", "Draco",
]  # fmt: skip
#: points are not in rank order, so the extremes are rows in the middle of the table
POINTS = [(k * 37 + 49) % 101 + 10 for k in range(len(NAMES))]
TEAMS = ["Red Harbour", "Blue Mountain", "Green Valley"]

ROWS = "".join(
    f"<tr><td>{k + 1}</td><td>Rider {name}</td><td>Team {TEAMS[k % 3]}</td><td>{POINTS[k]}</td>"
    f"<td>1:{k:02d}:3{k % 10}</td></tr>"
    for k, name in enumerate(NAMES)
)
RACE = f"""<html><head><title>Mountain classic</title></head><body>
<h1>Mountain classic</h1>
<p>The race climbs three passes. Riders score points at each summit.</p>
<h2>Final classification</h2>
<table><tr><th>Rank</th><th>Rider</th><th>Team</th><th>Points</th><th>Time</th></tr>{ROWS}</table>
</body></html>"""
#: enough prose to fill the budget on its own, so the view has to make room
NOTES = (
    "<html><head><title>Race notes</title></head><body><h1>Race notes</h1><p>"
    + " ".join(f"On stage {k} the riders met spectators in town number {k} before the climb." for k in range(40))
    + "</p></body></html>"
)

BUDGET = 500


@pytest.fixture(scope="module")
def docs() -> dict[str, Document]:
    return {"race": parse_html(RACE, doc_id="race"), "notes": parse_html(NOTES, doc_id="notes")}


def _hits(docs: dict[str, Document], cell: str) -> list[Hit]:
    """The cell's seed first (as the ranking finds the row named by the question), then prose."""
    race = {s.own_text: s for s in seeds(docs["race"])}
    hits = [Hit("race", race[cell].paths, 0.9)]
    return hits + [Hit("notes", s.paths, 0.8 - 0.01 * k) for k, s in enumerate(seeds(docs["notes"]))]


def _answer(question: str, cell: str, docs: dict[str, Document]) -> list[Subdocument]:
    results = aggregate(_hits(docs, cell), documents=docs, budget=BUDGET)
    return table_views(question, results, docs, budget=BUDGET)


def _cell_paths(doc: Document, row: int, col: int) -> frozenset[tuple[int, ...]]:
    """Every path of the body cell at ``row`` (0 = first body row), ``col``, found by its place in the page."""
    table = next(p for p in doc.paths() if doc.get(p).tag == "table")
    rows = [p for p in down(doc, [table]) if doc.get(p).tag == "tr"]
    tr = sorted(rows)[row + 1]
    cell = [p for p in doc.get(tr).children if doc.get(p).tag in ("td", "th")][col]
    return down(doc, [cell])


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _well_formed(text: str) -> list[list[str]]:
    """The table's rows as cell lists, after checking the Markdown table shape."""
    lines = _table_lines(text)
    assert len(lines) >= 3 and re.fullmatch(r"\|(---\|)+", lines[1]), text
    rows = [[c.strip() for c in line[1:-1].split(" | ")] for line in [lines[0], *lines[2:]]]
    assert all(line.endswith("|") for line in lines)
    assert len({len(r) for r in rows}) == 1 and len(rows[0]) == lines[1].count("---")
    return rows


def _race(results: list[Subdocument]) -> Subdocument:
    return next(r for r in results if r.doc_id == "race")


def _check_delivery(results: list[Subdocument], docs: dict[str, Document]) -> None:
    """Budget kept; every result is the rendering of the global context of its seeds; views cite their cells."""
    assert sum(r.cost for r in results) <= BUDGET
    for r in results:
        doc = docs[r.doc_id]
        assert r.paths == global_context(doc, r.seeds)
        assert r.text == render(doc, r.paths) and r.cost == approx_tokens(r.text)
        for c in r.citations:
            assert c.paths <= r.seeds
            assert c.text == render(doc, global_context(doc, c.paths))


@pytest.mark.parametrize(
    ("question", "cell", "row", "col"),
    [
        ("Which rider is listed first?", "Rider Kilo", 0, 1),
        ("Who is the last rider in the classification?", "Rider Kilo", len(NAMES) - 1, 1),
        ("What rider is listed next after Rider Kilo?", "Rider Kilo", 11, 1),
        ("Which rider came before Rider Kilo?", "Rider Kilo", 9, 1),
        ("Which rider scored the most points?", "Rider Kilo", POINTS.index(max(POINTS)), 1),
        ("Which rider scored the least points?", "Rider Kilo", POINTS.index(min(POINTS)), 1),
        ("Which team does Rider Kilo ride for?", "Rider Kilo", 10, 2),
    ],
)
def test_the_row_the_question_points_at_is_delivered(
    question: str, cell: str, row: int, col: int, docs: dict[str, Document]
) -> None:
    results = _answer(question, cell, docs)
    _check_delivery(results, docs)
    race = _race(results)
    answer = _cell_paths(docs["race"], row, col)
    assert answer <= race.paths
    view = race.citations[-1]
    assert answer <= view.paths  # the view itself cites the answer cell
    rows = _well_formed(view.text)
    header = rows[0]
    assert "Rider" in header and header[0] == "Rank"
    expected = docs["race"].subtree_text(docs["race"].index(min(answer)))
    assert any(expected in r for r in rows[1:])
    # the whole table does not fit the view's share: it is a choice of cells, not the table
    table = next(p for p in docs["race"].paths() if docs["race"].get(p).tag == "table")
    assert approx_tokens(render(docs["race"], down(docs["race"], [table]))) > BUDGET
    assert not all(_cell_paths(docs["race"], r, 4) <= view.paths for r in range(len(NAMES)))


def test_extreme_questions_get_the_whole_named_column(docs: dict[str, Document]) -> None:
    results = _answer("Which rider scored the most points?", "Rider Kilo", docs)
    view = _race(results).citations[-1]
    for row in range(len(NAMES)):
        assert _cell_paths(docs["race"], row, 3) <= view.paths, row
    rows = _well_formed(view.text)
    assert "Points" in rows[0]
    assert len(rows) == len(NAMES) + 1


def test_positional_questions_keep_the_end_they_name(docs: dict[str, Document]) -> None:
    first = _race(_answer("Which rider is listed first?", "Rider Kilo", docs)).citations[-1]
    last = _race(_answer("Who is the last rider?", "Rider Kilo", docs)).citations[-1]

    def delivered(view: Citation, row: int) -> bool:
        return _cell_paths(docs["race"], row, 1) <= view.paths

    assert delivered(first, 0) and delivered(first, 1)
    assert delivered(last, len(NAMES) - 1) and delivered(last, len(NAMES) - 2)


def test_prose_makes_room_for_the_view(docs: dict[str, Document]) -> None:
    hits = _hits(docs, "Rider Kilo")
    plain = aggregate(hits, documents=docs, budget=BUDGET)
    viewed = table_views("Which rider came before Rider Kilo?", plain, docs, budget=BUDGET)
    notes_before = next(r for r in plain if r.doc_id == "notes")
    notes_after = next((r for r in viewed if r.doc_id == "notes"), None)
    assert notes_after is None or len(notes_after.citations) < len(notes_before.citations)
    # what is dropped is the lowest-scored prose, never the seed the table was found by
    if notes_after is not None:
        kept = [c.score or 0.0 for c in notes_after.citations]
        dropped = [c.score or 0.0 for c in notes_before.citations if c not in notes_after.citations]
        assert min(kept) > max(dropped)
    assert hits[0].paths <= _race(viewed).seeds


def test_results_without_table_cells_are_unchanged(docs: dict[str, Document]) -> None:
    prose = [Hit("notes", s.paths, 0.5) for s in seeds(docs["notes"])]
    results = aggregate(prose, documents=docs, budget=BUDGET)
    assert table_views("Which rider came last?", results, docs, budget=BUDGET) == results


def test_budget_and_share_are_checked(docs: dict[str, Document]) -> None:
    with pytest.raises(BudgetError):
        table_views("Which rider came last?", [], docs, budget=0)
    with pytest.raises(ValueError):
        table_views("Which rider came last?", [], docs, budget=10, share=1.5)


@pytest.mark.parametrize(
    ("question", "shape"),
    [
        ("who was the first team to win the title?", "first"),
        ("what is the earliest date listed?", "first"),
        ("who was the last head of the family?", "last"),
        ("which is the most recent album?", "last"),
        ("what cyclist is listed next after the winner?", "next"),
        ("who finished directly below the champion?", "next"),
        ("what album was released before the live one?", "previous"),
        ("which station is listed above the bridge?", "previous"),
        ("which player weighed the most?", "most"),
        ("which country has the highest gdp?", "most"),
        ("which party received the least votes?", "least"),
        ("which stadium has the smallest capacity?", "least"),
        ("who is the only serbian player?", "none"),
        ("how long did the walk take?", "none"),
    ],
)
def test_question_shape(question: str, shape: str) -> None:
    assert shape in SHAPES
    assert question_shape(question) == shape


@pytest.mark.parametrize("question", ["Which rider scored the most points?", "Which rider scored the least points?"])
def test_extremes_of_the_named_column_come_first_when_it_does_not_fit(question: str, docs: dict[str, Document]) -> None:
    results = aggregate(_hits(docs, "Rider Kilo"), documents=docs, budget=BUDGET)
    view = _race(table_views(question, results, docs, budget=BUDGET, share=0.25)).citations[-1]
    delivered = [row for row in range(len(NAMES)) if _cell_paths(docs["race"], row, 3) <= view.paths]
    assert len(delivered) < len(NAMES)
    assert POINTS.index(max(POINTS)) in delivered and POINTS.index(min(POINTS)) in delivered
    _well_formed(view.text)


def test_a_table_the_question_names_gets_a_view_without_admitted_cells(docs: dict[str, Document]) -> None:
    prose = next(s for s in seeds(docs["race"]) if s.own_text.startswith("The race climbs"))
    results = aggregate([Hit("race", prose.paths, 0.9)], documents=docs, budget=BUDGET)
    assert not any(c.text.count("\n|") for r in results for c in r.citations)
    view = _race(table_views("Which rider scored the most points?", results, docs, budget=BUDGET)).citations[-1]
    best = POINTS.index(max(POINTS))
    assert _cell_paths(docs["race"], best, 1) <= view.paths and _cell_paths(docs["race"], best, 3) <= view.paths
    assert "Points" in _well_formed(view.text)[0]


QUOTE = """<html><body><h1>Interview</h1>
<table><tr><td>"</td><td>We rode the last pass in the rain.</td><td>"</td></tr>
<tr><td></td><td>The winner</td><td></td></tr></table></body></html>"""


def test_a_pull_quote_gets_no_view() -> None:
    docs = {"quote": parse_html(QUOTE, doc_id="quote")}
    hits = [Hit("quote", s.paths, 0.9) for s in seeds(docs["quote"]) if "rain" in s.own_text]
    results = aggregate(hits, documents=docs, budget=BUDGET)
    assert results and table_views("Who rode the last pass?", results, docs, budget=BUDGET) == results
