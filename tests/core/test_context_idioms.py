"""Global context for page idioms written without the element made for them (issue 38).

A table titled by a line above it, a table whose header row is empty, a heading hidden from
view, a list's lead-in without a colon (or written as a ``div``), a term line over an indented
description block, a sidebar or note titled by its first line.
Each rule on constructed pages, with the cases where it could misfire; the laws on generated
pages of the idioms are in ``test_context.py`` (``POLICIES`` and ``strategies._idiom``).
"""

from __future__ import annotations

import pytest

from spire_core import HTML, Document, global_context, parse_html, passages, render
from spire_core.context import (
    BOX_TITLES,
    EMPTY_HEADER_ROWS,
    LEAD_INS,
    LISTS,
    TABLE_TITLES,
    TERM_BLOCKS,
    Policy,
    policy_named,
)
from spire_core.context.blocks import LABEL_LINE_CHARS, label_line
from spire_core.context.lead_ins import SHORT_LEAD_IN_CHARS
from tests.core.strategies import sentence_with

TABLE = "<table><tr><th>Code</th><th>Meaning</th></tr><tr><td>2</td><td>File not found</td></tr></table>"


def ctx(page: str, text: str, policy: Policy = HTML) -> str:
    doc = parse_html(f"<html><head><title>Page</title></head><body>{page}</body></html>")
    return render(doc, global_context(doc, sentence_with(doc, text).paths, policy))


def _line(page: str) -> tuple[Document, int]:
    doc = parse_html(page)
    return doc, next(i for i, t in enumerate(doc.tag) if t in ("p", "div"))


# -- label lines ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("<p><strong>Table 2. Exit codes.</strong></p>", True),  # fully emphasised: a period is fine
        ("<p><code>--verbose</code>, <code>-v</code></p>", True),  # emphasised but for a comma between
        ("<p>Supported formats</p>", True),  # no sentence end
        ("<p>Exit codes:</p>", True),
        ("<div>Résumé des options</div>", True),  # any language: shape only
        ("<p>See the table below.</p>", False),  # a sentence of prose
        ("<p><b>Warning:</b> this removes all data.</p>", False),  # a bold word, then prose
        (f"<p><b>{'word ' * (LABEL_LINE_CHARS // 5 + 1)}</b></p>", False),  # bold, but long
        ("<div>Short<ul><li>x</li></ul></div>", False),  # a block inside
        ("<p></p>", False),
    ],
)
def test_label_lines_are_short_inline_and_emphasised_or_without_a_sentence_end(line: str, expected: bool) -> None:
    doc, node = _line(line)
    assert label_line(doc, node) is expected


# -- (a) table titles ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "before",
    [
        "<p><strong>Table 2. Exit codes.</strong></p>",
        "<p><em>Exit codes</em></p>",
        "<p>Exit codes</p>",
        "<p>Exit codes of the command:</p>",
    ],
)
def test_a_line_just_above_a_table_without_caption_titles_its_cells(before: str) -> None:
    shown = ctx(f"<h2>Usage</h2><p>Some prose first.</p>{before}{TABLE}", "File not found")
    assert "Exit codes" in shown and "Meaning" in shown and "Some prose" not in shown


def test_a_title_above_the_wrapper_a_table_opens_counts() -> None:
    shown = ctx(f'<p><b>Exit codes</b></p><div class="table-wrap"><div>{TABLE}</div></div>', "File not found")
    assert "Exit codes" in shown


@pytest.mark.parametrize(
    "before",
    [
        "<p><b>Warning:</b> the table lists only the codes of version 2.</p>",  # bold, then prose
        f"<p><b>{'A long bold paragraph of prose that goes on. ' * 5}</b></p>",  # bold, but long
        "<p>The codes are listed below.</p>",  # a sentence
        "<p><b>Exit codes</b></p><p>The codes follow.</p>",  # a title, but prose between
        "<p><b>Exit codes</b></p><h3>Codes</h3>",  # a heading between (the headers rule's)
        "<p><b>Exit codes</b></p>Loose text",  # text between
    ],
)
def test_a_line_that_is_not_a_title_titles_nothing(before: str) -> None:
    page = f"{before}{TABLE}"
    assert ctx(page, "File not found", TABLE_TITLES) == ctx(page, "File not found", policy_named("none"))


