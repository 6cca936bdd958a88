"""Table views (issue 11): positional, neighbour and extreme questions answered from the table itself.

A constructed results table (30 rows, too long to deliver whole) and a prose page compete
for the budget; each question's seed is the cell the question names, as similarity
ranking would find it. The delivered path sets must hold the row the question points at,
and the rendering must stay a well-formed Markdown table under its labels. No word of the
question chooses the rows (issue 38): the questions are answered in any language.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings

from spire_core import (
    BudgetError,
    Citation,
    Document,
    Hit,
    Subdocument,
    aggregate,
    approx_tokens,
    down,
    parse_html,
    render,
    seeds,
)
from spire_core.document.tables import CELL_TAGS, grid
from spire_core.query.aggregate import own_paths
from spire_core.query.table_views import _cell_of, _column_numbers, _Lexicon, _number, table_views
from tests.core.strategies import html_pages

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
        assert r.paths == own_paths(doc, r.seeds)
        assert r.text == render(doc, r.paths) and r.cost == approx_tokens(r.text)
        for c in r.citations:
            assert c.paths <= r.seeds
            assert c.text == render(doc, own_paths(doc, c.paths))


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
    "question",
    [
        "Welcher Fahrer steht an letzter Stelle?",  # German: the last row
        "Quel coureur a marqué le plus de points ?",  # French: the most points
        "Wer kam direkt nach Rider Kilo?",  # German: the row after the named one
        "Which rider is listed first?",
    ],
)
def test_a_view_holds_the_ends_the_neighbours_and_the_extremes_in_any_language(
    question: str, docs: dict[str, Document]
) -> None:
    """No word of the question chooses the rows: the ends of the table and the admitted row's
    neighbours are in every view; the extremes of a numeric column when the question names it."""
    view = _race(_answer(question, "Rider Kilo", docs)).citations[-1]
    for row in (0, 1, len(NAMES) - 2, len(NAMES) - 1, 9, 10, 11):
        assert _cell_paths(docs["race"], row, 1) <= view.paths, row
    if "points" in question:
        for row in (POINTS.index(max(POINTS)), POINTS.index(min(POINTS))):
            assert _cell_paths(docs["race"], row, 3) <= view.paths, row
    _well_formed(view.text)


@pytest.mark.parametrize("question", ["Which rider scored the most points?", "Which rider scored the least points?"])
def test_extremes_of_the_named_column_come_first_when_it_does_not_fit(question: str, docs: dict[str, Document]) -> None:
    results = aggregate(_hits(docs, "Rider Kilo"), documents=docs, budget=BUDGET)
    view = _race(table_views(question, results, docs, budget=BUDGET, share=0.25)).citations[-1]
    delivered = [row for row in range(len(NAMES)) if _cell_paths(docs["race"], row, 3) <= view.paths]
    assert len(delivered) < len(NAMES)
    assert POINTS.index(max(POINTS)) in delivered and POINTS.index(min(POINTS)) in delivered
    _well_formed(view.text)


def test_extremes_of_the_named_column_are_not_crowded_out_by_admitted_rows(docs: dict[str, Document]) -> None:
    """The ranking admitted a dozen rows (none the extreme one) and the view fits a few: the row
    with the most points still comes before the admitted rows, the row the question names first."""
    race = {s.own_text: s for s in seeds(docs["race"])}
    top = POINTS.index(max(POINTS))
    admitted = [k for k in range(len(NAMES)) if k not in (top, POINTS.index(min(POINTS)))][:12]
    hits = [Hit("race", race[f"Rider {NAMES[k]}"].paths, 0.9 - 0.01 * n) for n, k in enumerate(admitted)]
    results = aggregate(hits, documents=docs, budget=BUDGET)
    question = f"Did Rider {NAMES[admitted[-1]]} score the most points?"
    view = _race(table_views(question, results, docs, budget=BUDGET, share=0.15)).citations[-1]
    delivered = [row for row in range(len(NAMES)) if _cell_paths(docs["race"], row, 3) <= view.paths]
    assert len(delivered) < len(admitted)  # the view cannot hold every admitted row
    assert top in delivered and admitted[-1] in delivered
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


# -- which table gets the view ------------------------------------------------------------
#: a discography: two tables of singles, the first sharing the page's topic words in every row
DISCS = [f"Song number {k}" for k in range(24)]
DISCOGRAPHY = f"""<html><head><title>Singles discography</title></head><body>
<h1>Singles discography</h1>
<h2>Compilation singles</h2>
<table><tr><th>Year</th><th>Title</th><th>Album</th></tr>
{"".join(f"<tr><td>{1990 + k}</td><td>Compilation {k}</td><td>non-album single {k}</td></tr>" for k in range(12))}
</table>
<h2>Studio singles</h2>
<table><tr><th>Year</th><th>Title</th><th>Album</th></tr>
{"".join(f"<tr><td>{1950 + k}</td><td>{t}</td><td>Studio album {k}</td></tr>" for k, t in enumerate(DISCS[:11]))}
<tr><td>1961</td><td>Omega Race</td><td>Studio album 11</td></tr>
{"".join(f"<tr><td>{1962 + k}</td><td>{t}</td><td>Studio album {12 + k}</td></tr>" for k, t in enumerate(DISCS[12:]))}
</table></body></html>"""


def _tables(doc: Document) -> list[tuple[int, ...]]:
    return sorted(p for p in doc.paths() if doc.get(p).tag == "table")


def _body_cell(doc: Document, table: int, row: int, col: int) -> frozenset[tuple[int, ...]]:
    """Every path of the body cell at ``row`` (0 = first body row), ``col`` of the page's ``table``-th table."""
    rows = sorted(p for p in down(doc, [_tables(doc)[table]]) if doc.get(p).tag == "tr")
    cell = [p for p in doc.get(rows[row + 1]).children if doc.get(p).tag in ("td", "th")][col]
    return down(doc, [cell])


