"""Local contextualization (Section 2.4): grow a selection in place toward a target size.

Growth steps, each kept only if the rendered view (with global context) still fits:

1. complete the sentences the selection touches;
2. take the whole enclosing block (paragraph, list item, cell, ...);
3. add neighbouring sentences in document order, alternating after and before, until the
   next one on both sides would overflow.

The result always contains the selection and is deterministic. If the selection alone is
already over the target it is returned unchanged.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..document import INLINE_TAGS, SENTINELS
from ..errors import BudgetError
from ..paths import down_indices
from ..sentences import sentence_indices
from .policy import Policy

if TYPE_CHECKING:
    from ..document import Document, Path


def local_context(
    doc: Document,
    paths: Iterable[Path],
    *,
    target: int,
    size: Callable[[str], int],
    policy: Policy | None = None,
) -> frozenset[Path]:
    """``P`` grown in place toward ``target`` as measured by ``size`` on the rendering.

    The rendering measured is that of ``policy(P)`` (default: the HTML policy), which is
    what a reader or model is shown.
    """
    return doc.to_paths(local_context_indices(doc, doc.indices(paths), target=target, size=size, policy=policy))


def local_context_indices(
    doc: Document,
    seed: set[int],
    *,
    target: int,
    size: Callable[[str], int],
    policy: Policy | None = None,
) -> set[int]:
    from ..render import render_indices
    from . import HTML

    if target <= 0:
        raise BudgetError(f"target must be positive, not {target}")
    pol = HTML if policy is None else policy

    def fits(nodes: set[int]) -> bool:
        return size(render_indices(doc, pol.indices(doc, nodes))) <= target

    current = set(seed)
    if not current or not fits(current):
        return current
    units = _units(doc)
    begs = [u[0] for u in units]
    touched = sorted(_touched(doc, current, units, begs))
    for grow in (_complete(units, touched), _block(doc, current)):
        bigger = current | grow
        if bigger != current and fits(bigger):
            current = bigger
    if not touched:
        return current
    lo, hi = touched[0] - 1, touched[-1] + 1
    open_lo, open_hi = lo >= 0, hi < len(units)
    while open_lo or open_hi:
        for side in ("hi", "lo"):
            if side == "hi" and open_hi:
                bigger = current | units[hi][1]
                if fits(bigger):
                    current, hi = bigger, hi + 1
                    open_hi = hi < len(units)
                else:
                    open_hi = False
            elif side == "lo" and open_lo:
                bigger = current | units[lo][1]
                if fits(bigger):
                    current, lo = bigger, lo - 1
                    open_lo = lo >= 0
                else:
                    open_lo = False
    return current


def _units(doc: Document) -> list[tuple[int, frozenset[int]]]:
    """(first index, node indices) of each sentence; text nodes when the page has no sentinels."""
    units = doc.cache.get("local_units")
    if units is None:
        if doc.sentences:
            units = [(s.span[0], frozenset(sentence_indices(doc, *s.span))) for s in doc.sentences]
        else:
            units = [(i, frozenset([i])) for i, t in enumerate(doc.tag) if t is None and doc.text[i].strip()]
        doc.cache["local_units"] = units
    return units


def _touched(doc: Document, nodes: set[int], units: list[tuple[int, frozenset[int]]], begs: list[int]) -> set[int]:
    out: set[int] = set()
    for i in down_indices(doc, nodes):
        k = bisect_right(begs, i) - 1
        if k >= 0 and i in units[k][1]:
            out.add(k)
    return out


def _complete(units: list[tuple[int, frozenset[int]]], touched: list[int]) -> set[int]:
    return {i for k in touched for i in units[k][1]}


def _block(doc: Document, nodes: set[int]) -> set[int]:
    """The nearest enclosing block element of the selection's first node."""
    first = min(nodes)
    for anc in (first, *doc.ancestors(first)):
        tag = doc.tag[anc]
        if tag is not None and tag not in INLINE_TAGS and tag not in SENTINELS and anc != 0:
            return {anc}
    return set()
