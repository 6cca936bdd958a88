"""Contextual filtering (Section 3.2): views, prompt, label parsing, labels back to path sets."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
import threading
import time
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spire_core import (
    Citation,
    Document,
    EvidenceFilterError,
    Hit,
    Subdocument,
    aggregate,
    aselect_evidence,
    global_context,
    parse_html,
    render,
    select_evidence,
    sentences,
)
from spire_core.query.evidence import Selection, View, build_prompt, build_views, final_answer, parse_labels

PAGE = Path(__file__).resolve().parents[2] / "examples" / "pages" / "postgresql-wal.html"
QUESTION = "What is the valid range of checkpoint_timeout?"
KNOWN = ["E1", "E2", "E3", "E5"]


@lru_cache(maxsize=1)
def _wal() -> Document:
    return parse_html(PAGE.read_bytes(), doc_id="wal")


def _results(budget: int = 300, n: int = 12) -> tuple[list[Subdocument], dict[str, Document]]:
    doc = _wal()
    words = set(re.findall(r"\w+", QUESTION.lower()))
    ranked = sorted(sentences(doc), key=lambda s: -len(words & set(re.findall(r"\w+", s.text.lower()))))
    hits = [Hit("wal", s.paths, 1.0 - k / 100) for k, s in enumerate(ranked[:n])]
    docs = {"wal": doc}
    return aggregate(hits, documents=docs, budget=budget), docs


def _label_of(views: list[View], needle: str) -> str:
    [label] = [lab for v in views for lab in v.units if re.search(rf"<{lab}>[^<]*{re.escape(needle)}", v.text)]
    return label


# -- parse_labels ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "labels"),
    [
        ('["E1", "E3"]', ["E1", "E3"]),
        ('```json\n["E2"]\n```', ["E2"]),
        ('```\n["E3", "E1"]\n```', ["E3", "E1"]),
        ('Sure! The passages needed are ["E1", "E5"]. Hope this helps.', ["E1", "E5"]),
        ("['E1', 'E3']", ["E1", "E3"]),
        ("E1, E3", ["E1", "E3"]),
        ('["e2"]', ["E2"]),
        ("e2", ["E2"]),
        ("<E2>", ["E2"]),
        ('["<E5>", "</E1>"]', ["E5", "E1"]),
        ('["E3", "E3", "E1", "E3"]', ["E3", "E1"]),
        ('{"labels": ["E3"]}', ["E3"]),
        ("[E1, E3]", ["E1", "E3"]),
        ("The answer is in E2 and <E3>.", ["E2", "E3"]),
        ('["E1: it states the range"]', ["E1"]),
        ('<think>E2 looks close but E5 says it. ["E2"]?</think>\n["E5"]', ["E5"]),
        ('```json\n["E2", "E3"', ["E2", "E3"]),  # cut off mid-answer
    ],
)
def test_parse_labels_reads_what_models_return(answer: str, labels: list[str]) -> None:
    sel = parse_labels(answer, KNOWN)
    assert sel == Selection(labels, [], True, answer)


@pytest.mark.parametrize("answer", ["[]", "```json\n[]\n```", "Answer: []", " [ ] ", "<think>E2?</think>\n[]"])
def test_parse_labels_a_well_formed_empty_answer_selects_nothing(answer: str) -> None:
    sel = parse_labels(answer, KNOWN)
    assert sel.ok and sel.labels == [] and sel.unknown == []


@pytest.mark.parametrize(
    ("answer", "labels"),
    [
        ("Sure! [] Actually E2 is relevant.", ["E2"]),  # the audit's reply: labels after a stray []
        ('[] no wait, ["E3"]', ["E3"]),
        ('["E2"]... no, on reflection: []', []),  # the answer takes its list back: not an answer
        ("I think [] is not right here", []),
        ("Here is the list: [] and more text follows", []),
        ("[]] E", []),
    ],
)
def test_parse_labels_a_stray_empty_list_does_not_mean_nothing_helps(answer: str, labels: list[str]) -> None:
    sel = parse_labels(answer, KNOWN)
    assert sel.labels == labels and sel.ok == bool(labels)


@given(st.text(max_size=400))
@settings(max_examples=300)
def test_parse_labels_reads_only_a_whole_empty_answer_as_empty(answer: str) -> None:
    """Random replies hold a "[]" somewhere far more often than they are one (66% of 400-char
    garbage did in the audit): only a reply that is a bare empty list may read as one."""
    sel = parse_labels(answer, KNOWN)
    if sel.ok and not sel.labels:
        assert re.fullmatch(r"(```\w*\s*)?([A-Za-z][A-Za-z ]*:\s*)?\[\s*\]\s*\.?\s*(```)?", final_answer(answer))


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot determine this from the excerpts.",
        '["foo", "bar"]',
        "[true]",
        "{}",
        "The answer is 42 degrees",
        # numbers are not labels, and "none" in words is not the empty list the prompt asks for
        "[2, 5]",
        '["2", "3"]',
        "2, 5",
        "",
        "   ",
        "None.",
        "null",
    ],
)
def test_parse_labels_without_labels_is_not_ok(answer: str) -> None:
    sel = parse_labels(answer, KNOWN)
    assert not sel.ok and sel.labels == [] and sel.raw == answer


def test_parse_labels_drops_and_logs_unknown_labels(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="spire_core.query.evidence"):
        sel = parse_labels('["E1", "E99", "e42", "E99", "E3"]', KNOWN)
    assert sel.ok and sel.labels == ["E1", "E3"] and sel.unknown == ["E99", "E42"]
    assert any("E99" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


@given(st.text(max_size=200))
def test_parse_labels_never_raises(answer: str) -> None:
    sel = parse_labels(answer, KNOWN)
    assert set(sel.labels) <= set(KNOWN)
    assert sel.ok or not sel.labels


def test_parse_labels_accepts_non_strings() -> None:
    assert not parse_labels(None, KNOWN).ok  # type: ignore[arg-type]
    assert parse_labels(["E1"], KNOWN).labels == ["E1"]  # type: ignore[arg-type]


# -- views and prompt --------------------------------------------------------------------
def test_views_label_the_sentences_of_the_expanded_view() -> None:
    results, docs = _results()
    doc = docs["wal"]
    views = build_views(results, docs, target=400)
    assert len(views) == len(results) == 1
    [view] = views
    labels = list(view.units)
    assert labels == [f"E{n}" for n in range(1, len(labels) + 1)]
    starts = [min(doc.index(p) for p in view.units[lab]) for lab in labels]
    assert starts == sorted(starts)  # document order
    by_paths = {s.paths: s for s in sentences(doc)}
    for lab in labels:
        sentence = by_paths[view.units[lab]]  # each unit is exactly one sentence
        body = re.search(rf"<{lab}>(.*?)</{lab}>", view.text, re.S)
        assert body is not None and " ".join(body.group(1).split()) == sentence.text
    # the expansion grew the seeds; every seed sentence is a unit
    assert results[0].seeds <= frozenset().union(*view.units.values())
    assert len(labels) > len(results[0].citations)


def test_view_labels_run_on_across_views() -> None:
    results, docs = _results(budget=300)
    other, _ = _results(budget=120, n=3)
    views = build_views([*results, *other], docs, target=200, first_label=7)
    labels = [lab for v in views for lab in v.units]
    assert labels == [f"E{n}" for n in range(7, 7 + len(labels))]


def test_view_of_a_table_cell_labels_cells(example_pages: Path) -> None:
    doc = parse_html((example_pages / "wikipedia-table.html").read_bytes(), doc_id="t")
    cell = next(s for s in sentences(doc) if any(doc.tag[doc.parent[doc.index(p)]] == "td" for p in s.paths))
    [result] = aggregate([Hit("t", cell.paths, 1.0)], documents={"t": doc}, budget=200)
    [view] = build_views([result], {"t": doc}, target=150)
    assert len(view.units) > 1
    assert "|" in view.text  # rendered as a table


def test_prompt_holds_query_views_and_instructions() -> None:
    results, docs = _results()
    views = build_views(results, docs)
    prompt = build_prompt(QUESTION, views)
    assert QUESTION in prompt and '"wal"' in prompt
    assert all(v.text in prompt for v in views)
    assert "JSON list" in prompt and "[]" in prompt


# -- select_evidence ---------------------------------------------------------------------
def test_select_evidence_maps_labels_to_citations() -> None:
    results, docs = _results()
    doc = docs["wal"]
    prompts: list[str] = []
    views = build_views(results, docs)
    answer_label = _label_of(views, "The valid range is between 30 seconds and one day")

    def llm(prompt: str) -> str:
        prompts.append(prompt)
        return f'```json\n["{answer_label}", "E999"]\n```'

    ev = select_evidence(QUESTION, results, docs, llm)
    assert len(prompts) == 1 and prompts[0] == build_prompt(QUESTION, views)
    assert ev.views == views
    assert ev.selection.labels == [answer_label] and ev.selection.unknown == ["E999"]
    [cit] = ev.citations
    assert cit.doc_id == "wal" and cit.paths == views[0].units[answer_label]
    assert cit.text == render(doc, global_context(doc, cit.paths))
    assert "checkpoint_timeout" in cit.text and "30 seconds and one day" in cit.text
    assert cit.score == results[0].score


def test_select_evidence_empty_answer_is_reported_and_keeps_everything(caplog: pytest.LogCaptureFixture) -> None:
    results, docs = _results()
    with caplog.at_level(logging.WARNING, logger="spire_core.query.evidence"):
        ev = select_evidence(QUESTION, results, docs, lambda _: "[]")
    shown = sum(len(v.units) for v in ev.views)
    assert ev.citations == [c for r in results for c in r.citations] and ev.citations
    assert not ev.selection.ok and ev.selection.raw == "[]"
    reason = f"the model selected none of the {shown} shown units (answered [])"
    assert ev.empty_reason == ev.selection.empty_reason == reason
    assert any("selected none" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    with pytest.raises(EvidenceFilterError, match="selected none"):
        select_evidence(QUESTION, results, docs, lambda _: "[]", on_error="raise")


@pytest.mark.parametrize("answer", ["Sure! [] hm.", "I would say []", '["E99"]', "nothing"])
def test_select_evidence_answers_selecting_nothing_keep_everything(answer: str) -> None:
    results, docs = _results()
    ev = select_evidence(QUESTION, results, docs, lambda _: answer)
    assert ev.citations == [c for r in results for c in r.citations] and ev.citations
    assert not ev.selection.ok and ev.empty_reason


def test_select_evidence_without_results_makes_no_call() -> None:
    def llm(prompt: str) -> str:
        raise AssertionError("no call expected")

    ev = select_evidence(QUESTION, [], {}, llm)
    assert ev.citations == [] and ev.views == [] and ev.selection.ok


def _timeout(prompt: str) -> str:
    raise TimeoutError("read timed out")


def test_on_error_keep_returns_the_unfiltered_citations(caplog: pytest.LogCaptureFixture) -> None:
    results, docs = _results()
    with caplog.at_level(logging.WARNING, logger="spire_core.query.evidence"):
        ev = select_evidence(QUESTION, results, docs, _timeout)
    assert ev.citations == [c for r in results for c in r.citations] and ev.citations
    assert not ev.selection.ok and ev.selection.labels == []
    assert ev.selection.error is not None and "TimeoutError" in ev.selection.error
    assert any(r.levelno == logging.WARNING for r in caplog.records)


def test_on_error_keep_unreadable_answer() -> None:
    results, docs = _results()
    ev = select_evidence(QUESTION, results, docs, lambda _: "I am not sure, sorry.")
    assert ev.citations == [c for r in results for c in r.citations]
    assert not ev.selection.ok and ev.selection.error and ev.selection.raw == "I am not sure, sorry."


def test_on_error_keep_without_aggregate_citations_cites_the_seeds() -> None:
    results, docs = _results()
    bare = [Subdocument(r.doc_id, r.seeds, r.paths, r.text, r.cost, r.score) for r in results]
    ev = select_evidence(QUESTION, bare, docs, _timeout)
    assert [c.paths for c in ev.citations] == [r.seeds for r in results]


def test_on_error_raise() -> None:
    results, docs = _results()
    with pytest.raises(EvidenceFilterError, match="TimeoutError") as info:
        select_evidence(QUESTION, results, docs, _timeout, on_error="raise")
    assert isinstance(info.value.__cause__, TimeoutError)
    with pytest.raises(EvidenceFilterError, match="no labels"):
        select_evidence(QUESTION, results, docs, lambda _: "no idea", on_error="raise")
    with pytest.raises(ValueError, match="on_error"):
        select_evidence(QUESTION, results, docs, lambda _: "[]", on_error="ignore")
    with pytest.raises(ValueError, match="deadline"):
        select_evidence(QUESTION, results, docs, lambda _: "[]", deadline=0)


# -- the deadline ------------------------------------------------------------------------
def test_a_hanging_model_is_abandoned_at_the_deadline(caplog: pytest.LogCaptureFixture) -> None:
    results, docs = _results()
    release = threading.Event()

    def hangs(prompt: str) -> str:  # a client retrying for minutes
        release.wait(30)
        return '["E1"]'

    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="spire_core.query.evidence"):
        ev = select_evidence(QUESTION, results, docs, hangs, deadline=0.3)
    assert time.monotonic() - start < 5
    assert ev.citations == [c for r in results for c in r.citations] and ev.citations
    assert not ev.selection.ok and ev.empty_reason and "deadline" in (ev.selection.error or "")
    assert any("deadline" in r.getMessage() for r in caplog.records)
    with pytest.raises(EvidenceFilterError, match="deadline") as info:
        select_evidence(QUESTION, results, docs, hangs, deadline=0.3, on_error="raise")
    assert isinstance(info.value.__cause__, TimeoutError)
    release.set()


def test_the_deadline_thread_sees_the_callers_context_and_answers_in_time() -> None:
    results, docs = _results()
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")
    seen: list[tuple[str, bool]] = []

    def llm(prompt: str) -> str:
        seen.append((var.get(), threading.current_thread() is threading.main_thread()))
        return '["E1"]'

    ev = select_evidence(QUESTION, results, docs, llm)
    assert ev.selection.ok and ev.selection.labels == ["E1"] and seen == [("caller", False)]
    assert select_evidence(QUESTION, results, docs, llm, deadline=None).selection.labels == ["E1"]
    assert seen[1] == ("caller", True)  # no deadline: called in the caller's thread


def test_the_async_deadline_cancels_the_call() -> None:
    results, docs = _results()
    cancelled: list[bool] = []

    async def hangs(prompt: str) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return '["E1"]'

    start = time.monotonic()
    ev = asyncio.run(aselect_evidence(QUESTION, results, docs, hangs, deadline=0.2))
    assert time.monotonic() - start < 5 and cancelled == [True]
    assert not ev.selection.ok and ev.empty_reason and ev.citations
    with pytest.raises(EvidenceFilterError, match="deadline"):
        asyncio.run(aselect_evidence(QUESTION, results, docs, hangs, deadline=0.2, on_error="raise"))


def test_async_variant_matches_the_sync_one() -> None:
    results, docs = _results()
    seen: list[str] = []

    async def llm(prompt: str) -> str:
        seen.append(prompt)
        await asyncio.sleep(0)
        return '["E1", "E2"]'

    ev = asyncio.run(aselect_evidence(QUESTION, results, docs, llm))
    assert ev == select_evidence(QUESTION, results, docs, lambda _: '["E1", "E2"]')
    assert len(seen) == 1 and len(ev.citations) == 2

    async def failing(prompt: str) -> str:
        raise TimeoutError

    kept = asyncio.run(aselect_evidence(QUESTION, results, docs, failing))
    assert not kept.selection.ok and kept.selection.error == "TimeoutError"
    with pytest.raises(EvidenceFilterError):
        asyncio.run(aselect_evidence(QUESTION, results, docs, failing, on_error="raise"))


_LABELISH = st.one_of(
    st.integers(min_value=0, max_value=60).map(lambda n: f'"E{n}"'),
    st.integers(min_value=0, max_value=60).map(str),
    st.integers(min_value=0, max_value=60).map(lambda n: f"<e{n}>"),
    st.sampled_from(['"foo"', "null", "{", "]", "```", "Sure:", "\n", "E", "'E3'"]),
    st.text(max_size=8),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_LABELISH, max_size=10), bracket=st.booleans(), on_error=st.sampled_from(["keep"]))
def test_citations_are_always_within_what_the_model_was_shown(parts: list[str], bracket: bool, on_error: str) -> None:
    results, docs = _results(budget=200, n=6)
    body = ", ".join(parts)
    answer = f"[{body}]" if bracket else body
    ev = select_evidence(QUESTION, results, docs, lambda _: answer, target=150, on_error=on_error)
    shown = frozenset().union(*(paths for v in ev.views for paths in v.units.values()))
    assert ev.citations  # never silently empty: a selection of nothing keeps every citation
    assert ev.selection.ok or ev.empty_reason
    for cit in ev.citations:
        assert isinstance(cit, Citation) and cit.doc_id == "wal"
        assert cit.paths <= shown
    assert set(ev.selection.labels) <= {lab for v in ev.views for lab in v.units}