def _seed(doc: Document, text: str) -> Hit:
    return Hit(doc.doc_id, next(s for s in seeds(doc) if s.own_text == text).paths, 0.9)


def _views(out: list[Subdocument], results: list[Subdocument]) -> list[Citation]:
    """The views ``table_views`` added, in the order it ranked their tables."""
    before = {c for r in results for c in r.citations}
    return [c for r in out for c in r.citations if c not in before]


def test_the_table_holding_the_row_the_question_names_is_viewed_first() -> None:
    """The ranking admitted a cell of the other table (it shares the topic word "single"); the row named wins."""
    doc = parse_html(DISCOGRAPHY, doc_id="discs")
    docs = {"discs": doc}
    results = aggregate([_seed(doc, "non-album single 3")], documents=docs, budget=BUDGET)
    out = table_views('What is the next single listed after "Omega Race"?', results, docs, budget=BUDGET)
    _check_delivery(out, docs)
    view = _views(out, results)[0]  # the first view, the one that takes what it needs
    assert "## Studio singles" in view.text and "Compilation" not in view.text
    named, after = _body_cell(doc, 1, 11, 1), _body_cell(doc, 1, 12, 1)
    assert named <= view.paths and after <= view.paths  # the row named and the one after it
    rows = _well_formed(view.text)
    assert rows[0] == ["Year", "Title", "Album"]
    assert [r[1] for r in rows[1:]].index("Omega Race") + 1 == [r[1] for r in rows[1:]].index(DISCS[12])


GAMES = [f"Tycoon {k}" for k in range(40)]
_GAME = "<tr><td>{}</td><td>{}</td><td>Studio {}</td><td>A sequel with new maps and many more levels</td></tr>"
CHRONOLOGY = f"""<html><head><title>Chronology of business simulation games</title></head><body>
<h1>Chronology of business simulation games</h1>
<table><tr><th>Year</th><th>Game</th><th>Developer</th><th>Notes</th></tr>
{"".join(_GAME.format(1980 + k, g, k) for k, g in enumerate(GAMES[:10]))}
<tr><td>1990</td><td>Simbusiness</td><td>Online</td><td>Multiplayer business simulation game</td></tr>
{"".join(_GAME.format(1991 + k, g, 10 + k) for k, g in enumerate(GAMES[10:20]))}
<tr><td>2001</td><td>Pirate Cove</td><td>Frog City</td><td>Island building</td></tr>
{"".join(_GAME.format(2002 + k, g, 20 + k) for k, g in enumerate(GAMES[20:]))}
</table></body></html>"""
#: the Frog City row (0 = first body row), in the middle of the table
FROG = 21


