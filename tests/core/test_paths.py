"""Path-set operators (Examples 2.2-2.6, Listings 3-5) and the compact path-set encoding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spire_core import (
    HTML,
    Document,
    PathFormatError,
    UnknownPathError,
    decode_paths,
    down,
    encode_paths,
    global_context,
    link,
    local_context,
    parse_html,
    prune,
    render,
    subdoc,
    up,
)
from spire_core.document.paths import down_indices, encode_path_sets, link_order, up_indices
from tests.core.strategies import html_pages, tree
from tests.core.test_document import LISTING_1, LISTING_2_TREE


@pytest.fixture(scope="module")
def tiny() -> Document:
    return parse_html(LISTING_1, segment=False)


@settings(max_examples=60, deadline=None)
@given(html=html_pages(), data=st.data())
def test_link_in_document_order_is_up_united_with_down_sorted(html: str, data: st.DataObject) -> None:
    doc = parse_html(html)
    nodes = data.draw(st.sets(st.integers(0, len(doc) - 1), max_size=12))
    assert link_order(doc, nodes) == sorted(up_indices(doc, nodes) | down_indices(doc, nodes))


# -- Example 2.2 -----------------------------------------------------------------------
def test_example_2_2_up(tiny: Document) -> None:
    assert up(tiny, {(0, 0, 1)}) == {(), (0,), (0, 0), (0, 0, 1)}


def test_example_2_2_down(tiny: Document) -> None:
    assert down(tiny, {(0, 0, 1)}) == {(0, 0, 1), (0, 0, 1, 0)}


def test_example_2_2_link(tiny: Document) -> None:
    assert link(tiny, {(0, 0, 1)}) == {(), (0,), (0, 0), (0, 0, 1), (0, 0, 1, 0)}


def test_operators_on_empty_and_root(tiny: Document) -> None:
    assert up(tiny, []) == down(tiny, []) == link(tiny, []) == frozenset()
    assert up(tiny, [()]) == {()}
    assert down(tiny, [()]) == set(tiny.paths())
    assert link(tiny, [()]) == set(tiny.paths())


def test_operators_accept_any_iterable_and_return_frozensets(tiny: Document) -> None:
    for op in (up, down, link):
        result = op(tiny, iter([[0, 0, 2]]))  # type: ignore[list-item]
        assert isinstance(result, frozenset)
        assert (0, 0, 2) in result


def test_up_and_down_are_closures(tiny: Document) -> None:
    p = {(0, 0, 1, 0), (0, 0, 2)}
    assert up(tiny, up(tiny, p)) == up(tiny, p)
    assert down(tiny, down(tiny, p)) == down(tiny, p)
    assert p <= up(tiny, p) and p <= down(tiny, p)
    assert link(tiny, p) == up(tiny, p) | down(tiny, p)


# -- Examples 2.3-2.6 ------------------------------------------------------------------
LISTING_3_TREE = (
    "html",
    [("body", [("section", [("p", ["First paragraph."]), ("p", ["Second paragraph."])])])],
)
LISTING_4_TREE = ("html", [("body", [])])
LISTING_5_TREE = ("html", [("body", [("section", [("h1", ["Title"]), ("p", ["Second paragraph."])])])])


def test_example_2_3_prune_keeps_both_paragraphs(tiny: Document) -> None:
    keep = {(), (0,), (0, 0), (0, 0, 1), (0, 0, 1, 0), (0, 0, 2), (0, 0, 2, 0)}
    pruned = prune(tiny, keep)
    assert tree(pruned) == LISTING_3_TREE
    assert isinstance(pruned, Document)
    assert tree(tiny) == LISTING_2_TREE  # the source is untouched


def test_example_2_4_missing_ancestor_collapses(tiny: Document) -> None:
    pruned = prune(tiny, {(), (0,), (0, 0, 1), (0, 0, 1, 0)})
    assert tree(pruned) == LISTING_4_TREE
    assert list(pruned.paths()) == [(), (0,)]


def test_example_2_5_subdoc_single_paragraph(tiny: Document) -> None:
    sub = subdoc(tiny, {(0, 0, 1)})
    assert tree(sub) == ("html", [("body", [("section", [("p", ["First paragraph."])])])])
    assert tree(sub) == tree(prune(tiny, link(tiny, {(0, 0, 1)})))


def test_example_2_6_subdoc_non_contiguous(tiny: Document) -> None:
    """Listing 5: the title text and the second paragraph's text, linked and pruned."""
    p = {(0, 0, 0, 0), (0, 0, 2, 0)}
    assert link(tiny, p) == {(), (0,), (0, 0), (0, 0, 0), (0, 0, 0, 0), (0, 0, 2), (0, 0, 2, 0)}
    assert tree(subdoc(tiny, p)) == LISTING_5_TREE


