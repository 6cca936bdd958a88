"""Global contextualization (Section 2.3): title, headers, lists, tables, composition, laws."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spire_core import (
    HEADERS,
    HTML,
    LISTS,
    NONE,
    TABLES,
    TITLE,
    Document,
    Path,
    Policy,
    Rule,
    compose,
    down,
    global_context,
    parse_html,
    passages,
    render,
    sentences,
)
from spire_core.context import BOX_TITLES, EMPTY_HEADER_ROWS, IDIOMS, LEAD_INS, TABLE_TITLES, TERM_BLOCKS
from spire_core.context.lists import MAX_LABEL_CHILDREN, MAX_LIST_DEPTH, _terms
from spire_core.context.policy import MAX_LABEL_CHARS, MAX_LABEL_NODES, label_head
from spire_core.context.tables import MAX_COLUMN_LABELS, MAX_HEADER_ROWS
from spire_core.document.paths import down_indices
from spire_core.document.render import render_indices
from spire_core.document.tables import CELL_TAGS
from spire_core.document.tree import HEADING_LEVELS
from tests.core.strategies import html_pages, sentence_with

POLICIES = {
    "title": TITLE,
    "headers": HEADERS,
    "lists": LISTS,
    "tables": TABLES,
    "table-titles": TABLE_TITLES,
    "empty-header-rows": EMPTY_HEADER_ROWS,
    "lead-ins": LEAD_INS,
    "term-blocks": TERM_BLOCKS,
    "box-titles": BOX_TITLES,
    "html": HTML,
}


def ctx_text(doc: Document, text: str, policy: Policy = HTML) -> str:
    """The rendering of the sentence reading ``text`` with its global context."""
    return render(doc, global_context(doc, sentence_with(doc, text).paths, policy))


def added_texts(doc: Document, text: str, policy: Policy) -> list[str]:
    """Texts of the sentences (other than ``text``) that ``policy`` adds to the sentence ``text``."""
    seed = sentence_with(doc, text).paths
    got = down(doc, global_context(doc, seed, policy))  # an added element stands for its text
    return [s.text for s in sentences(doc) if s.text != text and any(p in got for p in s.paths if doc.get(p).is_text)]


# -- Figure 1 --------------------------------------------------------------------------
FIGURE_1 = """<html><head><title>Virginia State Parks</title></head><body>
<h1>Virginia State Parks</h1>
<p>Virginia's park system protects forests, rivers and beaches. Visitors come all year.</p>
<h2>Key Takeaways</h2>
<ul><li>Virginia has 43 state parks.</li><li>The first parks opened in 1936.</li></ul>
<h2>History</h2><p>The system grew slowly.</p>
</body></html>"""


def test_figure_1_items_1_to_3() -> None:
    doc = parse_html(FIGURE_1)
    # (1) a sentence under the title only
    first = ctx_text(doc, "Visitors come all year.")
    assert first == "# Virginia State Parks\n\nVisitors come all year."
    # (2) a bullet: title, section header "Key Takeaways", the bullet, no sibling bullet
    second = ctx_text(doc, "Virginia has 43 state parks.")
    assert second == "# Virginia State Parks\n\n## Key Takeaways\n\n- Virginia has 43 state parks."
    # (3) merged: title and header paid once
    merged = (
        sentence_with(doc, "Visitors come all year.").paths | sentence_with(doc, "Virginia has 43 state parks.").paths
    )
    text = render(doc, global_context(doc, merged))
    assert text.count("Virginia State Parks") == 1 and text.count("Key Takeaways") == 1
    assert "first parks opened" not in text and "History" not in text


def test_title_heading_is_shown_once_when_it_repeats_the_title() -> None:
    doc = parse_html(FIGURE_1)
    assert doc.title == "Virginia State Parks"
    assert doc.get(doc.title_path or ()).tag == "h1"


# -- headers ---------------------------------------------------------------------------
HEADERS_PAGE = """<html><body>
<h1>Manual</h1>
<h2>Install</h2>
<div class="wrapper"><p>Sibling div paragraph.</p></div>
<h3>On Linux</h3><p>Linux step.</p>
<h3>On Mac</h3><p>Mac step.</p>
<section><h2>Configure</h2><p>Configure step.</p></section>
<p>After the section.</p>
<h4>Skipped level</h4><h3>Back to three</h3><p>Under three.</p>
</body></html>"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sibling div paragraph.", ["Manual", "Install"]),
        ("Linux step.", ["Manual", "Install", "On Linux"]),
        ("Mac step.", ["Manual", "Install", "On Mac"]),  # a later h3 supersedes the earlier h3
        ("Configure step.", ["Manual", "Configure"]),  # a later h2 supersedes h2 and h3
        ("After the section.", ["Manual", "Configure"]),  # document order, not tree ancestry
        ("Under three.", ["Manual", "Configure", "Back to three"]),  # h3 closes the h4
        ("On Mac", ["Manual", "Install"]),  # a heading gets the headings above it
        ("Manual", []),
    ],
)
def test_headers_by_document_order_and_rank(text: str, expected: list[str]) -> None:
    doc = parse_html(HEADERS_PAGE)
    assert added_texts(doc, text, HEADERS) == expected