def test_words_the_page_title_holds_do_not_pick_the_row() -> None:
    """ "business simulation game" names the table (its title); "Frog City" names the row."""
    doc = parse_html(CHRONOLOGY, doc_id="games")
    docs = {"games": doc}
    results = aggregate([_seed(doc, "Tycoon 3")], documents=docs, budget=BUDGET)
    question = "What was the only business simulation game developed by Frog City?"
    view = table_views(question, results, docs, budget=BUDGET, share=0.3)[0].citations[-1]
    delivered = [r for r in range(len(GAMES) + 2) if _body_cell(doc, 0, r, 1) <= view.paths]
    assert len(delivered) < len(GAMES) + 2  # a choice of rows, not the table
    assert FROG in delivered and FROG - 1 in delivered and FROG + 1 in delivered  # the row named, its neighbours
    rows = _well_formed(view.text)
    assert rows[[r[1] for r in rows].index("Pirate Cove")][:3] == ["2001", "Pirate Cove", "Frog City"]


SEASON = """<html><head><title>1916 basketball team</title></head><body>
<h1>1916 basketball team</h1>
<h2>Standings</h2>
<table><tr><th>Team</th><th>W</th><th>L</th></tr>
<tr><td>Minnesota</td><td>10</td><td>2</td></tr><tr><td>Illinois</td><td>10</td><td>2</td></tr>
<tr><td>Purdue</td><td>7</td><td>2</td></tr><tr><td>Iowa</td><td>1</td><td>8</td></tr></table>
<h2>Statistics</h2>
<table><tr><th>Player</th><th>Games Played</th><th>Points</th></tr>
<tr><td>Ralf Woods</td><td>16</td><td>178</td></tr><tr><td>Clyde Alwood</td><td>15</td><td>114</td></tr>
<tr><td>George Halas</td><td>11</td><td>2</td></tr><tr><td>R.C. Haas</td><td>4</td><td>2</td></tr></table>
</body></html>"""


def test_a_table_whose_labels_the_question_names_outranks_an_admitted_one() -> None:
    doc = parse_html(SEASON, doc_id="season")
    docs = {"season": doc}
    results = aggregate([_seed(doc, "Minnesota")], documents=docs, budget=BUDGET)
    out = table_views("Who got two points in the least games played?", results, docs, budget=BUDGET)
    _check_delivery(out, docs)
    first = _views(out, results)[0]
    assert "## Statistics" in first.text and "Standings" not in first.text
    assert _body_cell(doc, 1, 3, 0) <= first.paths and _body_cell(doc, 1, 3, 1) <= first.paths
    rows = _well_formed(first.text)
    assert rows[0] == ["Player", "Games Played", "Points"] and ["R.C. Haas", "4", "2"] in rows


MANUAL = """<html><head><title>Date types</title></head><body>
<h1>Date types</h1>
<p>Interval values are stored internally as months, days, and microseconds.</p>
<table><tr><th>Function</th><th>Description</th></tr>
<tr><td>age</td><td>Extract field from interval</td></tr>
<tr><td>now</td><td>Current date and time</td></tr>
<tr><td>justify</td><td>Adjust interval so 30-day periods are months</td></tr></table>
</body></html>"""


def test_a_prose_answer_keeps_its_sentences_from_tables_sharing_common_words() -> None:
    doc = parse_html(MANUAL, doc_id="manual")
    docs = {"manual": doc}
    results = aggregate([_seed(doc, MANUAL.split("<p>")[1].split("</p>")[0])], documents=docs, budget=BUDGET)
    assert table_views("As which fields are interval values stored?", results, docs, budget=BUDGET) == results


RANDOM = f"""<html><head><title>Mathematical functions</title></head><body>
<h1>Mathematical functions</h1>
<table><caption>Mathematical Functions</caption><tr><th>Function</th><th>Description</th></tr>
{"".join(f"<tr><td>f{k}(x)</td><td>Returns the value of the function number {k} at x</td></tr>" for k in range(60))}
</table>
<table><caption>Random Functions</caption><tr><th>Function</th><th>Description</th></tr>
<tr><td>random()</td><td>Returns a random value in the range 0.0 &lt;= x &lt; 1.0</td></tr>
<tr><td>setseed(x)</td><td>Sets the seed for subsequent random() calls</td></tr></table>
</body></html>"""