def test_a_table_with_a_caption_keeps_its_caption_alone() -> None:
    page = "<p><b>Exit codes</b></p><table><caption>Codes</caption><tr><th>C</th></tr><tr><td>Two</td></tr></table>"
    shown = ctx(page, "Two")
    assert "Codes" in shown and "Exit codes" not in shown


# -- (a) a table whose header row is empty -------------------------------------------------
EMPTY_HEAD = (
    "<table><thead><tr><th></th><th> </th></tr></thead><tbody>"
    "<tr><td>Name</td><td>Default</td></tr><tr><td>port</td><td>8080</td></tr>"
    "<tr><td>host</td><td>localhost</td></tr></tbody></table>"
)


def test_an_empty_header_row_is_stood_in_for_by_the_first_row_with_text() -> None:
    shown = ctx(EMPTY_HEAD, "localhost")
    assert "Default" in shown and "Name" in shown and "host" in shown
    assert "8080" not in shown  # no other data row
    assert "Default" in ctx(EMPTY_HEAD, "8080", EMPTY_HEADER_ROWS)


def test_the_stand_in_row_gets_no_labels_and_a_header_row_with_text_needs_none() -> None:
    assert ctx(EMPTY_HEAD, "Default", EMPTY_HEADER_ROWS) == ctx(EMPTY_HEAD, "Default", policy_named("none"))
    full = EMPTY_HEAD.replace("<th></th>", "<th>Key</th>")
    assert ctx(full, "localhost", EMPTY_HEADER_ROWS) == ctx(full, "localhost", policy_named("none"))


def test_an_empty_markdown_header_line_is_stood_in_for() -> None:
    from spire_core import parse_page

    doc = parse_page("| | |\n|---|---|\n| Name | Default |\n| port | 8080 |\n", declared="markdown")
    shown = render(doc, global_context(doc, sentence_with(doc, "8080").paths))
    assert "Default" in shown


# -- (b) hidden headings -------------------------------------------------------------------
@pytest.mark.parametrize("how", ["hidden", 'style="display: none"', 'aria-hidden="true"'])
def test_a_hidden_heading_still_names_what_follows(how: str) -> None:
    page = f'<h1>Manual</h1><h2 {how}><a id="opts"></a>Options</h2><p>Sets the level.</p><h2>Next</h2><p>Later.</p>'
    assert "## Options" in ctx(page, "Sets the level.")
    assert "Options" not in ctx(page, "Later.")


def test_a_heading_in_a_hidden_container_and_an_empty_hidden_heading_are_dropped() -> None:
    page = '<h2>Install</h2><div hidden><h2>Menu</h2></div><h2 hidden> </h2><p style="x">Run it.</p>'
    shown = ctx(page, "Run it.")
    assert "Install" in shown and "Menu" not in shown


# -- (c) list lead-ins ---------------------------------------------------------------------
#: a first sentence that makes its paragraph longer than a short lead-in (taken whole)
LONG = "Read this first, " + "as the codes below come from the manual of the tool itself, " * 4 + "at length."
assert len(LONG) > SHORT_LEAD_IN_CHARS


@pytest.mark.parametrize(
    "lead",
    ["Some exit codes are", "the following pairs of options are incompatible", f"{LONG} Some exit codes are"],
)
def test_the_paragraph_just_before_a_list_is_its_lead_in(lead: str) -> None:
    page = f"<p>{lead}</p><ul><li>Two: the file was not found.</li><li>Three: no access.</li></ul>"
    shown = ctx(page, "Three: no access.")
    last = lead.split(". ")[-1]
    assert last in shown and "Read this first" not in shown and "Two:" not in shown


