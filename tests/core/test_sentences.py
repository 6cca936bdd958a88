"""Sentence seeds (Section 3.1.1, Figure 2): offline Punkt, sentinels, SentPaths."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path as FsPath

import pytest
from hypothesis import HealthCheck, given, settings

from spire_core import Document, Sentence, encode_paths, parse_html, render, sentences
from spire_core.document.tree import INLINE_TAGS, SENTENCE_BEG, SENTENCE_END
from spire_core.reading.sentences import sentence_index, sentence_indices
from tests.core.strategies import html_pages, inline_html, sentence_with, tree

ROOT = FsPath(__file__).resolve().parents[2]

FIGURE_2 = (
    "<html><body><section><h2>Background</h2><p>Ada Lovelace wrote the first algorithm. "
    '<a href="https://example.org/notes">Her notes</a> described the Analytical Engine.</p>'
    "</section></body></html>"
)


def texts(html: str) -> list[str]:
    return [s.text for s in sentences(parse_html(html))]


def _nonspace(text: str) -> str:
    return re.sub(r"\s+", "", text)


# -- Figure 2 --------------------------------------------------------------------------
def test_figure_2_tree() -> None:
    """The sentinels annotate the paragraph without reparenting; the link stays whole."""
    doc = parse_html(FIGURE_2)
    p = (0, 0, 1)
    assert tree(doc, p) == (
        "p",
        [
            (SENTENCE_BEG, []),
            "Ada Lovelace wrote the first algorithm.",
            (SENTENCE_END, []),
            " ",
            (SENTENCE_BEG, []),
            ("a", ["Her notes"]),
            " described the Analytical Engine.",
            (SENTENCE_END, []),
        ],
    )
    assert doc.get((0, 0, 1, 5)).attrs["href"] == "https://example.org/notes"


def test_figure_2_sentences() -> None:
    doc = parse_html(FIGURE_2)
    assert [s.text for s in sentences(doc)] == [
        "Background",
        "Ada Lovelace wrote the first algorithm.",
        "Her notes described the Analytical Engine.",
    ]
    second = sentence_with(doc, "Her notes described the Analytical Engine.")
    assert second.begin == (0, 0, 1, 4)
    # SentPaths: both sentinels and everything whose subtree lies between them, link included
    assert second.paths == {(0, 0, 1, 4), (0, 0, 1, 5), (0, 0, 1, 5, 0), (0, 0, 1, 6), (0, 0, 1, 7)}


def test_segment_false_has_no_sentinels() -> None:
    doc = parse_html(FIGURE_2, segment=False)
    assert sentences(doc) == []
    assert not {SENTENCE_BEG, SENTENCE_END} & {doc.get(p).tag for p in doc.paths()}


# -- Punkt -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Dr. Smith arrived at the lab early.",
        "Use a flag, e.g. the verbose one, when debugging.",
        "The U.S. Army built the road.",
        "We met at 3 p.m. yesterday in the hall.",
        "Pi is roughly 3.14 in most estimates.",
        "Python 3.11.2 fixed the bug.",
    ],
)
def test_abbreviations_and_numbers_do_not_split(text: str) -> None:
    assert texts(f"<p>{text} The next sentence starts here.</p>") == [text, "The next sentence starts here."]


def test_ordinary_sentences_split() -> None:
    assert texts("<p>One thing happened. Then another! Did it? Yes.</p>") == [
        "One thing happened.",
        "Then another!",
        "Did it?",
        "Yes.",
    ]


def test_a_long_text_reaches_punkt_in_pieces_cut_after_sentence_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """NLTK stops Punkt's regular expressions after 5 s of wall clock: one 1.2 MB paragraph of
    200,000 short sentences raised its TimeoutError out of ``parse_html``."""
    from spire_core.reading import punkt

    seen: list[int] = []
    spans = punkt._spans
    monkeypatch.setattr(punkt, "_spans", lambda text, language: seen.append(len(text)) or spans(text, language))
    text = "Short sentence here. " * (3 * punkt.MAX_PUNKT_CHARS // 21)
    got = punkt.sentence_spans(text)
    assert len(seen) > 3 and max(seen) <= punkt.MAX_PUNKT_CHARS
    assert [text[b:e] for b, e in got] == ["Short sentence here."] * text.count(".")


def test_a_piece_cut_inside_a_word_joins_its_halves() -> None:
    from spire_core.reading.punkt import MAX_PUNKT_CHARS, sentence_spans

    word = "x" * (2 * MAX_PUNKT_CHARS)
    text = f"First one. {word}. Last one."
    assert [text[b:e] for b, e in sentence_spans(text)] == ["First one.", f"{word}.", "Last one."]


def test_punkt_giving_up_is_a_typed_error_naming_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    from spire_core import SegmentationError
    from spire_core.reading import punkt

    def stalled(text: str, language: str) -> list[tuple[int, int]]:
        raise TimeoutError("regular-expression match exceeded its 5.0s time limit")

    monkeypatch.setattr(punkt, "_spans", stalled)
    with pytest.raises(SegmentationError, match=r"'slow\.html'") as err:
        parse_html("<p>One. Two.</p>", doc_id="slow.html")
    assert err.value.doc_id == "slow.html"


def test_punkt_works_offline_with_empty_nltk_data(tmp_path: FsPath) -> None:
    """No nltk.download: the parameters ship with the package; NLTK_DATA points at nothing.

    The child runs under another hash seed than this process, so equal output also shows
    that paths do not depend on hash randomisation.
    """
    page = FIGURE_2 + "<p>Dr. Who met Mr. Smith at 3 p.m. today. It rained.</p>"
    script = (
        "import json, nltk\n"
        "nltk.download = None  # any download attempt would fail loudly\n"
        "from spire_core import parse_html, sentences, encode_paths\n"
        f"doc = parse_html({page!r})\n"
        "print(json.dumps([[s.text, encode_paths(s.paths)] for s in sentences(doc)]))\n"
    )
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    env = {**os.environ, "NLTK_DATA": str(tmp_path), "PYTHONHASHSEED": seed, "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    child = json.loads(done.stdout)
    assert child == [[s.text, encode_paths(s.paths)] for s in sentences(parse_html(page))]
    assert [t for t, _ in child][-2:] == ["Dr. Who met Mr. Smith at 3 p.m. today.", "It rained."]
    assert list(tmp_path.iterdir()) == []  # nothing was fetched into NLTK_DATA


def test_punkt_loads_without_the_rest_of_nltk_and_leaves_nltk_whole() -> None:
    """Segmenting imports NLTK's Punkt module alone (not SciPy, scikit-learn or pandas through NLTK's
    package ``__init__``), gives the sentences a full NLTK import gives, and an application's own
    ``import nltk`` afterwards still gets the whole of NLTK."""
    page = FIGURE_2 + "<p>Dr. Who met Mr. Smith at 3 p.m. today. It rained. Why? e.g. this one.</p>"
    script = (
        "import json, sys\n"
        "from spire_core import parse_html, sentences\n"
        f"texts = [s.text for s in sentences(parse_html({page!r}))]\n"
        "heavy = [m for m in ('nltk', 'scipy', 'sklearn', 'pandas') if m in sys.modules]\n"
        "import nltk\n"
        "whole = callable(nltk.sent_tokenize) and hasattr(nltk.tokenize.punkt, 'PunktSentenceTokenizer')\n"
        "print(json.dumps([texts, heavy, whole]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    texts, heavy, whole = json.loads(done.stdout)
    import nltk  # noqa: F401  # this process: Punkt from a full NLTK import

    assert texts == [s.text for s in sentences(parse_html(page))]
    assert heavy == []
    assert whole is True


# -- inline markup ---------------------------------------------------------------------
def test_sentence_starting_and_ending_at_a_link_edge_keeps_it_whole() -> None:
    doc = parse_html('<p>First one. <a href="#">Whole linked sentence.</a> Last one.</p>')
    p = doc.get((0, 0))
    assert [doc.get(c).tag for c in p.children] == [
        SENTENCE_BEG,
        None,
        SENTENCE_END,
        None,
        SENTENCE_BEG,
        "a",
        SENTENCE_END,
        None,
        SENTENCE_BEG,
        None,
        SENTENCE_END,
    ]
    assert tree(doc, (0, 0, 5)) == ("a", ["Whole linked sentence."])
    linked = sentence_with(doc, "Whole linked sentence.")
    assert {(0, 0, 5), (0, 0, 5, 0)} <= linked.paths


def test_sentinels_leave_nested_inline_elements() -> None:
    doc = parse_html("<p><a href='#'><em>Emphatic start</em> of it.</a> Next.</p>")
    assert tree(doc, (0, 0)) == (
        "p",
        [
            (SENTENCE_BEG, []),
            ("a", [("em", ["Emphatic start"]), " of it."]),
            (SENTENCE_END, []),
            " ",
            (SENTENCE_BEG, []),
            "Next.",
            (SENTENCE_END, []),
        ],
    )


def test_boundary_inside_inline_element_puts_sentinels_inside() -> None:
    """A boundary inside <em> splits its text node; the <em> keeps all its words, once."""
    doc = parse_html("<p>He said <em>hello. Then</em> he left.</p>")
    assert tree(doc, (0, 0)) == (
        "p",
        [
            (SENTENCE_BEG, []),
            "He said ",
            ("em", ["hello.", (SENTENCE_END, []), " ", (SENTENCE_BEG, []), "Then"]),
            " he left.",
            (SENTENCE_END, []),
        ],
    )
    first, second = sentences(doc)
    assert (first.text, second.text) == ("He said hello.", "Then he left.")
    assert (0, 0, 2) not in first.paths and (0, 0, 2) not in second.paths  # the em is in neither alone
    assert (0, 0, 2, 0) in first.paths and (0, 0, 2, 4) in second.paths


def test_block_inside_inline_element_ends_the_sentence_before_it() -> None:
    """Sentences never nest: text around a block nested in a link forms sentences of its own."""
    html = "<p>Text <a href='x'>link <div>Block in link.</div> tail</a> more.</p>"
    assert texts(html) == ["Text link", "Block in link.", "tail more."]
    _check_invariants(parse_html(html))


def test_line_breaks_separate_words_and_sentences() -> None:
    assert texts("<p>First line here.<br>Second line here.<br/>Third line</p>") == [
        "First line here.",
        "Second line here.",
        "Third line",
    ]
    assert texts("<td>alpha<br>beta</td>") == ["alpha beta"]


# -- blocks ----------------------------------------------------------------------------
def test_headings_are_their_own_sentence() -> None:
    doc = parse_html(
        "<h2>Installation</h2><p>Run the installer. Reboot.</p>"
        "<div><h3>No period heading</h3>loose text right after it</div>"
    )
    assert [s.text for s in sentences(doc)] == [
        "Installation",
        "Run the installer.",
        "Reboot.",
        "No period heading",
        "loose text right after it",
    ]


def test_unsplit_blocks_are_one_sentence() -> None:
    assert texts("<h1>A. B. C.</h1><dl><dt>Dr. X. Y.</dt><dd>One. Two.</dd></dl>") == [
        "A. B. C.",
        "Dr. X. Y.",
        "One.",
        "Two.",
    ]


def test_list_item_label_and_nested_list_are_separate() -> None:
    assert texts("<ul><li>Lunch<ul><li>Sandwich</li><li>Salad</li></ul></li></ul>") == [
        "Lunch",
        "Sandwich",
        "Salad",
    ]


def test_title_is_not_a_sentence() -> None:
    assert texts("<html><head><title>Page title</title></head><body><p>Body.</p></body></html>") == ["Body."]


# -- invariants ------------------------------------------------------------------------
def _check_invariants(doc: Document) -> None:
    ss: list[Sentence] = sentences(doc)
    every = set(doc.paths())
    body_text = "".join(
        doc.get(p).text for p in doc.paths() if doc.get(p).is_text and "head" not in _tags_above(doc, p)
    )
    assert _nonspace("".join(s.text for s in ss)) == _nonspace(body_text)  # nothing lost, nothing doubled
    previous: tuple[int, ...] | None = None
    for s in ss:
        assert s.paths <= every
        assert doc.get(s.begin).tag == SENTENCE_BEG
        assert s.begin in s.paths
        ends = [p for p in s.paths if doc.get(p).tag == SENTENCE_END]
        begs = [p for p in s.paths if doc.get(p).tag == SENTENCE_BEG]
        assert begs == [s.begin] and len(ends) == 1
        assert s.begin < ends[0]
        assert previous is None or previous < s.begin
        previous = ends[0]
    marks = [doc.get(p).tag for p in doc.paths() if doc.get(p).tag in (SENTENCE_BEG, SENTENCE_END)]
    assert marks == [SENTENCE_BEG, SENTENCE_END] * len(ss)  # sentences never nest or overlap
    for p in every:
        node = doc.get(p)
        if node.tag in INLINE_TAGS and node.children:  # sentinels sit outside an element they start/end at
            assert doc.get(node.children[0]).tag != SENTENCE_BEG
            assert doc.get(node.children[-1]).tag != SENTENCE_END


def _tags_above(doc: Document, path: tuple[int, ...]) -> set[str | None]:
    return {doc.get(path[:k]).tag for k in range(len(path))}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inline_html())
def test_paragraph_invariants(html: str) -> None:
    _check_invariants(parse_html(f"<p>{html}</p>"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(html_pages())
def test_page_invariants(html: str) -> None:
    doc = parse_html(html)
    _check_invariants(doc)
    again = parse_html(html.encode())
    assert [encode_paths(s.paths) for s in sentences(doc)] == [encode_paths(s.paths) for s in sentences(again)]


def test_real_page_invariants(example_pages: FsPath) -> None:
    doc = parse_html((example_pages / "python-json.html").read_bytes())
    _check_invariants(doc)
    assert len(sentences(doc)) > 100


# -- the sentence index ----------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page=html_pages())
def test_sentence_index_finds_the_sentence_of_each_node(page: str) -> None:
    doc = parse_html(page)
    index = sentence_index(doc)
    seeds = sentences(doc)
    if seeds:
        assert index.by_sentence
        assert index.begins == sorted(index.begins) == [s.span[0] for s in seeds]
        assert [doc.to_paths(n) for n in index.nodes] == [s.paths for s in seeds]
    held = {i: k for k, nodes in enumerate(index.nodes) for i in nodes}
    for i in range(len(doc)):
        assert index.holding(i) == held.get(i)


def test_sentence_index_without_sentinels_is_the_text_nodes() -> None:
    doc = parse_html("<p>One. Two.</p><p> </p><ul><li>three</li></ul>", segment=False)
    index = sentence_index(doc)
    assert not index.by_sentence
    assert [doc.text[i] for i in index.begins] == ["One. Two.", "three"]
    assert index.holding(doc.text.index("three")) == 1
    assert index.before(0) == -1 and index.holding(0) is None
    assert sentence_indices(doc, 0, 0) == [0]


@pytest.mark.parametrize("text", ["[-+]?[0-7]+", "Is it?Yes.", "e.g.(see below) more"])
def test_a_boundary_needs_space_after_it(text: str) -> None:
    """Punkt may break right after "?" or "." before a bracket; without a space there it is one sentence."""
    doc = parse_html(f"<table><tr><th>Pattern</th></tr><tr><td><code>{text}</code></td></tr></table>")
    assert [s.text for s in sentences(doc)] == ["Pattern", text]
    assert f"| {text} |" in render(doc, frozenset(doc.paths()))