def test_a_two_row_table_holding_an_admitted_cell_is_viewed_whole() -> None:
    doc = parse_html(RANDOM, doc_id="math")
    docs = {"math": doc}
    hits = [_seed(doc, "setseed(x)"), Hit("math", _seed(doc, "f3(x)").paths, 0.8)]
    results = aggregate(hits, documents=docs, budget=BUDGET)
    out = table_views("What range of values does random() return?", results, docs, budget=BUDGET)
    _check_delivery(out, docs)
    answer = _body_cell(doc, 1, 0, 1)
    assert answer <= out[0].paths
    view = next(c for c in out[0].citations if answer <= c.paths)
    rows = _well_formed(view.text)
    assert view.text.startswith("# Mathematical functions") and "Random Functions" in view.text
    assert rows[0] == ["Function", "Description"] and [r[0] for r in rows[1:]] == ["random()", "setseed(x)"]


def test_row_words_match_whole_words_only() -> None:
    """ "arrange" names no row holding "Arran"; a plural matches its singular."""
    doc = parse_html(
        "<html><body><table><tr><th>Council</th><th>Area</th></tr><tr><td>Isle of Arran</td><td>432</td></tr>"
        "<tr><td>Dundee City</td><td>60</td></tr><tr><td>Orkney Islands</td><td>990</td></tr></table></body></html>",
        doc_id="areas",
    )
    table = doc.index(_tables(doc)[0])
    lexicon = _Lexicon("if you arrange the councils by area, which is first?", [(doc, table)])
    assert lexicon.row_weights(doc, table) == [0.0, 0.0, 0.0]
    assert lexicon.labels(doc, table)
    assert _Lexicon("which island is listed?", [(doc, table)]).row_weights(doc, table)[2] > 0


def test_a_pipe_in_a_cell_is_escaped_and_the_table_stays_well_formed() -> None:
    """GitHub tables split cells at every unescaped pipe, in code spans too: ``||/`` is delivered as ``\\|\\|/``."""
    doc = parse_html(
        "<html><body><table><tr><th>Operator</th><th>Description</th></tr>"
        "<tr><td><code>||/</code></td><td>Cube root</td></tr><tr><td><code>|/</code></td><td>Square root</td></tr>"
        "<tr><td><code>@</code></td><td>Absolute value</td></tr></table></body></html>",
        doc_id="ops",
    )
    docs = {"ops": doc}
    results = aggregate([_seed(doc, "Cube root")], documents=docs, budget=BUDGET)
    view = table_views("Which operator computes the cube root?", results, docs, budget=BUDGET)[0].citations[-1]
    rows = _well_formed(view.text)
    assert ["\\|\\|/", "Cube root"] in rows and len(rows[0]) == 2


def _ranked_below_prose(docs: dict[str, Document], race_seed: str = "Rider Kilo") -> list[Subdocument]:
    """The table's page (its seed ``race_seed``) ranks below twelve prose sentences and above the rest."""
    prose = [s.paths for s in seeds(docs["notes"])]
    race = {s.own_text: s for s in seeds(docs["race"])}
    hits = [Hit("notes", p, 0.8 - 0.001 * k) for k, p in enumerate(prose[:12])]
    hits += [Hit("race", race[race_seed].paths, 0.6)]
    hits += [Hit("notes", p, 0.5 - 0.001 * k) for k, p in enumerate(prose[12:])]
    return aggregate(hits, documents=docs, budget=BUDGET)


def _better_prose(results: list[Subdocument]) -> list[Citation]:
    return [c for r in results for c in r.citations if r.doc_id == "notes" and (c.score or 0.0) > 0.6]


def test_a_view_never_displaces_a_better_scored_citation_of_another_page(docs: dict[str, Document]) -> None:
    plain = _ranked_below_prose(docs)
    better = _better_prose(plain)
    assert len(better) == 12
    question = "Who came just before Kilo?"  # names no column label of the table
    viewed = table_views(question, plain, docs, budget=BUDGET)
    kept = next(r for r in viewed if r.doc_id == "notes").citations
    assert all(c in kept for c in better)
    assert len(_race(viewed).citations) > 1  # the view was still delivered, in what the better prose left
    _check_delivery(viewed, docs)