def test_a_lead_in_wrapped_list_and_nested_lists_each_have_their_own() -> None:
    page = "<p>Outer lead</p><div><ul><li><p>Inner lead</p><ol><li>Deep item.</li></ol></li></ul></div>"
    shown = ctx(page, "Deep item.", LEAD_INS)
    assert "Outer lead" in shown and "Inner lead" in shown


@pytest.mark.parametrize(
    "lead",
    [f"{LONG} Memcheck reports the following four kinds.", "However, there are caveats!"],
)
def test_a_lead_in_that_ends_a_sentence_labels_the_list_too(lead: str) -> None:
    page = f"<p>{lead}</p><ul><li>Definitely lost.</li><li>Indirectly lost: cases 4 and 9.</li></ul>"
    shown = ctx(page, "Indirectly lost: cases 4 and 9.", LEAD_INS)
    last = lead.split(". ")[-1]
    assert last in shown and "Read this first" not in shown and "Definitely" not in shown
    assert ctx(page, "Indirectly lost: cases 4 and 9.", policy_named("none")).count(last) == 0


def test_a_short_lead_in_paragraph_is_taken_whole() -> None:
    """A list announced, then a remark on it: the sentence nearest the list is not the one that
    names it, and a short paragraph is shown whole."""
    lead = "<p>For the serious hacker, here is a recipe for nettle soup. 4 servings.</p>"
    page = f"{lead}<ul><li>1/2 teaspoon salt</li></ul>"
    shown = ctx(page, "1/2 teaspoon salt", LEAD_INS)
    assert "here is a recipe for nettle soup." in shown and "4 servings." in shown


POINTER = "<p>Move the tool in the image. When you move the pointer, the cursor changes:</p>"
ITEMS = "<p>- Outside the selection it looks as above.</p>\n<p>- Inside, handles appear. They let you resize it.</p>"


@pytest.mark.parametrize("mark", ["-", "\u2022", "\u2013"])
def test_a_list_written_as_paragraphs_opening_with_an_item_mark_is_led_in(mark: str) -> None:
    page = POINTER + ITEMS.replace("- ", f"{mark} ") + "<p>After the list.</p>"
    shown = ctx(page, "They let you resize it.")
    assert "the cursor changes:" in shown and "Move the tool" not in shown and "Outside" not in shown
    assert "the cursor changes:" not in ctx(page, "After the list.")
    assert "the cursor changes:" not in ctx(page, "They let you resize it.", policy_named("none"))


@pytest.mark.parametrize(
    "page",
    [
        POINTER + "<p>- Inside, handles appear. They let you resize it.</p>",  # one item is no list
        POINTER.replace(":", ".") + ITEMS,  # no colon: dash-opened replies of dialogue
        POINTER + "<h3>Cursor</h3>" + ITEMS,  # anything between
        POINTER + ITEMS.replace("<p>- Outside", "<p>\u2022 Outside"),  # two marks: no run of one
        POINTER + ITEMS.replace("- Inside", "-Inside"),  # a hyphen, not a mark
    ],
)
def test_paragraphs_are_a_list_only_in_a_run_of_one_mark_after_a_colon(page: str) -> None:
    text = "They let you resize it."
    assert "cursor changes" not in ctx(page, text)


@pytest.mark.parametrize(
    "between",
    ["<h3>Codes</h3>", TABLE, "<ul><li>Other list.</li></ul>", "Loose words", "<pre>code</pre>"],
)
def test_anything_between_the_paragraph_and_the_list_means_no_lead_in(between: str) -> None:
    page = f"<p>Some exit codes are</p>{between}<ul><li>Two: the file was not found.</li></ul>"
    assert "Some exit codes" not in ctx(page, "Two: the file was not found.", LEAD_INS)