BOXES_PAGE = """<h1>Doc</h1><h2>Main</h2>
<div class="admonition note"><h3>Note title</h3><p>Note text.</p>
<blockquote><h4>Inner</h4><p>Inner text.</p></blockquote><p>Note again.</p></div>
<p>After note.</p><aside><h2>Side</h2><p>Side text.</p></aside><p>After aside.</p><h3>Sub</h3><p>Sub text.</p>"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Note text.", ["Doc", "Main", "Note title"]),
        ("Inner text.", ["Doc", "Main", "Note title", "Inner"]),
        ("Note again.", ["Doc", "Main", "Note title"]),
        ("After note.", ["Doc", "Main"]),
        ("Side text.", ["Doc", "Side"]),
        # a heading in a box governs only its box, and does not close the headings outside it
        ("After aside.", ["Doc", "Main"]),
        ("Sub text.", ["Doc", "Main", "Sub"]),
    ],
)
def test_boxed_headings_scope_their_box(text: str, expected: list[str]) -> None:
    doc = parse_html(BOXES_PAGE)
    assert added_texts(doc, text, HEADERS) == expected


def test_headers_add_only_heading_elements() -> None:
    doc = parse_html(HEADERS_PAGE)
    seed = sentence_with(doc, "Under three.").paths
    added = global_context(doc, seed, HEADERS) - seed
    assert {doc.get(p).tag for p in added} == {"h1", "h2", "h3"}


def test_headers_render_with_levels() -> None:
    doc = parse_html(HEADERS_PAGE)
    assert ctx_text(doc, "Mac step.", HEADERS) == "# Manual\n\n## Install\n\n### On Mac\n\nMac step."


# -- lists -----------------------------------------------------------------------------
LISTS_PAGE = """<html><body>
<p>We cook every day. The menu includes:</p>
<ol><li>Breakfast</li><li>Lunch <ul><li>Sandwich</li><li>Salad <ul><li>Green dressing</li></ul></li></ul></li></ol>
<p>Not a lead-in.</p><ul><li>Plain item</li></ul>
<dl><dt>timeout</dt><dd>Seconds to wait.</dd><dt>host</dt><dt>hostname</dt><dd>Where to connect.</dd>
<dd>Defaults to localhost.</dd></dl>
<p>Options are:</p><div class="wrap"><ul><li>Wrapped item</li></ul></div>
</body></html>"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sandwich", ["The menu includes:", "Lunch"]),
        ("Salad", ["The menu includes:", "Lunch"]),
        ("Green dressing", ["The menu includes:", "Lunch", "Salad"]),
        ("Breakfast", ["The menu includes:"]),
        ("Plain item", []),
        ("Seconds to wait.", ["timeout"]),
        ("Where to connect.", ["host", "hostname"]),
        ("Defaults to localhost.", ["host", "hostname"]),  # a second dd shares the terms
        ("Wrapped item", ["Options are:"]),  # lead-in across a wrapper div
    ],
)
def test_list_labels(text: str, expected: list[str]) -> None:
    doc = parse_html(LISTS_PAGE)
    assert added_texts(doc, text, LISTS) == expected


def test_nested_item_rendering_has_labels_but_no_siblings() -> None:
    doc = parse_html(LISTS_PAGE)
    assert ctx_text(doc, "Salad", LISTS) == "The menu includes:\n\n2. Lunch\n   - Salad"
    green = ctx_text(doc, "Green dressing", LISTS)
    assert "Sandwich" not in green and "Breakfast" not in green
    assert green.splitlines()[-1] == "     - Green dressing"


def test_list_rule_for_selected_elements_not_only_text() -> None:
    """Selecting the <li>, the <dd> or the <ol> element itself gets the same labels as its text."""
    doc = parse_html(LISTS_PAGE, segment=False)
    by_text = {doc.get(p).text: p for p in doc.paths() if doc.get(p).is_text}
    salad_li = by_text["Salad "][:-1]
    assert doc.get(salad_li).tag == "li"
    got = global_context(doc, [salad_li], LISTS)
    assert by_text["Lunch "] in got
    assert by_text["Sandwich"][:-1] not in got
    dd = by_text["Seconds to wait."][:-1]
    assert doc.get(dd).tag == "dd"
    assert by_text["timeout"][:-1] in global_context(doc, [dd], LISTS)
    ol = by_text["Breakfast"][:-2]
    assert doc.get(ol).tag == "ol"
    assert by_text["We cook every day. The menu includes:"][:-1] in global_context(doc, [ol], LISTS)


def test_lead_in_without_sentences_is_the_paragraph() -> None:
    doc = parse_html(LISTS_PAGE, segment=False)
    paths = [p for p in doc.paths() if doc.get(p).text == "Breakfast"]
    added = global_context(doc, paths, LISTS) - set(paths)
    assert [doc.get(p).tag for p in sorted(added)] == ["p"]


def _terms_by_walking_back(doc: Document, dd: int) -> tuple[int, ...]:
    """The dt run just before ``dd``'s run of dd, found the direct way (nearest first, capped)."""
    siblings = list(doc.children[doc.parent[dd]])
    k = siblings.index(dd) - 1
    while k >= 0 and doc.tag[siblings[k]] == "dd":
        k -= 1
    terms = []
    while k >= 0 and doc.tag[siblings[k]] == "dt":
        terms.append(siblings[k])
        k -= 1
    return tuple(terms[:MAX_LABEL_CHILDREN])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["dt", "dd", "div", "text"]), max_size=80))
def test_dd_terms_in_one_pass_are_the_dt_run_before_each_dd_run(kinds: list[str]) -> None:
    body = "".join("loose " if k == "text" else f"<{k}>{k}{n}</{k}>" for n, k in enumerate(kinds))
    doc = parse_html(f"<dl>{body}</dl>", segment=False)
    dds = [i for i, tag in enumerate(doc.tag) if tag == "dd"]
    assert [_terms(doc, dd) for dd in dds] == [_terms_by_walking_back(doc, dd) for dd in dds]