def test_a_view_of_a_table_the_question_names_may_displace_better_scored_prose(docs: dict[str, Document]) -> None:
    plain = _ranked_below_prose(docs)
    viewed = table_views("Which rider came before Rider Kilo?", plain, docs, budget=BUDGET)  # names "Rider"
    kept = next(r for r in viewed if r.doc_id == "notes").citations
    assert 0 < len([c for c in kept if (c.score or 0.0) > 0.6]) < len(_better_prose(plain))
    assert _cell_paths(docs["race"], 9, 1) <= _race(viewed).seeds  # the row before Kilo's
    _check_delivery(viewed, docs)


def test_a_table_the_ranking_missed_is_pointed_at_by_a_label_no_result_holds(docs: dict[str, Document]) -> None:
    """The ranking reached the table's page but none of its cells, and nothing admitted says "points"."""
    plain = _ranked_below_prose(docs, "The race climbs three passes.")
    assert not any("Points" in c.text or "points" in c.text for r in plain for c in r.citations)
    viewed = table_views("Which rider scored the most points?", plain, docs, budget=BUDGET)
    kept = next(r for r in viewed if r.doc_id == "notes").citations
    assert len([c for c in kept if (c.score or 0.0) > 0.6]) < len(_better_prose(plain))
    best = POINTS.index(max(POINTS))
    assert _cell_paths(docs["race"], best, 1) <= _race(viewed).seeds
    assert _cell_paths(docs["race"], best, 3) <= _race(viewed).seeds
    _check_delivery(viewed, docs)


def test_a_table_the_ranking_missed_yields_when_the_results_hold_the_label_named(docs: dict[str, Document]) -> None:
    """The question names "Rider", which the admitted prose says ("the riders met spectators"): the
    view takes only what the better prose of the other page and its own page's sentence leave."""
    plain = _ranked_below_prose(docs, "The race climbs three passes.")
    viewed = table_views("Which rider met the spectators in the town?", plain, docs, budget=BUDGET)
    kept = next(r for r in viewed if r.doc_id == "notes").citations
    assert all(c in kept for c in _better_prose(plain))
    assert _race(plain).citations[0] in _race(viewed).citations
    _check_delivery(viewed, docs)


PACKAGE_ROWS = [
    "".join(f"<tr><td>tool{t}{k}</td><td>Utility number {k} of group {t} for daily work</td></tr>" for k in range(12))
    for t in "abc"
]
PACKAGE_TIPS = f"""<html><head><title>Package management</title></head><body><h1>Package management</h1>
<h2>Precautions</h2><p>{" ".join(f"Caution number {k} applies to every system you run." for k in range(16))}
Never install any package with dpkg --force-all -i, since it skips every check.
{" ".join(f"Remark number {k} is worth keeping in mind." for k in range(16))}</p>
<h2>Tools</h2><table><tr><th>Package</th><th>Description</th></tr>{PACKAGE_ROWS[0]}</table>
<h2>Archivers</h2><table><tr><th>Package</th><th>Description</th></tr>{PACKAGE_ROWS[1]}</table>
<h2>Editors</h2><table><tr><th>Package</th><th>Description</th></tr>{PACKAGE_ROWS[2]}</table>
</body></html>"""


def test_tables_sharing_a_generic_label_do_not_displace_the_sentence_that_answers() -> None:
    """Every table of a manual page has a "Package" column; the question says "package", and so
    does the admitted prose: no view may push out the sentence that answers (issue 38)."""
    doc = parse_html(PACKAGE_TIPS, doc_id="tips")
    docs = {"tips": doc}
    prose = [s for s in seeds(doc) if s.own_text.startswith(("Caution", "Never", "Remark"))]
    answer = next(k for k, s in enumerate(prose) if s.own_text.startswith("Never"))
    hits = [Hit("tips", s.paths, 0.9 - 0.01 * abs(k - answer)) for k, s in enumerate(prose)]
    results = aggregate(hits, documents=docs, budget=BUDGET)
    assert any("--force-all" in c.text for r in results for c in r.citations)
    viewed = table_views(
        "Which dpkg call must a beginner never use to install a package?", results, docs, budget=BUDGET
    )
    cited = [c for r in viewed for c in r.citations]
    assert all(c in cited for r in results for c in r.citations)  # a view only takes what is left
    _check_delivery(viewed, docs)