@pytest.mark.parametrize(
    "para",
    [
        '<div class="para">Here are the fields of the file{end}</div>',  # Publican writes every paragraph so
        '<p>Here are the fields of the file{end}</p><a id="x1"></a><a id="x2" class="indexterm"></a>',  # anchors
        '<div class="para">Here are the fields of <code>/etc/passwd</code>{end}</div><span></span>',
    ],
)
def test_a_lead_in_may_be_a_div_of_inline_content_and_anchors_may_sit_between(para: str) -> None:
    page = '<p>Before.</p>{}<div class="itemizedlist"><ul><li>GECOS: the full name.</li></ul></div>'
    assert "Here are the fields of" in ctx(page.format(para.format(end="")), "GECOS: the full name.", LEAD_INS)
    assert "Here are the fields of" in ctx(page.format(para.format(end=":")), "GECOS: the full name.", LISTS)


@pytest.mark.parametrize("segment", [True, False])
def test_loose_text_ending_with_a_colon_leads_in_the_list_after_it(segment: bool) -> None:
    """LaTeX2HTML leaves a list's lead-in bare inside a ``dd``: no paragraph around it."""
    page = "<dl><dt>$DVIPS</dt><dd>Read at install. <p></p>There could be several reasons to change it:"
    page += "<ul><li>to append debugging switches.</li></ul></dd></dl>"
    doc = parse_html(f"<html><body>{page}</body></html>", segment=segment)
    item = next(i for i, t in enumerate(doc.tag) if t == "li")
    shown = render(doc, global_context(doc, {doc.path(item)}, LEAD_INS))
    assert "There could be several reasons to change it:" in shown
    bare = page.replace("change it:", "change it.")  # loose text that does not announce the list
    doc = parse_html(f"<html><body>{bare}</body></html>", segment=segment)
    item = next(i for i, t in enumerate(doc.tag) if t == "li")
    assert "several reasons" not in render(doc, global_context(doc, {doc.path(item)}, LEAD_INS))


def test_a_paragraph_wrapped_in_a_div_still_leads_in_a_list_and_titles_a_table() -> None:
    """Asciidoctor writes ``<div class="paragraph"><p>...</p></div>`` for every paragraph."""
    lead = '<div class="paragraph"><p>To share a cache, these conditions should be met:</p></div>'
    page = f'{lead}<div class="ulist"><ul><li>Set the umask to 002.</li></ul></div>'
    assert "To share a cache" in ctx(page, "Set the umask to 002.", LISTS)
    title = '<div class="paragraph"><p>Interaction of local and remote storage:</p></div>'
    assert "Interaction of local" in ctx(f"{title}{TABLE}", "File not found", TABLE_TITLES)
    two = '<div class="paragraph"><p>To share a cache:</p><p>Second.</p></div><ul><li>Set the umask to 002.</li></ul>'
    assert "To share" not in ctx(two, "Set the umask to 002.", LISTS)  # a div of two paragraphs wraps none


@pytest.mark.parametrize(
    "before",
    [
        '<div class="para">Some fields<p>nested block</p></div>',  # a div holding a block is no paragraph
        '<p>Some fields</p><a href="/x"><img src="i.png" alt="icon"></a>',  # an image shows something
        "<p>Some fields</p><span>shown</span>",
    ],
)
def test_a_block_or_shown_element_before_the_list_means_no_lead_in(before: str) -> None:
    page = f"{before}<ul><li>GECOS: the full name.</li></ul>"
    assert ctx(page, "GECOS: the full name.", LEAD_INS) == ctx(page, "GECOS: the full name.", policy_named("none"))


# -- (e) boxes titled by their first line --------------------------------------------------
@pytest.mark.parametrize(
    "box",
    [  # DocBook (Publican) sidebar, Docutils admonition, a card; the title may say what kind of box
        '<div class="sidebar"><div class="titlepage"><div><div><p class="title"><strong><em>VOCABULARY</em> Freeze'
        '</strong></p></div></div></div><a id="i1"></a><div class="para">Only release managers may change it.</div>'
        '<div class="para">Later text.</div></div>',
        '<aside class="admonition note"><p class="admonition-title">Freeze</p><p>Only release managers may change it.'
        "</p></aside>",
        '<div class="card"><div class="card-title">Freeze</div><div class="card-body"><ul><li>Only release managers'
        " may change it.</li></ul></div></div>",
    ],
)
def test_a_box_is_labelled_by_its_title_line(box: str) -> None:
    page = f"<h2>Release cycle</h2><p>Intro prose here.</p>{box}<p>After the box.</p>"
    shown = ctx(page, "Only release managers may change it.", BOX_TITLES)
    assert "Freeze" in shown and "Intro prose" not in shown
    assert "Freeze" not in ctx(page, "After the box.", BOX_TITLES)
    assert "Freeze" in ctx(page, "Only release managers may change it.")  # in the default policy