LONG = 4 * MAX_LABEL_CHILDREN


@pytest.mark.parametrize(
    "body",
    [
        # an item leading with many children, then many nested lists: each nested item's label
        "<ul><li>" + "<b>lead</b> " * LONG + "<ul><li>Nested.</li></ul>" * LONG + "</li></ul>",
        # items inside wrappers of one item: each one's label is every wrapper before it
        "<ul><li>" + "<div><li>Wrapped.</li></div>" * LONG + "</li></ul>",
        # many terms before many definitions
        "<dl>" + "<dt>term</dt>" * LONG + "<dd>Defined.</dd>" * LONG + "</dl>",
    ],
)
def test_list_labels_are_capped_so_contexts_stay_linear_in_the_page(body: str) -> None:
    """Without the cap these pages put ~LONG nodes in the context of each of ~LONG items."""
    doc = parse_html(f"<title>t</title>{body}")
    table = LISTS.table(doc)
    assert max(len(t) for t in table) <= 2 * MAX_LABEL_CHILDREN  # an item's label and a dl's terms
    assert sum(len(t) for t in table) <= 2 * MAX_LABEL_CHILDREN * len(doc)
    labelled = [t for t in table if t]
    assert labelled and all(len(t) <= 2 * MAX_LABEL_CHILDREN for t in labelled)
    widest = max(table, key=len)
    assert len(widest) >= MAX_LABEL_CHILDREN  # the cap, not an empty label, bounds them


def test_a_capped_label_keeps_the_leading_children_and_the_nearest_terms() -> None:
    doc = parse_html(
        "<ul><li>" + "".join(f"<b>L{k}</b>" for k in range(40)) + "<ul><li>Nested.</li></ul></li></ul>"
        "<dl>" + "".join(f"<dt>T{k}</dt>" for k in range(40)) + "<dd>Defined.</dd></dl>"
    )
    shown = re.findall(r"L\d+", render(doc, global_context(doc, sentence_with(doc, "Nested.").paths, LISTS)))
    # the first children, sentence sentinels among them
    assert shown == [f"L{k}" for k in range(len(shown))]
    assert MAX_LABEL_CHILDREN - 2 <= len(shown) < MAX_LABEL_CHILDREN
    terms = re.findall(r"T\d+", render(doc, global_context(doc, sentence_with(doc, "Defined.").paths, LISTS)))
    assert terms == [f"T{k}" for k in range(40 - MAX_LABEL_CHILDREN, 40)]  # the nearest ones


@pytest.mark.parametrize(
    ("level", "deepest"),
    [
        ("<ul><li>L{k}", "<ul><li>Deepest. Done."),  # an item's label (not the innermost item's)
        ("<ol><li>L{k}", "<ol><li>Deepest. Done."),
        ("<dl><dt>L{k}<dd>", "Deepest. Done."),  # a dd's term
        ("<div><p>L{k}:</p><ul><li>", "Deepest. Done."),  # a list's lead-in
    ],
)
def test_lists_nested_past_the_depth_cap_label_nothing(level: str, deepest: str) -> None:
    """Labels come from the outer :data:`MAX_LIST_DEPTH` lists: nesting 2,000 labelled lists once
    rendered 49 MB of passages from 30 KB of HTML (each of 2,000 contexts held 128 labels)."""
    for levels in (MAX_LIST_DEPTH, 3 * MAX_LIST_DEPTH):
        doc = parse_html("".join(level.format(k=k) for k in range(levels)) + deepest)
        ctx = global_context(doc, sentence_with(doc, "Deepest.").paths)
        assert re.findall(r"L\d+", render(doc, ctx)) == [f"L{k}" for k in range(MAX_LIST_DEPTH)]


def test_deeply_nested_labelled_lists_pack_into_passages_linear_in_the_page() -> None:
    page = "<ul><li>label" + "<ul><li>label. " * 1000
    units = passages(parse_html(page))
    assert sum(len(u.text) for u in units) < 30 * len(page)  # 850x before the depth cap


#: A section whose heading sits in a labelled cell, item or term, then the section's text.
SECTIONS = {
    "column label": "<table><tr><th>Label {k}</th></tr><tr><td><h2>Section {k}</h2></td></tr></table>{body}",
    "row label": "<table><tr><th>Label {k}</th><td><h2>Section {k}</h2></td></tr></table>{body}",
    "item label": "<ul><li>Label {k}<ul><li><h2>Section {k}</h2></li></ul></li></ul>{body}",
    "term": "<dl><dt>Label {k}</dt><dd><h2>Section {k}</h2></dd></dl>{body}",
    "lead-in": "<p>Label {k}:</p><ul><li><h2>Section {k}</h2></li></ul>{body}",
}


@pytest.mark.parametrize("section", [*SECTIONS.values(), None], ids=[*SECTIONS, "text in the cell"])
def test_a_heading_in_a_labelled_structure_brings_no_earlier_section(section: str | None) -> None:
    """Labels label the content under a heading, not the heading. A heading's labels once
    brought the headings active at them, the previous section's, whose labels brought the one
    before: a unit's context held every earlier section, and 1,000 such sections (0.1 MB)
    rendered passages 440-660x the page in 30-60 s."""
    shape = section or "<table><tr><th>Label {k}</th></tr><tr><td><h2>Section {k}</h2>{body}</td></tr></table>"
    page = "".join(shape.format(k=k, body=f"<p>Body sentence {k} is here.</p>") for k in range(200))
    doc = parse_html(page)
    shown = ctx_text(doc, "Body sentence 150 is here.")
    if section is None:  # the cell's label labels the text, and brings the headings active at it
        assert re.findall(r"(Label|Section) (\d+)", shown) == [("Section", "149"), ("Label", "150"), ("Section", "150")]
    else:
        assert re.findall(r"(Label|Section) (\d+)", shown) == [("Section", "150")]
    # the heading's own text keeps its labels, and so the section before (one step back)
    heading = ctx_text(doc, "Section 150")
    assert "Label 150" in heading and set(re.findall(r"Section \d+", heading)) <= {"Section 149", "Section 150"}
    assert sum(len(u.text) for u in passages(doc)) < 2 * len(page)


