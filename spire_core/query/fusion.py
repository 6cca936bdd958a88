"""Ranking fusion: the dense (passage) ranking and the lexical (sentence) ranking made one.

:func:`rrf` is reciprocal rank fusion (Cormack et al. 2009) over rankings of
:class:`~spire_core.values.Hit` objects (a page and a path set); :func:`fused_search`
is a sentence :data:`~spire_core.query.aggregate.Search` fusing the passage ranking expanded to
sentences (:func:`spire_core.query.passages.sentence_search`) with a lexical ranking
(:meth:`spire_core.query.lexical.LexicalIndex.hits`), asked once and read by every
aggregation round as a prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from spire_core.document.tree import Path
from spire_core.values import Hit, Search

__all__ = ["DEFAULT_RRF_K", "fused_search", "rrf"]

#: Reciprocal rank fusion's constant (Cormack et al. 2009's 60): a hit at rank r adds w / (k + r).
DEFAULT_RRF_K = 60.0


def rrf(
    rankings: Sequence[Sequence[Hit]],
    *,
    k: float = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
    shared_ties: Sequence[bool] | None = None,
) -> list[Hit]:
    """Reciprocal rank fusion: each hit scores the sum of ``w / (k + rank)`` over the rankings
    holding it (rank from 1; a hit is a page and a path set), divided by what a hit ranked first
    by every ranking gets (``sum(w) / (k + 1)``): the fused score is in [0, 1], on the scale of
    a similarity, so what reads it downstream (the table views' ranking) weighs it as one. Best
    first; ties in order of first appearance (ranking by ranking). The hits keep their path
    sets; their score is the fused one.

    ``shared_ties[i]``: in ranking ``i`` consecutive hits with the same score share the rank
    of the first (a passage's members, which inherit its score, rank as the passage).
    """
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    shared = [False] * len(rankings) if shared_ties is None else list(shared_ties)
    if len(weights) != len(rankings) or len(shared) != len(rankings):
        raise ValueError("one weight and one shared_ties flag per ranking")
    fused: dict[tuple[str, frozenset[Path]], float] = {}
    for ranking, w, tie in zip(rankings, weights, shared, strict=True):
        rank = 0
        last: float | None = None
        seen: set[tuple[str, frozenset[Path]]] = set()
        for n, hit in enumerate(ranking, start=1):
            if not (tie and last is not None and hit.score == last):
                rank = n
            last = hit.score
            key = (hit.doc_id, hit.paths)
            if key in seen:
                continue
            seen.add(key)
            fused[key] = fused.get(key, 0.0) + w / (k + rank)
    order = sorted(fused.items(), key=lambda kv: -kv[1])  # stable: first appearance among ties
    top = sum(weights) / (k + 1)
    return [Hit(doc_id, paths, score / top) for (doc_id, paths), score in order]


def fused_search(
    dense: Search,
    lexical: Callable[[int], Sequence[Hit]],
    *,
    pool: int = 256,
    # lexical_pool and weights: tuned on docs dev and wtq dev at b06b8b6; docs/tuned-constants.md
    lexical_pool: int = 64,
    k: float = DEFAULT_RRF_K,
    weights: tuple[float, float] = (1.0, 1.0),
    shared_ties: bool = False,
) -> Search:
    """A sentence :data:`~spire_core.values.Search` fusing ``dense`` (the passage ranking
    expanded to sentences, :func:`spire_core.query.passages.sentence_search`) with ``lexical``
    (``n -> the n best sentence hits``, e.g. :meth:`LexicalIndex.hits`) by :func:`rrf`.

    Both are asked once, for ``pool`` and ``lexical_pool`` hits (``pool`` is what
    aggregation's last round asks at most by default: 32 doubled three times), so every round
    reads a prefix of one fused ranking.
    """
    fused: list[Hit] = []
    asked = 0

    def run(n: int) -> list[Hit]:
        nonlocal fused, asked
        if n > asked:
            asked = max(n, pool)
            fused = rrf([dense(asked), lexical(lexical_pool)], k=k, weights=weights, shared_ties=[shared_ties, False])
        return fused[:n]

    return run
