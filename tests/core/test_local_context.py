"""Local contextualization (Section 2.4): grow a selection in place toward a target size."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spire_core import (
    HTML,
    NONE,
    BudgetError,
    Document,
    Path,
    approx_tokens,
    global_context,
    local_context,
    parse_html,
    render,
    sentences,
)
from tests.core.strategies import html_pages, sentence_with
from tests.core.test_context import FIGURE_1

PAGE = """<html><head><title>Guide</title></head><body>
<h2>Setup</h2>
<p>Before one here. Install the <em>main</em> package now. After one here.</p>
<p>Next paragraph sentence. Another next sentence.</p>
<ul><li>Item A text.</li><li>Item B text.</li></ul>
<p>Far away sentence.</p>
</body></html>"""


def words(text: str) -> int:
    return len(text.split())


def shown(doc: Document, paths: frozenset[Path]) -> int:
    """Size of what a reader is shown: the rendering of the HTML-policy context."""
    return words(render(doc, global_context(doc, paths, HTML)))


@pytest.fixture(scope="module")
def doc() -> Document:
    return parse_html(PAGE)


def _em_text(doc: Document) -> frozenset[Path]:
    """A selection smaller than a sentence: the text inside <em>."""
    return frozenset(p for p in doc.paths() if doc.get(p).is_text and doc.get(p).text == "main")


def test_contains_seed_and_is_deterministic(doc: Document) -> None:
    seed = sentence_with(doc, "Install the main package now.").paths
    for target in (1, 10, 20, 40, 1000):
        got = local_context(doc, seed, target=target, size=words)
        assert seed <= got
        assert got == local_context(doc, seed, target=target, size=words)
        assert got == local_context(parse_html(PAGE), seed, target=target, size=words)  # same bytes, same paths


def test_stages_sentence_then_block_then_neighbours(doc: Document) -> None:
    seed = _em_text(doc)
    sentence = sentence_with(doc, "Install the main package now.").paths
    paragraph_sentences = [s.paths for s in sentences(doc) if s.text.endswith("one here.")] + [sentence]
    paragraph = frozenset().union(*paragraph_sentences)
    seed_size = shown(doc, seed)
    sentence_size = shown(doc, seed | sentence)
    assert seed_size < sentence_size

    # room for the whole sentence but not for the whole paragraph: exactly the sentence
    got = local_context(doc, seed, target=sentence_size, size=words)
    assert sentence <= got
    assert render(doc, got).endswith("Install the main package now.")
    assert "Before" not in render(doc, got) and "After" not in render(doc, got)

    # room for the paragraph: the <p> and all its sentences, nothing from the next paragraph
    block_size = shown(doc, paragraph | seed)
    got = local_context(doc, seed, target=block_size, size=words)
    assert paragraph <= got
    assert "Next paragraph" not in render(doc, got)

    # more room: neighbours in document order
    got = local_context(doc, seed, target=block_size + 3, size=words)
    assert sentence_with(doc, "Next paragraph sentence.").paths <= got
    assert "Far away" not in render(doc, got)


def test_does_not_exceed_target(doc: Document) -> None:
    seed = _em_text(doc)
    for target in range(shown(doc, seed), 60):
        got = local_context(doc, seed, target=target, size=words)
        assert shown(doc, got) <= target


def test_seed_over_target_is_returned_unchanged(doc: Document) -> None:
    seed = sentence_with(doc, "Install the main package now.").paths
    assert shown(doc, seed) > 3
    assert local_context(doc, seed, target=3, size=words) == seed


def test_everything_fits(doc: Document) -> None:
    seed = sentence_with(doc, "Item B text.").paths
    got = local_context(doc, seed, target=10_000, size=words)
    assert render(doc, got) == render(doc, [()]).replace("# Guide\n\n", "")


def test_policy_controls_what_is_measured(doc: Document) -> None:
    """With NONE the title and header are not charged, so more neighbours fit."""
    seed = sentence_with(doc, "Item A text.").paths
    with_html = local_context(doc, seed, target=12, size=words)
    bare = local_context(doc, seed, target=12, size=words, policy=NONE)
    assert with_html < bare
    assert words(render(doc, bare)) <= 12


def test_empty_selection(doc: Document) -> None:
    assert local_context(doc, [], target=50, size=words) == frozenset()


@pytest.mark.parametrize("target", [0, -1, -100])
def test_non_positive_target_raises(doc: Document, target: int) -> None:
    seed = sentence_with(doc, "Item A text.").paths
    with pytest.raises(BudgetError):
        local_context(doc, seed, target=target, size=words)


def test_without_sentences_grows_by_text_nodes() -> None:
    doc = parse_html(PAGE, segment=False)
    text = next(p for p in doc.paths() if doc.get(p).text == "Item A text.")
    got = local_context(doc, [text], target=20, size=words)
    assert text in got
    assert shown(doc, got) <= 20
    assert len(got) > 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(html=html_pages(), data=st.data())
def test_local_context_properties(html: str, data: st.DataObject) -> None:
    doc = parse_html(html)
    ss = sentences(doc)
    if not ss:
        return
    seed = data.draw(st.sampled_from(ss)).paths
    target = data.draw(st.integers(1, 80))
    got = local_context(doc, seed, target=target, size=approx_tokens)
    assert seed <= got <= frozenset(doc.paths())
    assert got == local_context(doc, seed, target=target, size=approx_tokens)
    if approx_tokens(render(doc, global_context(doc, seed))) <= target:
        assert approx_tokens(render(doc, global_context(doc, got))) <= target
    else:
        assert got == seed


def test_figure_1_item_4_expansion() -> None:
    """Figure 1 (4): the merged result grows with content just above and below it, not further."""
    doc = parse_html(FIGURE_1)
    merged = (
        sentence_with(doc, "Visitors come all year.").paths | sentence_with(doc, "Virginia has 43 state parks.").paths
    )
    base = shown(doc, merged)
    got = render(doc, global_context(doc, local_context(doc, merged, target=base + 16, size=words)))
    assert "Virginia's park system protects forests, rivers and beaches." in got  # above
    assert "The first parks opened in 1936." in got  # below
    assert "The system grew slowly." not in got
    assert "History" not in got
    assert words(got) <= base + 16