def test_a_heading_holding_another_stands_for_what_it_holds_before_it() -> None:
    doc = parse_html("<h1>Top <b>bold</b><h2>Inner</h2>Tail text here.</h1><p>After text.</p>")
    shown = ctx_text(doc, "After text.", HEADERS)
    assert "Top" in shown and "bold" in shown and "Inner" in shown
    assert "Tail text" not in shown  # the h1's content after the heading it holds


@pytest.mark.parametrize(
    "nest",
    [
        "<h1>Gamma {k}</h5><th>Beta {k}.</th>",  # libxml2 nests an unclosed h1 in the one before
        "<h1>Top {k}<b><h2>Inner {k}</h2></b>",
        "<table><tr><th>L{k}</th></tr><tr><td><h2>S{k}<h3>x{k}</h3></h2></td></tr></table><p>Body {k}.</p>",
    ],
)
def test_nested_headings_bring_no_chain_through_the_page(nest: str) -> None:
    """Each heading of a nest brought the next one's first 2,048 characters, whose text brought
    the one after, and so on: 1,200 nested ``<h1>`` (36 KB) took 27 s, passages 450x the page."""
    page = "".join(nest.format(k=k) for k in range(300))
    doc = parse_html(page)
    assert sum(len(u.text) for u in passages(doc)) < 3 * len(page)


