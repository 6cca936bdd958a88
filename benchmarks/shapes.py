"""English question shapes, for the runner's per-class tables only (``shape:last``, ...).

The core's table views take no shape from the question (:mod:`spire_core.query.table_views`
delivers what every shape needs); the bench's questions are English, and classing them by
these words shows where a system stands on positional and superlative questions.
"""

from __future__ import annotations

import re
from typing import Literal

Shape = Literal["first", "last", "next", "previous", "most", "least", "none"]
#: Every question shape, in the order :func:`question_shape` tries them.
SHAPES: tuple[Shape, ...] = ("next", "previous", "first", "last", "most", "least", "none")
_TOKEN = re.compile(r"\w+")

_WORDS: dict[Shape, frozenset[str]] = {
    "next": frozenset({"next", "after", "following", "below", "subsequent", "succeeding", "behind"}),
    "previous": frozenset({"previous", "before", "preceding", "prior", "above", "ahead"}),
    "first": frozenset({"first", "1st", "earliest", "initial", "opening", "top"}),
    "last": frozenset({"last", "final", "latest", "bottom", "recent"}),
    "most": frozenset(
        {
            "most",
            "highest",
            "largest",
            "biggest",
            "greatest",
            "longest",
            "oldest",
            "fastest",
            "heaviest",
            "tallest",
            "maximum",
            "max",
            "best",
            "more",
            "higher",
            "larger",
            "longer",
            "older",
        }
    ),
    "least": frozenset(
        {
            "least",
            "lowest",
            "smallest",
            "fewest",
            "shortest",
            "youngest",
            "slowest",
            "lightest",
            "minimum",
            "min",
            "worst",
            "less",
            "fewer",
            "lower",
            "smaller",
            "shorter",
            "younger",
        }
    ),
}


def question_shape(question: str) -> Shape:
    """The shape of an English ``question``: which rows of a table it points at."""
    words = [w.casefold() for w in _TOKEN.findall(question)]
    for i, w in enumerate(words):  # "most recent" is the last one, not the largest
        if w == "most" and i + 1 < len(words) and words[i + 1] == "recent":
            words[i] = "last"
    present = set(words)
    for shape in SHAPES[:-1]:
        if present & _WORDS[shape]:
            return shape
    return "none"
