"""The document model on the paper's tiny document (Listings 1-2, Example 2.1) and the title (2.7)."""

from __future__ import annotations

import gc
import random
import sys
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spire_core import TITLE, Document, UnknownPathError, global_context, parse_html
from spire_core.document.tree import LRU, Memo
from tests.core.strategies import tree

LISTING_1 = """<html>
<body>
<section>
<h1>Title</h1>
<p>First paragraph.</p>
<p>Second paragraph.</p>
</section>
</body>
</html>"""

#: Listing 2, as (path, tag, text) in document order (tag None for text nodes).
LISTING_2 = [
    ((), "html", ""),
    ((0,), "body", ""),
    ((0, 0), "section", ""),
    ((0, 0, 0), "h1", ""),
    ((0, 0, 0, 0), None, "Title"),
    ((0, 0, 1), "p", ""),
    ((0, 0, 1, 0), None, "First paragraph."),
    ((0, 0, 2), "p", ""),
    ((0, 0, 2, 0), None, "Second paragraph."),
]

LISTING_2_TREE = (
    "html",
    [
        (
            "body",
            [
                (
                    "section",
                    [("h1", ["Title"]), ("p", ["First paragraph."]), ("p", ["Second paragraph."])],
                )
            ],
        )
    ],
)


@pytest.fixture(scope="module")
def tiny() -> Document:
    return parse_html(LISTING_1, segment=False)


def test_listing_2_paths_tags_and_texts(tiny: Document) -> None:
    """Example 2.1: every path of Listing 2, in document order; no whitespace-only text nodes."""
    got = [(p, tiny.get(p).tag, tiny.get(p).text) for p in tiny.paths()]
    assert got == LISTING_2
    assert len(tiny) == len(LISTING_2)


def test_listing_2_tree(tiny: Document) -> None:
    assert tree(tiny) == LISTING_2_TREE


def test_first_paragraph_text_path(tiny: Document) -> None:
    """The paper's example: the text of the first paragraph is at [0,0,1,0]."""
    node = tiny.get((0, 0, 1, 0))
    assert node.is_text and node.text == "First paragraph."
    assert node.children == ()


def test_node_children_are_paths(tiny: Document) -> None:
    section = tiny.get((0, 0))
    assert section.children == ((0, 0, 0), (0, 0, 1), (0, 0, 2))
    assert [tiny.get(c).tag for c in section.children] == ["h1", "p", "p"]
    assert not section.is_text


def test_get_accepts_lists(tiny: Document) -> None:
    assert tiny.get([0, 0, 1]).tag == "p"  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [(1,), (0, 0, 3), (0, 0, 1, 0, 0), (0, 0, 0, 1), (-1,), (0, -1), (0, 0, 1, 1)])
def test_get_unknown_path(tiny: Document, path: tuple[int, ...]) -> None:
    with pytest.raises(UnknownPathError) as info:
        tiny.get(path)
    assert info.value.path == path
    assert isinstance(info.value, KeyError)


def test_unknown_path_error_names_the_document() -> None:
    doc = parse_html(LISTING_1, doc_id="tiny.html", segment=False)
    with pytest.raises(UnknownPathError, match=r"tiny\.html"):
        doc.get((7,))


def test_paths_are_prefix_closed_and_in_document_order(tiny: Document) -> None:
    paths = list(tiny.paths())
    assert paths == sorted(paths)  # pre-order is lexicographic order of paths
    for p in paths:
        if p:
            assert p[:-1] in paths
            assert p in tiny.get(p[:-1]).children


def test_example_2_7_title_is_the_h1(tiny: Document) -> None:
    """No <title>: the title context is the first <h1> at [0,0,0]."""
    assert global_context(tiny, [], TITLE) == {(0, 0, 0)}
    assert tiny.title == "Title"
    assert tiny.title_path == (0, 0, 0)


def test_example_2_7_with_a_title_element() -> None:
    doc = parse_html(LISTING_1.replace("<html>", "<html><head><title>The tiny page</title></head>"), segment=False)
    assert doc.get((0,)).tag == "head"
    assert doc.get((0, 0)).tag == "title"
    assert global_context(doc, [], TITLE) == {(0, 0)}
    assert doc.title == "The tiny page"
    # the body moved one position to the right; the h1 is not the title any more
    assert doc.get((1, 0, 0)).tag == "h1"
    assert global_context(doc, [(1, 0, 2, 0)], TITLE) == {(0, 0), (1, 0, 2, 0)}


def test_title_repeated_by_first_heading_is_that_heading() -> None:
    """A <title> that only repeats the first heading (plus a site suffix) is represented by the heading."""
    doc = parse_html(
        "<html><head><title>json — JSON encoder — Python docs</title></head>"
        "<body><h1>json — JSON encoder</h1><p>Text.</p></body></html>",
        segment=False,
    )
    assert doc.get(doc.title_path or (9,)).tag == "h1"
    assert global_context(doc, [], TITLE) == {(1, 0)}


def test_no_title_no_h1_gives_empty_title_context() -> None:
    doc = parse_html("<h2>Sub</h2><p>Text.</p>", segment=False)
    assert doc.title is None and doc.title_path is None
    assert global_context(doc, [], TITLE) == frozenset()