BIG = "Big label words. " * (MAX_LABEL_CHARS // 8)  # twice the bound, in one text node


@pytest.mark.parametrize(
    "page",
    [
        f"<title>{BIG}</title>" + "<p>Unit text.</p>" * 200,
        f"<h2>{BIG}</h2>" + "<p>Unit text.</p>" * 200,
        f"<table><tr><th>{BIG}</th></tr>" + "<tr><td>Unit text.</td></tr>" * 200 + "</table>",
        f"<table><caption>{BIG}</caption>" + "<tr><td>Unit text.</td></tr>" * 200 + "</table>",
        f"<dl><dt>{BIG}</dt>" + "<dd>Unit text.</dd>" * 200 + "</dl>",
        # an item's label of one text node: a run with no sentence break
        f"<ul><li>{BIG.replace('.', '')}<ul>" + "<li>Unit text.</li>" * 200 + "</ul></li></ul>",
    ],
)
def test_a_label_over_the_bounds_is_not_repeated_in_every_context(page: str) -> None:
    """A label of one text node (a title, heading, header cell, caption or term: never split into
    sentences) longer than :data:`MAX_LABEL_CHARS` labels nothing: each of 200 units once
    rendered it again (200 x 4 KB of passages from a 7 KB page)."""
    doc = parse_html(page)
    units = [s for s in sentences(doc) if s.text == "Unit text."]
    assert len(units) == 200
    for s in units[:3]:
        ctx = global_context(doc, s.paths)
        assert s.paths <= ctx and global_context(doc, ctx) == ctx
        assert "Big label" not in render(doc, ctx)
    assert sum(len(p.text) for p in passages(doc)) < 2 * len(page)  # the label, once, as a unit of its own


def test_a_label_over_the_bounds_is_shown_by_its_head() -> None:
    paras = "".join(f"<p>Lead paragraph {k} of the item.</p>" for k in range(400))
    doc = parse_html(f"<ul><li><div>{paras}</div><ul><li>Nested item.</li></ul></li></ul>")
    shown = render(doc, global_context(doc, sentence_with(doc, "Nested item.").paths))
    leads = re.findall(r"Lead paragraph (\d+)", shown)
    assert leads == [str(k) for k in range(len(leads))]  # the first paragraphs, in order
    assert 0 < len(leads) < 400 and len(shown) <= 2 * MAX_LABEL_CHARS  # (with Markdown's indents)
    head = label_head(doc, doc.tag.index("div"))
    assert head and all(doc.end[a] <= b for a, b in pairwise(head))  # disjoint, in order
    assert MAX_LABEL_CHARS - 40 < sum(len(doc.subtree_text(i)) for i in head) <= MAX_LABEL_CHARS
    small = parse_html("<ul><li><b>Short label</b><ul><li>x</li></ul></li></ul>")
    assert LISTS.table(small) is LISTS.rules[0].contributions(small)  # within the bounds: untouched


def test_what_one_node_contributes_is_bounded_in_all_the_nearest_labels_first() -> None:
    terms = "".join(f"<dt>T{k} " + "term words " * 30 + "</dt>" for k in range(40))  # ~330 characters each
    doc = parse_html(f"<dl>{terms}<dd>Defined here.</dd></dl>")
    shown = render(doc, global_context(doc, sentence_with(doc, "Defined here.").paths))
    kept = [int(k) for k in re.findall(r"T(\d+)", shown)]
    assert kept and kept[-1] == 39 and kept == list(range(kept[0], 40))  # the nearest terms
    assert len(kept) * 330 <= MAX_LABEL_CHARS + 330  # (the one crossing the bound by its head)


def test_a_label_of_many_small_nodes_is_bounded_by_its_node_count() -> None:
    lead = "<b>w</b>" * (2 * MAX_LABEL_NODES)
    doc = parse_html(f"<dl><dt>{lead}</dt><dd>Defined here.</dd></dl>")
    ctx = HTML.indices(doc, doc.indices(sentence_with(doc, "Defined here.").paths))
    assert MAX_LABEL_NODES // 2 < len(ctx) <= MAX_LABEL_NODES + 16


def test_a_cell_spanning_many_columns_has_at_most_the_column_label_cap() -> None:
    """A cell spanning 1,000 columns under 16 header rows was labelled by 16,000 header cells."""
    head = "".join("<tr>" + "".join(f"<th>R{r}C{c}</th>" for c in range(1000)) + "</tr>" for r in range(16))
    doc = parse_html(f"<table>{head}<tr><td colspan=1000>Wide cell.</td></tr></table>")
    ctx = global_context(doc, sentence_with(doc, "Wide cell.").paths, TABLES)
    labels = re.findall(r"R\d+C\d+", render(doc, ctx))
    assert labels == [f"R0C{c}" for c in range(MAX_COLUMN_LABELS)]  # the upper rows' first


def test_header_cells_of_a_row_are_labelled_by_its_first_not_a_chain() -> None:
    """Each ``<th>`` of a body row was labelled by the one to its left, and so by the whole row
    before it: 2,000 of them rendered passages 1,000x the page (10 s)."""
    row = "".join(f"<th>Head {k}.</th>" for k in range(200))
    page = f"<table><tr><td>Start.</td>{row}<td>Cell.</td></tr></table>"
    doc = parse_html(page)
    assert re.findall(r"Head \d+", ctx_text(doc, "Head 150.", TABLES)) == ["Head 0", "Head 150"]
    # a data cell keeps the nearest header cell, and through it the row's first
    assert re.findall(r"Head \d+", ctx_text(doc, "Cell.", TABLES)) == ["Head 0", "Head 199"]
    assert sum(len(u.text) for u in passages(doc)) < 2 * len(page)


def test_stacked_header_rows_label_from_the_first_ones_not_a_chain() -> None:
    """Each of 2,000 stacked header rows was labelled by the rows above it, and so by every row
    above: passages 350x the page (39 s)."""
    stack = "".join(f"<tr><th>H{k}.</th></tr>" for k in range(200))
    page = f"<table>{stack}<tr><td>Data.</td></tr></table>"
    doc = parse_html(page)
    first = [f"H{k}" for k in range(MAX_HEADER_ROWS)]
    assert re.findall(r"H\d+", ctx_text(doc, "H150.", TABLES)) == [*first, "H150"]
    # a data cell: the nearest header rows, and their labels (the first rows)
    nearest = [f"H{k}" for k in range(200 - MAX_HEADER_ROWS, 200)]
    assert re.findall(r"H\d+", ctx_text(doc, "Data.", TABLES)) == first + nearest
    assert sum(len(u.text) for u in passages(doc)) < 2 * len(page)


# -- tables ----------------------------------------------------------------------------
TABLE_PAGE = """<html><body>
<table><caption>Fruit sales</caption>
<thead><tr><th>Fruit</th><th>Quarter</th><th>Units</th><th>Price</th></tr></thead>
<tr><th rowspan="2">Apples</th><td>Q1</td><td>Ten</td><td>Cheap</td></tr>
<tr><td>Q2</td><td>Eleven</td><td>Dear</td></tr>
<tr><th>Pears</th><td colspan="2">No data</td><td>Mid</td></tr>
</table>
<table><tr><td>Name</td><td>Age</td><td>City</td></tr>
<tr><td>Bob</td><td>Forty</td><td>Lyon</td></tr></table>
<table><tr><th>Key</th><td>Value one</td></tr><tr><th>Other key</th><td>Value two</td></tr></table>
<table><tr><th colspan="2">Size</th></tr><tr><th>Width</th><th>Height</th></tr>
<tr><td>Wide</td><td>Tall</td></tr></table>
<table><tr><td>Lonely cell</td></tr></table>
</body></html>"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # labels are closed too: the row label "Apples" brings its own column label "Fruit"
        ("Ten", ["Fruit sales", "Fruit", "Units", "Apples"]),
        # second row of the rowspan: its first cell is in grid column 1 (Quarter), its row label Apples
        ("Q2", ["Fruit sales", "Fruit", "Quarter", "Apples"]),
        ("Eleven", ["Fruit sales", "Fruit", "Units", "Apples"]),
        ("Dear", ["Fruit sales", "Fruit", "Price", "Apples"]),
        ("Mid", ["Fruit sales", "Fruit", "Price", "Pears"]),  # after a colspan=2 cell
        ("No data", ["Fruit sales", "Fruit", "Quarter", "Units", "Pears"]),  # spanning cell: headers over its columns
        ("Units", ["Fruit sales"]),  # a header cell: only the caption (no header above it)
        # no th anywhere: first row = column labels, first column = row labels
        ("Forty", ["Name", "Age", "Bob"]),
        ("Lyon", ["Name", "City", "Bob"]),
        ("Bob", ["Name"]),
        ("Age", []),
        # th only in the first column: row labels, no column labels
        ("Value two", ["Other key"]),
        # two header rows with a colspan: both levels; no th in the body row: its first cell
        ("Tall", ["Size", "Width", "Height", "Wide"]),
        ("Lonely cell", []),
    ],
)
def test_table_labels(text: str, expected: list[str]) -> None:
    doc = parse_html(TABLE_PAGE)
    assert added_texts(doc, text, TABLES) == expected


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        ("<td>Name</td><td>Default</td><td>Meaning</td>", ["Name", "Meaning", "quiet"]),
        ("<td>No.</td><td>Pos.</td><td>Pts.</td>", ["No.", "Pts.", "quiet"]),  # abbreviations: still labels
        ("<td>verbose</td><td>#f</td><td>Write the log at level DEBUG.</td>", ["quiet"]),  # a sentence: data
        ("<td>strip</td><td>#t</td><td>Ne pas inclure les dossiers !</td>", ["quiet"]),  # any language: shape only
    ],
)
def test_a_headerless_tables_first_row_is_its_header_unless_a_cell_reads_as_a_sentence(
    first: str, expected: list[str]
) -> None:
    """Option tables written without ``th`` (texi2html, Asciidoctor) start with data: their first row
    labelling every other row would cite that row with each one."""
    doc = parse_html(f"<table><tr>{first}</tr><tr><td>quiet</td><td>#f</td><td>Say nothing at all.</td></tr></table>")
    assert added_texts(doc, "Say nothing at all.", TABLES) == expected


def test_group_rows_label_the_rows_under_them() -> None:
    """A full-width header row below the top labels the rows up to the next such row."""
    doc = parse_html(
        "<table><tr><th>City</th><th>Population</th></tr><tr><th colspan=2>Europe</th></tr>"
        "<tr><td>Paris</td><td>Two million</td></tr><tr><th colspan=2>Asia</th></tr>"
        "<tr><td>Tokyo</td><td>Fourteen million</td></tr></table>"
    )
    assert added_texts(doc, "Two million", TABLES) == ["City", "Population", "Europe", "Paris"]
    assert added_texts(doc, "Fourteen million", TABLES) == ["City", "Population", "Asia", "Tokyo"]
    assert added_texts(doc, "Asia", TABLES) == []


def test_table_adds_only_cells_and_captions() -> None:
    doc = parse_html(TABLE_PAGE)
    seed = sentence_with(doc, "Dear").paths
    added = global_context(doc, seed, TABLES) - seed
    assert {doc.get(p).tag for p in added} <= {"th", "td", "caption"}
    assert "Cheap" not in render(doc, global_context(doc, seed, TABLES))


def test_table_render_of_a_cell_with_context() -> None:
    doc = parse_html(TABLE_PAGE)
    assert ctx_text(doc, "Dear", TABLES) == "Fruit sales\n\n| Fruit | Price |\n|---|---|\n| Apples | Dear |"


# -- composition and custom rules ------------------------------------------------------
class FigureCaptionRule(Rule):
    """A user rule: anything inside a <figure> is explained by its <figcaption>."""

    name = "figcaption"

    def contribute(self, doc: Document, node: int) -> Iterable[int]:
        for anc in (node, *doc.ancestors(node)):
            if doc.tag[anc] == "figure":
                return [c for c in doc.children[anc] if doc.tag[c] == "figcaption"]
        return ()


FIGURE_PAGE = """<html><head><title>Birds</title></head><body><h2>Owls</h2>
<figure><p>Owls hunt at night.</p><figcaption>Barn owl habits</figcaption></figure></body></html>"""


def test_user_rule_composes_with_html() -> None:
    doc = parse_html(FIGURE_PAGE)
    seed = sentence_with(doc, "Owls hunt at night.").paths
    plain = render(doc, global_context(doc, seed, HTML))
    assert "Barn owl habits" not in plain
    mine = compose(HTML, Policy([FigureCaptionRule()]))
    composed = render(doc, global_context(doc, seed, mine))
    assert composed == "# Birds\n\n## Owls\n\nOwls hunt at night.\n\nBarn owl habits"
    assert global_context(doc, seed, HTML | Policy([FigureCaptionRule()])) == global_context(doc, seed, mine)
    assert global_context(doc, seed, compose(HTML, FigureCaptionRule())) == global_context(doc, seed, mine)


def test_constant_rule_and_none_policy() -> None:
    class FirstParagraph(Rule):
        name = "first-p"

        def constant(self, doc: Document) -> Iterable[int]:
            return [next(i for i, t in enumerate(doc.tag) if t == "p")]

    doc = parse_html(FIGURE_PAGE, segment=False)
    assert global_context(doc, [], Policy([FirstParagraph()])) == {(1, 1, 0)}
    assert global_context(doc, [(1, 0, 0)], NONE) == {(1, 0, 0)}
    assert global_context(doc, [], HTML) == {(0, 0)}


def test_compose_deduplicates_rules() -> None:
    composed = compose(HTML, TITLE, HEADERS)
    assert len(composed.rules) == len(HTML.rules) == 9
    names = {"title", "headers", "lists", "tables", "lead-ins", "term-blocks", "box-titles"}
    assert {r.name for r in composed.rules} >= names


def test_default_policy_is_html() -> None:
    doc = parse_html(FIGURE_1)
    seed = sentence_with(doc, "Virginia has 43 state parks.").paths
    assert global_context(doc, seed) == global_context(doc, seed, HTML)


# -- laws (Definition 3) on generated trees --------------------------------------------
PROPERTY_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def doc_and_sets(draw: st.DrawFn) -> tuple[Document, frozenset[Path], frozenset[Path]]:
    doc = parse_html(draw(html_pages()))
    paths = list(doc.paths())
    p = draw(st.frozensets(st.sampled_from(paths), max_size=5))
    extra = draw(st.frozensets(st.sampled_from(paths), max_size=5))
    return doc, p, p | extra


@pytest.mark.parametrize("name", list(POLICIES))
@PROPERTY_SETTINGS
@given(case=doc_and_sets())
def test_policy_laws(name: str, case: tuple[Document, frozenset[Path], frozenset[Path]]) -> None:
    """Extensive, monotone, idempotent, and within Paths(D)."""
    doc, p, bigger = case
    policy = POLICIES[name]
    g = global_context(doc, p, policy)
    assert p <= g
    assert g <= global_context(doc, bigger, policy)
    assert global_context(doc, g, policy) == g
    assert g <= frozenset(doc.paths())


@PROPERTY_SETTINGS
@given(case=doc_and_sets())
def test_rules_add_only_their_kind_of_node(case: tuple[Document, frozenset[Path], frozenset[Path]]) -> None:
    doc, p, _ = case
    title = global_context(doc, p, TITLE) - p
    assert title <= ({doc.title_path} if doc.title_path is not None else set())
    assert all(doc.get(x).tag in HEADING_LEVELS for x in global_context(doc, p, HEADERS) - p)
    assert all(doc.get(x).tag in {"th", "td", "caption"} for x in global_context(doc, p, TABLES) - p)
    for x in global_context(doc, p, LISTS) - p:  # labels, terms and lead-in sentences; never items or lists
        assert doc.get(x).tag not in {"li", "ul", "ol", "dd"}
    # a title or term is a label line (p/div); a lead-in a sentence's nodes; stand-in labels are cells
    assert all(doc.get(x).tag in {"p", "div"} for x in global_context(doc, p, TABLE_TITLES) - p)
    for x in global_context(doc, p, TERM_BLOCKS) - p:  # a term line, or what an item opens with
        parent = doc.get(x[:-1]) if x else None
        assert doc.get(x).tag in {"p", "div"} or (parent is not None and parent.tag == "li")
    assert all(doc.get(x).tag in {"p", "div"} for x in global_context(doc, p, BOX_TITLES) - p)
    assert all(doc.get(x).tag in {"th", "td"} for x in global_context(doc, p, EMPTY_HEADER_ROWS) - p)
    for x in global_context(doc, p, LEAD_INS) - p:
        assert doc.get(x).tag not in {"li", "ul", "ol", "dd", "table", "blockquote"}


@PROPERTY_SETTINGS
@given(case=doc_and_sets())
def test_html_is_the_union_of_the_rules(case: tuple[Document, frozenset[Path], frozenset[Path]]) -> None:
    """Definition 5: GlobalCtx_HTML(P) = P ∪ title ∪ headers ∪ lists ∪ tables, here with the idioms'
    rules, taken until nothing changes: the rules meet (a cell's row label is context, and so is
    that label's own column label, an empty header row's stand-in under the idioms), so the union
    is closed, as idempotence asks."""
    doc, p, _ = case
    union = p
    while True:
        grown = union.union(*(global_context(doc, union, pol) for pol in (TITLE, HEADERS, LISTS, TABLES, IDIOMS)))
        if grown == union:
            break
        union = grown
    assert global_context(doc, p, HTML) == union
    # one round is the union of the paper's definition wherever the rules do not meet
    assert p.union(*(global_context(doc, p, pol) for pol in (TITLE, HEADERS, LISTS, TABLES, IDIOMS))) <= union


def test_a_row_labels_own_column_label_is_context_under_an_empty_header_row() -> None:
    cells = "<td>Alpha.</td><td>Beta.</td><td>Gamma.</td>"
    doc = parse_html(
        "<html><body><table><thead><tr><th></th><th></th><th></th></tr></thead>"
        f"<tbody><tr>{cells}</tr><tr>{cells}</tr></tbody></table></body></html>"
    )
    cell = (0, 0, 1, 1, 1)  # second body row, second column
    g = global_context(doc, frozenset({cell}), HTML)
    assert (0, 0, 1, 1, 0) in g  # its row label
    assert (0, 0, 1, 0, 1) in g  # its column's stand-in label (the first body row: the header row is empty)
    assert (0, 0, 1, 0, 0) in g  # the row label's own stand-in column label


@PROPERTY_SETTINGS
@given(case=doc_and_sets())
def test_user_rule_keeps_the_laws(case: tuple[Document, frozenset[Path], frozenset[Path]]) -> None:
    doc, p, bigger = case
    policy = compose(HTML, Policy([FigureCaptionRule()]))
    g = global_context(doc, p, policy)
    assert p <= g <= global_context(doc, bigger, policy)
    assert global_context(doc, g, policy) == g


@pytest.mark.parametrize("name", list(POLICIES))
@PROPERTY_SETTINGS
@given(case=doc_and_sets())
def test_growing_a_closure_step_by_step_equals_closing_the_union(
    name: str, case: tuple[Document, frozenset[Path], frozenset[Path]]
) -> None:
    """``indices(doc, B, closed=closure(A)) == closure(A ∪ B)``: how passages grow a selection."""
    doc, p, bigger = case
    policy = POLICIES[name]
    a, b = doc.indices(p), doc.indices(bigger - p)
    grown = policy.indices(doc, b, closed=policy.indices(doc, a))
    assert grown == policy.indices(doc, a | b)


@pytest.mark.parametrize("name", list(POLICIES))
@PROPERTY_SETTINGS
@given(case=doc_and_sets(), chars=st.integers(0, 300), count=st.integers(0, 40))
def test_nearest_is_the_closure_when_it_fits_and_a_bounded_part_of_it_otherwise(
    name: str, case: tuple[Document, frozenset[Path], frozenset[Path]], chars: int, count: int
) -> None:
    doc, p, _ = case
    policy = POLICIES[name]
    nodes = doc.indices(p)
    closure = policy.indices(doc, nodes)
    assert policy.nearest(doc, nodes) == closure  # generated contexts are far under the default bounds
    part = policy.nearest(doc, nodes, chars, count)
    assert set(nodes) <= part <= closure
    added = down_indices(doc, part - set(nodes))
    assert len(added) <= count
    assert sum(len(doc.text[i]) for i in added if doc.tag[i] is None) <= chars
    if chars >= MAX_LABEL_CHARS and count >= len(doc):
        assert part == closure
    bounded, whole = policy.bounded(doc, nodes, chars, count)
    assert bounded == part
    assert whole == (part == closure)


def test_a_long_label_is_taken_whole_when_it_fits_and_node_by_node_when_it_does_not() -> None:
    """A label's head of many nodes (one entry of the contributions: a header cell over
    :data:`MAX_LABEL_CHARS` is contributed by its first subtrees) joins a bounded context at
    once when it fits, else node by node while they fit; ``bounded`` says whether the context
    is the whole closure."""
    label = "".join(f"<b>word{n:03d} </b>" for n in range(300))
    doc = parse_html(f"<table><tr><th>{label}</th></tr><tr><td>The cell says seventy.</td></tr></table>")
    [s] = [s for s in sentences(doc) if "seventy" in s.text]
    nodes = doc.indices(s.paths)
    closure = HTML.indices(doc, nodes)
    assert len(closure - set(nodes)) > 100  # the head's bold words, one entry
    fits, whole = HTML.bounded(doc, nodes)
    assert (fits, whole) == (closure, True)
    shown = render_indices(doc, fits)
    assert "word000" in shown and "word299" not in shown and "seventy" in shown
    tight, whole = HTML.bounded(doc, nodes, chars=100)
    shown = render_indices(doc, tight)
    assert not whole and "word000" in shown and "word011" in shown and "word012" not in shown  # 8 characters each
    assert "seventy" in shown


def _nearest(doc: Document, node: int, special: frozenset[str]) -> int:
    """``node`` or its nearest ancestor whose tag is in ``special`` (-1: none)."""
    while node >= 0 and doc.tag[node] not in special:
        node = doc.parent[node]
    return node


@PROPERTY_SETTINGS
@given(html=html_pages())
def test_rule_tables_answer_as_each_node_asked_alone(html: str) -> None:
    """The one-pass tables of the built-in rules hold, for every node, what its definition gives."""
    from spire_core.context import headers, lists, tables

    doc = parse_html(html)
    chains = headers.headings(doc)
    for rule, expected in (
        (HEADERS.rules[0], lambda i: tuple(chains.chain(i))),
        (LISTS.rules[0], lambda i: lists._walk(doc, j) if (j := _nearest(doc, i, lists._SPECIAL)) >= 0 else ()),
        (TABLES.rules[0], lambda i: tables._cell_labels(doc, j) if (j := _nearest(doc, i, CELL_TAGS)) >= 0 else ()),
        (FigureCaptionRule(), lambda i: tuple(FigureCaptionRule().contribute(doc, i))),
    ):
        table = rule.contributions(doc)
        assert len(table) == len(doc)
        for i in range(len(doc)):
            assert tuple(table[i]) == expected(i), (rule.name, i)
            assert tuple(rule.contribute(doc, i)) == tuple(table[i])


def _labels_walking_every_ancestor(doc: Document, node: int) -> tuple[int, ...]:
    """The lists rule as defined, with no shortcut: every ancestor, its list depth counted afresh."""
    from spire_core.context import lists

    out: list[int] = []
    child, innermost = node, True
    for anc in (node, *doc.ancestors(node)):
        tag = doc.tag[anc]
        shallow = sum(doc.tag[a] in lists.LIST_TAGS for a in (anc, *doc.ancestors(anc))) <= MAX_LIST_DEPTH
        if tag == "li":
            if not innermost and shallow:
                out.extend(lists._label(doc, anc, child))
            innermost = False
        elif shallow and tag == "dd":
            out.extend(lists._terms(doc, anc))
        elif shallow and tag in lists.LIST_TAGS and tag != "dl":
            out.extend(lists._lead_in(doc, anc))
        child = anc
    return tuple(out)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["<ul><li>L{k}", "<ol><li>L{k}<div>", "<dl><dt>L{k}<dd>", "<div><p>L{k}:</p><ul><li>", "<ul>", "<li>L{k}"]
        ),
        min_size=MAX_LIST_DEPTH,
        max_size=3 * MAX_LIST_DEPTH,
    )
)
def test_list_labels_past_the_depth_cap_are_those_of_a_walk_over_every_ancestor(levels: list[str]) -> None:
    """Nodes nested past :data:`MAX_LIST_DEPTH` lists share one walk from the list crossing the cap."""
    from spire_core.context import lists

    doc = parse_html("".join(level.format(k=k) for k, level in enumerate(levels)) + "Deepest. Done.")
    table = LISTS.table(doc)
    for i in range(len(doc)):
        j = _nearest(doc, i, lists._SPECIAL)
        assert tuple(table[i]) == (_labels_walking_every_ancestor(doc, j) if j >= 0 else ()), i


def test_a_policy_table_joins_its_rules_tables() -> None:
    doc = parse_html(FIGURE_PAGE)
    policy = compose(HTML, FigureCaptionRule())
    rules = [r.contributions(doc) for r in policy.rules]
    joined = policy.table(doc)
    assert [tuple(j for t in rules for j in t[i]) for i in range(len(doc))] == list(joined)
    assert any(joined)  # the page's headings and figcaption are contributed somewhere
    assert policy.table(doc) is joined  # once per page and policy