SAID = "<p>Only release managers may change it.</p>"


@pytest.mark.parametrize(
    "box",
    [
        f'<div class="sidebar"><p><strong>Freeze</strong></p>{SAID}</div>',  # no title class
        f'<div class="sidebar"><p>First prose.</p><p class="title">Freeze</p>{SAID}</div>',  # not first
        f'<div class="sidebar"><p class="title">Freeze is when we stop.</p>{SAID}</div>',  # prose
        f'<div class="sidebar"><p class="title">Freeze</p></div>{SAID}',  # nothing after it in its box
        f'<table><tr><td><p class="title">Freeze</p>{SAID}</td></tr></table>',  # a cell is no box
    ],
)
def test_a_line_that_is_no_title_line_first_in_its_box_titles_nothing(box: str) -> None:
    page = f"<h2>Release cycle</h2>{box}"
    sentence = "Only release managers may change it."
    assert ctx(page, sentence, BOX_TITLES) == ctx(page, sentence, policy_named("none"))


def test_nested_boxes_are_titled_to_a_bounded_depth() -> None:
    from spire_core.context.box_titles import MAX_BOX_DEPTH

    levels = 2 * MAX_BOX_DEPTH
    page = "".join(f'<div class="note"><p class="title">T{k}</p>' for k in range(levels)) + "<p>Deepest.</p>"
    shown = ctx(page, "Deepest.", BOX_TITLES)
    assert [f"T{k}" for k in range(levels) if f"T{k}\n" in shown + "\n"] == [f"T{k}" for k in range(MAX_BOX_DEPTH)]


# -- (d) term lines over indented description blocks ---------------------------------------
@pytest.mark.parametrize(
    ("term", "block"),
    [
        ("<p><code>--opt</code></p>", "<blockquote><p>Sets the option. It takes a value.</p></blockquote>"),
        ("<p><strong>term</strong></p>", '<div class="block-indent"><p>Sets the option. It takes a value.</p></div>'),
        ("<p>max_connections (integer)</p>", '<div style="margin-left: 2em">Sets the option. It takes a value.</div>'),
        (  # groff's man pages: a term line indented less than its description
            '<p style="margin-left:6%; margin-top: 1em"><b>-a</b>, <b>--all</b></p>',
            '<p style="margin-left:17%;">Sets the option. It takes a value.</p>',
        ),
    ],
)
def test_a_term_line_labels_the_indented_block_under_it(term: str, block: str) -> None:
    page = f"<h2>Options</h2><p>Intro prose here.</p>{term}{block}"
    shown = ctx(page, "It takes a value.", TERM_BLOCKS)
    label = parse_html(term).subtree_text(0).strip()
    assert label in shown and "Intro prose" not in shown


def test_a_run_of_description_blocks_shares_its_term() -> None:
    page = (
        '<p style="margin-left:6%"><b>-v</b></p><p style="margin-left:17%">First part.</p>'
        '<p style="margin-left:17%">Second part.</p><p><b>-q</b></p><blockquote>Quiet.</blockquote>'
    )
    assert "-v" in ctx(page, "Second part.", TERM_BLOCKS)
    assert "-v" not in ctx(page, "Quiet.", TERM_BLOCKS) and "-q" in ctx(page, "Quiet.", TERM_BLOCKS)


GROFF_TAG = '<table><tr valign="top"><td width="16%"><p>{0}</p></td><td width="84%">{1}</td></tr></table>'


