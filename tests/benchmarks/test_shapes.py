"""The runner's per-class report: English question shapes (``benchmarks.shapes``); the core uses none."""

from __future__ import annotations

import pytest

from benchmarks.shapes import SHAPES, question_shape


@pytest.mark.parametrize(
    ("question", "shape"),
    [
        ("who was the first team to win the title?", "first"),
        ("what is the earliest date listed?", "first"),
        ("who was the last head of the family?", "last"),
        ("which is the most recent album?", "last"),
        ("what cyclist is listed next after the winner?", "next"),
        ("who finished directly below the champion?", "next"),
        ("what album was released before the live one?", "previous"),
        ("which station is listed above the bridge?", "previous"),
        ("which player weighed the most?", "most"),
        ("which country has the highest gdp?", "most"),
        ("which party received the least votes?", "least"),
        ("which stadium has the smallest capacity?", "least"),
        ("who is the only serbian player?", "none"),
        ("how long did the walk take?", "none"),
    ],
)
def test_question_shape(question: str, shape: str) -> None:
    assert shape in SHAPES
    assert question_shape(question) == shape
