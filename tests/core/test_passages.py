"""Passages: sentence seeds packed per section for embedding, expanded back into sentence hits."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spire_core import (
    HEADERS,
    HTML,
    Document,
    aggregate,
    approx_tokens,
    global_context,
    parse_html,
    render,
    seeds,
    sentences,
)
from spire_core.context.policy import MAX_CONTEXT_CHARS
from spire_core.errors import PathFormatError
from spire_core.indexing.passages import (
    CONTEXT_PER_CHAR,
    CONTEXT_PER_PAGE,
    decode_members,
    encode_members,
    page_size,
    passages,
)
from spire_core.options import Unit
from spire_core.query.aggregate import own_paths
from spire_core.query.passages import PassageHit, expand, sentence_search

from .strategies import html_pages, sentence_with

PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"

MANUAL = """<html><head><title>Widget manual</title></head><body>
<h1>Widget</h1>
<h2>Installation</h2>
<p>Download the archive. Unpack it anywhere. Run the installer as an administrator.</p>
<p>The installer asks for a folder. The default folder is fine for most users.</p>
<h2>Configuration</h2>
<p>The timeout setting ranges from 30 seconds to one day. Its default is five minutes.</p>
<table><tr><th>Option</th><th>Default</th></tr>
<tr><td>timeout</td><td>300</td></tr>
<tr><td>retries</td><td>3</td></tr>
<tr><td>verbose</td><td>off</td></tr></table>
</body></html>"""


def _ws(text: str) -> str:
    return " ".join(text.split())


@cache
def _page(name: str) -> Document:
    return parse_html((PAGES / name).read_bytes(), doc_id=name)


def _section(doc: Document, paths: frozenset) -> frozenset:
    """The headings active at a path set (the section it belongs to)."""
    return global_context(doc, paths, HEADERS) - paths


def test_every_sentence_is_one_member_in_document_order() -> None:
    doc = parse_html(MANUAL, doc_id="manual")
    members = [m for p in passages(doc) for m in p.members]
    assert members == [s.paths for s in sentences(doc)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(html_pages())
def test_passages_partition_the_sentences_of_generated_pages(html: str) -> None:
    doc = parse_html(html, doc_id="gen")
    found = passages(doc, max_tokens=30)
    assert [m for p in found for m in p.members] == [s.paths for s in sentences(doc)]
    for p in found:
        assert p.paths == frozenset().union(*p.members)
        assert p.text == render(doc, global_context(doc, p.paths))


def test_a_passage_never_crosses_a_heading() -> None:
    doc = parse_html(MANUAL, doc_id="manual")
    found = passages(doc, max_tokens=10_000)
    for p in found:
        assert len({_section(doc, m) for m in p.members}) == 1
    # one passage per section when the cap never binds: the h1 line, Installation, Configuration
    assert len(found) == 3


def test_shared_context_is_rendered_once_per_passage() -> None:
    doc = parse_html(MANUAL, doc_id="manual")
    config = next(p for p in passages(doc, max_tokens=10_000) if "timeout setting" in p.text)
    assert config.text.count("Configuration") == 1
    assert config.text.count("| Option | Default |") == 1  # the table's rows share one header rendering
    for value in ("300", "retries", "verbose"):
        assert value in config.text


def test_the_cap_splits_a_section_into_consecutive_passages() -> None:
    doc = parse_html(MANUAL, doc_id="manual")
    small = passages(doc, max_tokens=25)
    large = passages(doc, max_tokens=10_000)
    assert len(small) > len(large)
    for p in small:
        own = sum(approx_tokens(s.text) for s in sentences(doc) if s.paths in p.members)
        assert len(p.members) == 1 or own <= 25


def test_a_rendering_over_the_window_is_split() -> None:
    doc = _page("python-json.html")
    window = 40
    found = passages(doc, max_tokens=10_000, window=window, window_size=approx_tokens)
    assert all(len(p.members) == 1 or approx_tokens(p.text) <= window for p in found)
    assert [m for p in found for m in p.members] == [s.paths for s in sentences(doc)]


@pytest.mark.parametrize("unit", ["passage", "sentence"])
def test_a_context_over_the_bounds_is_shown_by_its_nearest_part(unit: Unit) -> None:
    """Every bound filled at once: a title, 6 headings and 16 nested labels of ~2,000 characters over each item."""
    label = "Label words here. " * 110
    page = (
        f"<title>{label}</title>"
        + "".join(f"<h{k}>{label}</h{k}>" for k in range(1, 7))
        + f"<ul><li><div>{label}</div>" * 16
        + "<ul>"
        + "".join(f"<li>Item {k}.</li>" for k in range(40))
    )
    doc = parse_html(page)
    units = seeds(doc, unit=unit)
    assert [m for u in units for m in u.members] == [s.paths for s in sentences(doc)]
    item = sentence_with(doc, "Item 39.").paths
    assert len(render(doc, global_context(doc, item))) > 40_000  # what the context holds
    assert units[0].text.startswith(f"# {label.strip()}")  # the nearest part: the title comes first
    assert "Item 39." in units[-1].text and units[-1].members[-1] == item
    assert all(len(_ws(u.text)) - len(u.own_text) < MAX_CONTEXT_CHARS + 100 for u in units)  # 43,621 before
    # 1,050x the page before the bounds, 160x with the per-unit bound; now the page's context budget
    # (its 1,806 label sentences use it up, later units are embedded without context)
    assert sum(len(u.text) for u in units) <= CONTEXT_PER_CHAR * page_size(doc) + CONTEXT_PER_PAGE + 2 * len(page)


def test_passages_are_far_fewer_than_sentences_on_real_pages() -> None:
    for name in ("python-json.html", "wikipedia-table.html"):
        doc = _page(name)
        assert len(passages(doc)) * 3 < len(sentences(doc))


def test_expand_gives_members_their_passage_score_in_rank_order() -> None:
    a, b, c = (frozenset({(0, k)}) for k in range(3))
    hits = [PassageHit("d", (a, b), 0.9), PassageHit("e", (c,), 0.8), PassageHit("d", (b, c), 0.7)]
    out = expand(hits)
    assert [(h.doc_id, h.paths, h.score) for h in out] == [
        ("d", a, 0.9),
        ("d", b, 0.9),
        ("e", c, 0.8),
        ("d", c, 0.7),  # b of d is already listed at its better rank
    ]


def test_overlap_order_puts_the_sentence_with_the_query_words_first() -> None:
    doc = parse_html(MANUAL, doc_id="manual")
    install = next(p for p in passages(doc, max_tokens=10_000) if "installer" in p.text)
    query = "which folder does the installer ask for"
    out = expand([PassageHit("manual", install.members, 0.5)], query=query, documents={"manual": doc}, order="overlap")
    by_paths = {s.paths: s.text for s in sentences(doc)}
    assert by_paths[out[0].paths] == "The installer asks for a folder."
    assert {h.paths for h in out} == set(install.members) and len(out) == len(install.members)
    assert [h.paths for h in expand([PassageHit("manual", install.members, 0.5)])] == list(install.members)
    with pytest.raises(ValueError):
        expand([], order="overlap")


@pytest.mark.parametrize("name", ["python-json.html", "postgresql-wal.html", "wikipedia-table.html"])
def test_every_citation_of_the_passage_index_is_a_sentence_path_set_rendering_its_sentence(name: str) -> None:
    doc = _page(name)
    found = passages(doc)
    by_paths = {s.paths: s for s in sentences(doc)}
    # a search that ranks the passages by how many words of a question they share
    query = "what does the default setting mean"
    words = set(re.findall(r"\w+", query))
    ranked = sorted(found, key=lambda p: -len(words & set(re.findall(r"\w+", p.text.lower()))))

    def search(k: int) -> list[PassageHit]:
        return [PassageHit(name, p.members, 1.0 / (1 + i)) for i, p in enumerate(ranked[:k])]

    results = aggregate(
        sentence_search(search, query=query, documents={name: doc}, order="overlap"),
        documents={name: doc},
        budget=800,
        size=approx_tokens,
    )
    citations = [c for r in results for c in r.citations]
    assert citations
    for c in citations:
        sentence = by_paths[c.paths]  # a sentence seed's own path set, never a whole passage
        assert _ws(sentence.text) in _ws(c.text)
        assert c.text == render(doc, own_paths(doc, c.paths, HTML))
    assert sum(approx_tokens(r.text) for r in results) <= 800


@given(
    st.lists(st.tuples(st.sampled_from("ab"), st.lists(st.integers(0, 30), min_size=1, max_size=6)), max_size=40),
    st.integers(1, 80),
)
def test_a_sentence_round_reads_only_the_passages_it_uses(ranked: list, k: int) -> None:
    # members may repeat across passages (expand keeps a member's first place): the round must
    # still give exactly what expanding the top k passages gives
    hits = [
        PassageHit(doc, tuple(frozenset({(m,)}) for m in dict.fromkeys(members)), 1.0 / (1 + i))
        for i, (doc, members) in enumerate(ranked)
    ]
    asked: list[int] = []

    def search(n: int) -> list[PassageHit]:
        asked.append(n)
        return hits[:n]

    got = sentence_search(search)(k)
    assert got == expand(hits[:k], limit=k)
    assert max(asked) <= k
    used = next((i + 1 for i in range(len(hits)) if len(expand(hits[: i + 1])) >= k), None)
    if used is not None:  # doubling from 8 passages: never twice what the round uses
        assert max(asked) < 2 * max(used, 8)


def test_bad_options_are_refused() -> None:
    doc = parse_html(MANUAL)
    with pytest.raises(ValueError):
        passages(doc, max_tokens=0)
    with pytest.raises(ValueError):
        expand([], order="random")  # type: ignore[arg-type]


def test_members_round_trip_through_their_counts() -> None:
    doc = _page("wikipedia-table.html")
    for p in passages(doc):
        assert decode_members(p.paths, encode_members(p.members)) == p.members
    p = passages(doc)[0]
    for bad in ("", "x", "0", str(len(p.paths) + 1)):
        with pytest.raises(PathFormatError):
            decode_members(p.paths, bad)