def test_groffs_one_row_tag_table_is_the_term_of_the_description_under_it() -> None:
    """groff -Thtml sets a tag too wide for its column as a one-row table, the description below."""
    items = [(r"\fR, \f1", "Set Roman style."), (r"\fI, \f2", "Set Italic style."), (r"\fP", "Revert to it.")]
    page = "".join(GROFF_TAG.format(tag, "") + f'<p style="margin-left:10%">{text}</p>' for tag, text in items)
    shown = ctx(page, "Revert to it.")
    assert r"\fP" in shown
    # each description its own term only: the description before a tag table titles nothing
    assert "Italic" not in shown and r"\fI" not in shown
    assert r"\fI, \f2" in ctx(page, "Set Italic style.") and r"\fR" not in ctx(page, "Set Italic style.")


@pytest.mark.parametrize(
    "table",
    [
        GROFF_TAG.format("-a", "Prints all."),  # a row of a term and its text: the tables rule's
        GROFF_TAG.format("This one prints everything there is, and more.", ""),  # prose, no term line
        "<table><tr><td><p>-a</p></td></tr><tr><td><p>-b</p></td></tr></table>",  # two rows
    ],
)
def test_a_table_that_is_no_tag_line_is_no_term(table: str) -> None:
    page = f'{table}<p style="margin-left:10%">A quotation.</p>'
    assert ctx(page, "A quotation.", TERM_BLOCKS) == ctx(page, "A quotation.", policy_named("none"))


@pytest.mark.parametrize(
    ("before", "block"),
    [
        ("<p>As the manual says, this matters.</p>", "<blockquote>A quotation.</blockquote>"),  # prose, then a quote
        ("<p><b>Note:</b> read this first.</p>", '<div class="indent">A quotation.</div>'),  # bold word, prose
        ('<p style="margin-left:17%">Same depth</p>', '<p style="margin-left:17%">A quotation.</p>'),  # one run
        ('<p style="margin-left:20%">Deeper</p>', '<p style="margin-left:17%">A quotation.</p>'),  # not less
        ("<p>Term line</p>", "<div>A quotation.</div>"),  # not indented
        ("<h3>Heading</h3>", "<blockquote>A quotation.</blockquote>"),  # a heading is the headers rule's
    ],
)
def test_an_indented_block_after_no_term_line_has_no_term(before: str, block: str) -> None:
    page = f"{before}{block}"
    assert ctx(page, "A quotation.", TERM_BLOCKS) == ctx(page, "A quotation.", policy_named("none"))


ROW = '<div class="item-row"><div class="left"><a href="{0}.html">{0}</a></div><div class="r"><p>{1}</p></div></div>'


def test_a_run_of_term_rows_labels_each_description_by_its_term() -> None:
    """rustdoc's item tables, a CSS grid of terms and descriptions: rows of two ``div``."""
    rows = ROW.format("linked_list", "A doubly-linked list.") + ROW.format("vec_deque", "A ring buffer queue.")
    shown = ctx(f'<h2>Modules</h2><div class="item-table">{rows}</div>', "A ring buffer queue.", TERM_BLOCKS)
    assert "vec_deque" in shown and "linked_list" not in shown


@pytest.mark.parametrize(
    "item",
    [
        "<li>Signals (SIGINT, SIGTERM etc)<p>Only in SSH-2. Sends various POSIX signals.</p></li>",  # Halibut
        "<li><p><strong>Signals</strong></p><p>Only in SSH-2. Sends various POSIX signals.</p></li>",  # Markdown
        '<li><a name="i51"></a><code>Signals</code><div>Only in SSH-2. Sends various POSIX signals.</div></li>',
    ],
)
def test_an_item_opening_with_its_term_labels_the_blocks_after_it(item: str) -> None:
    page = f"<ul><li>Break<p>Sends a break.</p></li>{item}</ul>"
    shown = ctx(page, "Sends various POSIX signals.", TERM_BLOCKS)
    assert "Signals" in shown and "Break" not in shown