def test_equal_scores_drop_the_last_admitted_first(docs: dict[str, Document]) -> None:
    """A passage's members share its score and come best first: room for a view is made from its end."""
    race = {s.own_text: s for s in seeds(docs["race"])}
    hits = [Hit("race", race["Rider Kilo"].paths, 0.9)]
    hits += [Hit("notes", s.paths, 0.8) for s in seeds(docs["notes"])]
    plain = aggregate(hits, documents=docs, budget=BUDGET)
    before = next(r for r in plain if r.doc_id == "notes").citations
    viewed = table_views("Which rider came before Rider Kilo?", plain, docs, budget=BUDGET)
    after = next(r for r in viewed if r.doc_id == "notes").citations
    assert 0 < len(after) < len(before)
    assert after == before[: len(after)]


@settings(max_examples=100, deadline=None)
@given(html=html_pages())
def test_each_nodes_grid_cell_is_its_innermost_cells_in_the_nearest_table(html: str) -> None:
    # _cell_of reads a per-page table: it must say what walking up from the node says
    doc = parse_html(html + "<table><tr><td><table><tr><td><p>inner</p></td></tr></table></td></tr></table>")
    for node in range(len(doc)):
        cell = next((a for a in (node, *doc.ancestors(node)) if doc.tag[a] in CELL_TAGS), None)
        table = None if cell is None else next((a for a in doc.ancestors(cell) if doc.tag[a] == "table"), None)
        expected = None if table is None or cell not in grid(doc, table).cells else (table, cell)
        assert _cell_of(doc, node) == expected


# -- numbers and other languages (issue 38) -------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,5", 1.5),  # one and a half (it was read as fifteen)
        ("2,5 km", 2.5),
        ("1,500", 1500.0),  # either convention: a lone separator before three digits reads as English does
        ("1.500", 1.5),
        ("1,234,567", 1234567.0),
        ("1.234.567", 1234567.0),
        ("1.234,5", 1234.5),
        ("$1,200.50", 1200.5),
        ("3.25", 3.25),
        ("-1,5", -1.5),
        ("1:02:03", 3723.0),
        ("1:02,5", 62.5),
        ("1\u00a0500", 1500.0),
        ("12.05.2010", 12052010.0),
        ("n/a", None),
    ],
)
def test_numbers_are_read_in_either_decimal_convention(text: str, value: float | None) -> None:
    assert _number(text) == value


def test_a_column_of_decimal_commas_reads_its_ambiguous_cells_so() -> None:
    """ "1,500" is fifteen hundred alone, one and a half in a column whose cells write decimal commas."""
    assert _column_numbers(["1,5", "1,500", "12,25", "9"]) == [1.5, 1.5, 12.25, 9.0]
    assert _column_numbers(["1.5", "1,500", "12.25"]) == [1.5, 1500.0, 12.25]
    assert _column_numbers(["1.234", "2.345.678", "12"]) == [1234.0, 2345678.0, 12.0]
    assert _column_numbers(["—", "", "Rider"]) == [None, None, None]


#: a German page: seconds behind the winner written with decimal commas, one to two decimals,
#: so that reading "12,25" as 1225 (commas dropped) picks other rows than the true extremes
GAPS = [f"{p // 4},{25 * (p % 4):02d}".replace(",00", "").replace(",50", ",5") for p in POINTS]
_GERMAN_ROW = "<tr><td>{}</td><td>Fahrer {}</td><td>Team {}</td><td>{}</td></tr>"
GERMAN = f"""<html lang="de"><head><title>Bergklassiker</title></head><body>
<h1>Bergklassiker</h1>
<p>Das Rennen führt über drei Pässe. An jedem Gipfel gibt es Punkte.</p>
<h2>Gesamtwertung</h2>
<table><tr><th>Rang</th><th>Fahrer</th><th>Mannschaft</th><th>Rückstand (Sekunden)</th></tr>
{"".join(_GERMAN_ROW.format(k + 1, n, TEAMS[k % 3], GAPS[k]) for k, n in enumerate(NAMES))}
</table></body></html>"""