def test_prune_without_root_is_empty(tiny: Document) -> None:
    pruned = prune(tiny, {(0,), (0, 0)})
    assert len(pruned) == 0
    assert list(pruned.paths()) == []
    assert not pruned.has_content()
    assert render(pruned, []) == ""
    for op in (lambda: pruned.get(()), lambda: render(pruned, [()]), lambda: global_context(pruned, [()])):
        with pytest.raises(UnknownPathError):
            op()


def test_subdoc_paths_are_renumbered(tiny: Document) -> None:
    """A materialised subdocument is a new tree: the second paragraph becomes child 1."""
    sub = subdoc(tiny, {(0, 0, 2)})
    assert sub.get((0, 0, 0, 0)).text == "Second paragraph."


# -- unknown paths ---------------------------------------------------------------------
def _local(doc: Document, paths: Any) -> object:
    return local_context(doc, paths, target=50, size=len)


OPERATORS: list[Callable[[Document, Any], object]] = [
    up,
    down,
    link,
    prune,
    subdoc,
    render,
    global_context,
    lambda d, p: global_context(d, p, HTML),
    _local,
]


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("bad", [(3,), (0, 0, 9), (0, 0, 1, 0, 0), (-1,)])
def test_unknown_paths_raise(tiny: Document, op: Callable[[Document, Any], object], bad: tuple[int, ...]) -> None:
    with pytest.raises(UnknownPathError) as info:
        op(tiny, [(0, 0, 1), bad])
    assert info.value.path == bad


def test_render_labels_with_unknown_path_raise(tiny: Document) -> None:
    with pytest.raises(UnknownPathError):
        render(tiny, [(0, 0, 1)], labels={"E1": frozenset({(5, 5)})})


# -- compact encoding ------------------------------------------------------------------
def test_encode_examples() -> None:
    assert encode_paths([(0, 2, 3), (0, 2, 1)]) == "0.2.1,0.2.3"
    assert encode_paths([()]) == "~"
    assert encode_paths([]) == ""
    assert encode_paths([[1, 10], (1, 2), (1, 2)]) == "1.2,1.10"  # type: ignore[list-item]


def test_schema_version_1_sets_are_still_read() -> None:
    assert decode_paths("0.2.1;0.2.3") == decode_paths("0.2.1,0.2.3") == {(0, 2, 1), (0, 2, 3)}
    assert decode_paths("~;1") == {(), (1,)}


@pytest.mark.parametrize(
    "paths",
    [frozenset(), frozenset({()}), frozenset({(), (0,), (0, 0, 1, 0)}), frozenset({(12, 0, 345), (3,)})],
)
def test_decode_inverts_encode(paths: frozenset[tuple[int, ...]]) -> None:
    assert decode_paths(encode_paths(paths)) == paths


@settings(max_examples=200, deadline=None)
@given(st.frozensets(st.lists(st.integers(0, 10_000), max_size=8).map(tuple), max_size=12))
def test_round_trip_property(paths: frozenset[tuple[int, ...]]) -> None:
    text = encode_paths(paths)
    assert decode_paths(text) == paths
    assert encode_paths(decode_paths(text)) == text  # canonical


_PATH_SETS = st.frozensets(st.lists(st.integers(0, 50), max_size=5).map(tuple), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PATH_SETS, max_size=5))
def test_encoding_sets_together_encodes_each_alone(sets: list[frozenset[tuple[int, ...]]]) -> None:
    # sets within the first (a result's seeds and citations in its context) are encoded from its
    # order, the others alone: either way each as encode_paths does
    within = [frozenset(p for n, p in enumerate(sorted(sets[0])) if n % 3 != k) for k in range(3)] if sets else []
    wider = [frozenset(s | sets[0]) for s in sets]
    together = sets + within + wider
    assert encode_path_sets(together) == [encode_paths(s) for s in together]


def test_round_trip_on_a_real_document(tiny: Document) -> None:
    every = frozenset(tiny.paths())
    assert decode_paths(encode_paths(every)) == every


@pytest.mark.parametrize(
    "garbage",
    [
        *["a", "0.x", "0..1", ".0", "0.", "0;;1", ";", "0;", "-1", "0.-2", " 0", "0 ", "+1", "1_0", "٣", "~0", "[0]"],
        *["0,,1", ",", "0,", "0;,1"],
    ],
)
def test_decode_garbage_raises(garbage: str) -> None:
    with pytest.raises(PathFormatError):
        decode_paths(garbage)


def test_path_format_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        decode_paths("nope")