@pytest.mark.parametrize(
    "item",
    [
        "<li>This item opens with a sentence.<p>Sends various POSIX signals.</p></li>",  # prose, not a term
        "<li><p>Signals</p></li><li><p>Sends various POSIX signals.</p></li>",  # the term alone in its item
    ],
)
def test_an_item_opening_with_no_term_labels_nothing(item: str) -> None:
    page = f"<ul>{item}</ul>"
    sentence = "Sends various POSIX signals."
    assert ctx(page, sentence, TERM_BLOCKS) == ctx(page, sentence, policy_named("none"))


def test_a_term_row_may_be_a_term_paragraph_and_a_description_block() -> None:
    """Haddock: ``<div class="top"><p class="src">name :: type</p><div class="doc">...</div></div>``."""
    top = '<div class="top"><p class="src"><a>{0}</a> :: Splitter a</p><div class="doc"><p>{1}</p></div></div>'
    page = top.format("keepDelimsL", "Prepends them.") + top.format("keepDelimsR", "Appends them.")
    shown = ctx(page, "Appends them.", TERM_BLOCKS)
    assert "keepDelimsR :: Splitter a" in shown and "keepDelimsL" not in shown


@pytest.mark.parametrize(
    "rows",
    [
        ROW.format("vec_deque", "A ring buffer queue."),  # one row alone: no run of like rows
        ROW.format("a", "A list.").replace("item-row", "other") + ROW.format("vec_deque", "A ring buffer queue."),
        (ROW.format("linked_list", "A list.") + ROW.format("vec_deque", "A ring buffer queue.")).replace(
            '"left"><a href="vec_deque.html">vec_deque</a>', '"left">This is a whole sentence of prose.'
        ),  # the first cell is no label line
        (ROW.format("a", "A list.") + ROW.format("vec_deque", "A ring buffer queue.")).replace(
            "</div></div>", '</div><div class="third">x</div></div>'
        ),  # three cells
    ],
)
def test_rows_that_are_no_run_of_term_rows_label_nothing(rows: str) -> None:
    page = f'<div class="item-table">{rows}</div>'
    assert ctx(page, "A ring buffer queue.", TERM_BLOCKS) == ctx(page, "A ring buffer queue.", policy_named("none"))


def test_nested_description_blocks_are_labelled_to_a_bounded_depth() -> None:
    from spire_core.context.term_blocks import MAX_TERM_DEPTH

    levels = 3 * MAX_TERM_DEPTH
    page = "".join(f"<p><code>T{k}</code></p><blockquote>" for k in range(levels)) + "Deepest."
    shown = ctx(page, "Deepest.", TERM_BLOCKS)
    assert [f"T{k}" for k in range(levels) if f"T{k}\n" in shown + "\n"] == [f"T{k}" for k in range(MAX_TERM_DEPTH)]


# -- the default policy and names ----------------------------------------------------------
def test_the_idiom_rules_are_in_the_default_policy_and_named() -> None:
    names = {r.name for r in HTML.rules}
    assert {"table-titles", "empty-header-rows", "lead-ins", "term-blocks", "box-titles"} <= names
    for policy in (TABLE_TITLES, EMPTY_HEADER_ROWS, LEAD_INS, TERM_BLOCKS, BOX_TITLES):
        assert policy_named(policy.name) is policy
    assert {r.name for r in policy_named(HTML.name).rules} == names


def test_passages_show_the_idioms_labels() -> None:
    page = (
        f"<h1>Tool</h1><p><b>Exit codes</b></p>{TABLE}<p>Some exit codes are</p><ul><li>Four: busy.</li></ul>"
        "<p><code>--opt</code></p><blockquote>Sets it.</blockquote>"
    )
    doc = parse_html(page)
    texts = {s: u.text for u in passages(doc) for s in u.members}
    for text, label in (("File not found", "Exit codes"), ("Four: busy.", "Some exit codes"), ("Sets it.", "--opt")):
        assert label in texts[sentence_with(doc, text).paths]