def test_empty_title_falls_back_to_h1() -> None:
    doc = parse_html("<html><head><title>  </title></head><body><h1>Real</h1></body></html>", segment=False)
    assert doc.title == "Real"


def test_cleaning_drops_invisible_content() -> None:
    """Comments, script, style, hidden elements and head metadata are not nodes."""
    doc = parse_html(
        "<html><head><meta charset='utf-8'><style>p{}</style><title>T</title></head><body>"
        "<!-- note --><script>var x = 1;</script><p>Visible.</p><p hidden>Secret.</p>"
        "<div style='display: none'>Gone.</div><noscript>No JS.</noscript></body></html>",
        segment=False,
    )
    texts = [doc.get(p).text for p in doc.paths() if doc.get(p).is_text]
    assert texts == ["T", "Visible."]
    assert {doc.get(p).tag for p in doc.paths()} == {"html", "head", "title", "body", "p", None}


def test_whitespace_between_inline_elements_is_kept() -> None:
    """Whitespace separating two inline siblings is a word separator, so it stays a node."""
    doc = parse_html("<p><a>one</a> <b>two</b></p>", segment=False)
    assert tree(doc) == ("html", [("body", [("p", [("a", ["one"]), " ", ("b", ["two"])])])])


def test_same_bytes_same_paths() -> None:
    html = "<html><body><h2>A</h2><p>One. Two <a href='#'>three</a>.</p><ul><li>x</li></ul></body></html>"
    first, second = parse_html(html), parse_html(html.encode())
    assert list(first.paths()) == list(second.paths())
    assert [first.get(p) for p in first.paths()] == [second.get(p) for p in second.paths()]


def test_doc_id_and_encoding_are_recorded() -> None:
    doc = parse_html(b"<p>x</p>", doc_id="d1")
    assert doc.doc_id == "d1"
    assert doc.encoding == "utf-8"
    assert parse_html("<p>x</p>").encoding == "str"


# -- memos -----------------------------------------------------------------------------------
def test_memo_computes_once_per_document() -> None:
    calls: list[Document] = []

    def count_tags(doc: Document) -> int:
        calls.append(doc)
        return len(doc.tag)

    memo: Memo[int] = Memo(count_tags)
    a, b = parse_html("<p>a</p>"), parse_html("<p>b <em>c</em></p>")
    assert [memo(a), memo(a), memo(b), memo(b)] == [len(a.tag), len(a.tag), len(b.tag), len(b.tag)]
    assert calls == [a, b]


@given(
    keys=st.lists(st.integers(min_value=0, max_value=20), max_size=60), maxsize=st.integers(min_value=1, max_value=8)
)
def test_lru_keeps_the_most_recently_used(keys: list[int], maxsize: int) -> None:
    lru: LRU[int, int] = LRU(maxsize)
    recent: list[int] = []  # keys by last use, most recent last
    for k in keys:
        if lru.get(k) is None:
            lru[k] = k * 10
        recent = [r for r in recent if r != k] + [k]
        assert len(lru) <= maxsize
    kept = recent[-maxsize:]
    assert len(lru) == len(kept)
    assert all(lru.get(k) == k * 10 for k in kept)


def test_lru_shared_between_threads_raises_nothing_and_stays_bounded() -> None:
    """Async adapters aggregate on a thread pool over the same pages' LRUs: a read racing an
    eviction raised KeyError. Now a step another thread made moot is skipped; while 8 threads
    insert at once the LRU holds at most one entry more per thread."""
    lru: LRU[int, int] = LRU(4)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(20_000):
                k = rng.randrange(8)
                got = lru.get(k)
                assert got in (None, k + 1)
                if got is None:
                    lru[k] = k + 1
                assert len(lru) <= 4 + 8
        except BaseException as err:  # (collected: an exception in a thread does not fail the test)
            errors.append(err)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    lru[99] = 100  # alone again, an insert evicts down to the bound
    assert len(lru) == 4 and lru.get(99) == 100


def test_memo_computed_by_threads_at_once_keeps_one_value() -> None:
    """Two threads that both miss a memo get the same value (the first stored), so a memoised
    cache (an LRU, a dict) is shared, not replaced by the second thread's."""
    both = threading.Barrier(2)

    def fresh(doc: Document) -> list[int]:
        both.wait(timeout=10)  # each thread computes before either stores
        return []

    memo: Memo[list[int]] = Memo(fresh)
    doc = parse_html("<p>a</p>")
    got: list[list[int]] = []
    threads = [threading.Thread(target=lambda: got.append(memo(doc))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and got[0] is got[1] is memo(doc)


def test_lru_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LRU(0)


def test_child_indices_are_tuples_the_collector_does_not_track() -> None:
    # a list per node made half of a query process's objects, each visited by every full collection
    doc = parse_html("<html><body><h1>T</h1><p>One <b>two</b> three.</p><ul><li>a</li><li>b</li></ul></body></html>")
    assert all(type(c) is tuple for c in doc.children)
    leaves = [i for i in range(len(doc)) if not doc.children[i]]
    assert len(leaves) > 5 and all(doc.children[i] is doc.children[leaves[0]] for i in leaves)  # one shared ()
    gc.collect()
    assert not any(gc.is_tracked(c) for c in doc.children)
    assert doc.children[0] and all(doc.parent[c] == 0 for c in doc.children[0])