def test_a_german_question_names_a_column_of_a_german_table_and_gets_its_extremes() -> None:
    """The question's words are matched as the page's language reads them (German stop words
    and stems: "größten Rückstands" names "Rückstand"); the column's decimal commas are read
    as such, so the rows with the largest and the smallest gap are in the view."""
    doc = parse_html(GERMAN, doc_id="rennen")
    assert doc.language == "de"
    docs = {"rennen": doc}
    gaps = [p / 4 for p in POINTS]
    most, least = gaps.index(max(gaps)), gaps.index(min(gaps))
    dropped = [float(g.replace(",", "")) for g in GAPS]  # the old reading: commas dropped
    assert {dropped.index(max(dropped)), dropped.index(min(dropped))} != {most, least}
    results = aggregate([_seed(doc, "Fahrer Kilo")], documents=docs, budget=BUDGET)
    question = "Welcher Fahrer hatte den größten Rückstand?"
    view = table_views(question, results, docs, budget=BUDGET, share=0.25)[0].citations[-1]
    delivered = [r for r in range(len(NAMES)) if _body_cell(doc, 0, r, 3) <= view.paths]
    assert len(delivered) < len(NAMES)  # a choice of rows, not the table
    assert most in delivered and least in delivered
    rows = _well_formed(view.text)
    assert rows[0][:2] == ["Rang", "Fahrer"] and "Rückstand (Sekunden)" in rows[0]  # the key and named columns
    gap = rows[0].index("Rückstand (Sekunden)")
    assert any(r[1] == f"Fahrer {NAMES[most]}" and r[gap] == GAPS[most] for r in rows[1:])
    lexicon = _Lexicon(question, [(doc, doc.index(_tables(doc)[0]))])
    terms = lexicon.question_terms(doc)  # German stems, German stop words ("welcher", "hatte", "den") left out
    assert {"fahr", "ruckstand"} <= terms and not {"welch", "hatt", "den"} & terms


def test_a_verb_names_its_noun_label_and_a_digit_names_a_row() -> None:
    """Labels are matched loosely by stem ("weighed" names "Weight": stems "weigh", "weight"), rows by
    whole stems; a one-digit number is a word ("number 9"), a one-letter word is not."""
    cells = "".join(f"<tr><td>{k}</td><td>Player {n}</td><td>{180 + 7 * k % 40}</td></tr>" for k, n in enumerate(NAMES))
    doc = parse_html(
        f"<html><body><table><tr><th>No.</th><th>Player</th><th>Weight</th></tr>{cells}</table></body></html>",
        doc_id="squad",
    )
    table = doc.index(_tables(doc)[0])
    assert _Lexicon("who weighed the most?", [(doc, table)]).labels(doc, table)
    nine = _Lexicon("who is player number 9?", [(doc, table)]).row_weights(doc, table)
    assert nine.index(max(nine)) == 9 and max(nine) > 0
    heaviest = max(range(len(NAMES)), key=lambda k: 180 + 7 * k % 40)
    results = aggregate([_seed(doc, "Player Kilo")], documents={"squad": doc}, budget=BUDGET)
    view = table_views("who weighed the most?", results, {"squad": doc}, budget=BUDGET, share=0.2)[0].citations[-1]
    assert _body_cell(doc, 0, heaviest, 2) <= view.paths


PARKS = [f"Park {name}" for name in NAMES]
#: founding years; the latest (2011) shared by two parks far apart in the table, neither admitted
FOUNDED = [1950 + (k * 7) % 40 for k in range(len(PARKS))]
FOUNDED[5] = FOUNDED[22] = 2011
_PARK = "<tr><td>{}</td><td>Region {}</td><td>{}</td><td>Lakes, forests and trails</td></tr>"
PARK_PAGE = f"""<html><head><title>National parks</title></head><body><h1>National parks</h1>
<table><tr><th>Park</th><th>Region</th><th>Founded</th><th>Notes</th></tr>
{"".join(_PARK.format(p, k % 4, y) for k, (p, y) in enumerate(zip(PARKS, FOUNDED, strict=True)))}
</table></body></html>"""


def test_every_row_sharing_an_extreme_is_in_the_view() -> None:
    """Two parks share the latest founding year: "the park founded last" may be either, so the view
    holds both, though it fits only a few rows and the ranking admitted others."""
    doc = parse_html(PARK_PAGE, doc_id="parks")
    docs = {"parks": doc}
    results = aggregate([_seed(doc, PARKS[k]) for k in (10, 11, 12, 13)], documents=docs, budget=BUDGET)
    view = _views(table_views("Which park was founded last?", results, docs, budget=BUDGET, share=0.2), results)[0]
    delivered = [k for k in range(len(PARKS)) if _body_cell(doc, 0, k, 0) <= view.paths]
    assert len(delivered) < len(PARKS) // 2
    assert 5 in delivered and 22 in delivered
    _well_formed(view.text)
