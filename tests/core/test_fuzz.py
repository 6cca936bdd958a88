"""Bounded fuzzing of hostile pages (issue 12): a few hundred seeded inputs, under 2 minutes.

Every input goes through every public entry point (:func:`benchmarks.fuzz.exercise`):
only :class:`SpireError` may escape, the invariants must hold (paths exist, a sentence's
context renders it, determinism, policy laws, passages hold and show every sentence,
metadata round trips, evidence from shown units only, no script in highlights). Time is
not asserted here (no timed tests): ``python -m benchmarks.fuzz --n 20000 --slow 2`` reports
the inputs over the 2 s bound per input under 100 KB, in CPU seconds.
"""

from __future__ import annotations

import logging
import random

import pytest

from benchmarks.fuzz import FLOOD_LIMIT, GROWTH_LIMIT, exercise, flood_growth, growth, hostile_page

INPUTS = 240
CHUNK = 20
MAX_CHARS = 4000


@pytest.fixture(autouse=True)
def _quiet(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="spire_core")


@pytest.mark.parametrize("first", range(0, INPUTS, CHUNK))
def test_hostile_pages_raise_only_spire_errors_and_hold_invariants(first: int) -> None:
    for seed in range(first, first + CHUNK):
        page = hostile_page(random.Random(seed), MAX_CHARS)
        assert len(page) < 100_000
        try:
            outcome = exercise(page)
        except Exception as err:
            raise AssertionError(f"seed {seed}: {type(err).__name__}: {err}") from err
        assert outcome == "ok" or outcome.endswith("Error"), outcome


def test_the_generator_is_seeded_and_varied() -> None:
    pages = [hostile_page(random.Random(seed), MAX_CHARS) for seed in range(40)]
    assert pages == [hostile_page(random.Random(seed), MAX_CHARS) for seed in range(40)]
    assert len(set(pages)) == len(pages)
    assert any(isinstance(p, bytes) for p in pages) and any(isinstance(p, str) for p in pages)
    assert all(len(p) < 100_000 for p in pages)  # (deep pages and UTF-16 ones run past max_chars)


def test_no_context_grows_with_the_page() -> None:
    """Passage text per page character, 60 against 240 repetitions of 25 random motifs: every
    chain of labels through the page (layout tables, nested headings, rows of header cells)
    made it grow 6-8x on motifs like these."""
    worst, seed, fragment = growth(25, seed=7)[0]
    assert worst <= GROWTH_LIMIT, f"seed {seed}: {fragment}"


def test_a_flood_of_tiny_sentences_embeds_a_bounded_multiple_of_the_page() -> None:
    """Issue 36's page: 1,390x its size in passage text before the page's context budget."""
    for scale, size, unit, text, per_byte, _ in flood_growth((1, 2)):
        assert per_byte <= FLOOD_LIMIT, f"x{scale} ({size} B), {unit}: {text} chars"


def test_the_generator_makes_the_issue_36_shapes() -> None:
    pages = [hostile_page(random.Random(seed), MAX_CHARS) for seed in range(300)]
    text = [p if isinstance(p, str) else p.decode("utf-8", "replace") for p in pages]
    assert any(isinstance(p, bytes) and p[1:2] == b"\x00" for p in pages)  # UTF-16 LE without a BOM
    assert any("<svg>" in t for t in text) and any("<li>x. y.</li>" in t for t in text)
    assert any("\uff1c" in t or "\u200b" in t for t in text) and any("\f" in t and t.count("<i>") > 2000 for t in text)


def test_a_run_split_after_the_budget_ran_low_embeds_its_halves_without_context() -> None:
    """Seed 1013932: a run of sentences under deeply nested quotes, packed with context before the
    page's context budget ran low, was too long for the model's window once rendered and was split,
    down to single sentences, each half rendered with its context again: 87 passages of 808
    characters past the budget (203 KB against a bound of 164 KB). Halves made after the budget
    ran low now embed their own words only."""
    assert exercise(hostile_page(random.Random(1013932), 8000)) == "ok"
