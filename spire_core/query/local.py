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

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from spire_core.context import HTML, Policy
from spire_core.document.paths import down_indices
from spire_core.document.render import render_indices
from spire_core.errors import BudgetError
from spire_core.reading.sentences import SentenceIndex, enclosing_block, sentence_index

if TYPE_CHECKING:
    from spire_core.document.tree import Document, Path


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
    """:func:`local_context` on node indices (what the algorithms call)."""
    if target <= 0:
        raise BudgetError(f"target must be positive, not {target}")
    pol = HTML if policy is None else policy

    def fits(nodes: set[int]) -> bool:
        return size(render_indices(doc, pol.indices(doc, nodes))) <= target

    current = set(seed)
    if not current or not fits(current):
        return current
    units = sentence_index(doc)
    touched = sorted(_touched(doc, current, units))
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
                bigger = current | units.nodes[hi]
                if fits(bigger):
                    current, hi = bigger, hi + 1
                    open_hi = hi < len(units)
                else:
                    open_hi = False
            elif side == "lo" and open_lo:
                bigger = current | units.nodes[lo]
                if fits(bigger):
                    current, lo = bigger, lo - 1
                    open_lo = lo >= 0
                else:
                    open_lo = False
    return current


def _touched(doc: Document, nodes: set[int], units: SentenceIndex) -> set[int]:
    """Positions of the units holding a node of the selection."""
    held = (units.holding(i) for i in down_indices(doc, nodes))
    return {k for k in held if k is not None}


def _complete(units: SentenceIndex, touched: list[int]) -> set[int]:
    return {i for k in touched for i in units.nodes[k]}


def _block(doc: Document, nodes: set[int]) -> set[int]:
    """The nearest enclosing block element of the selection's first node."""
    block = enclosing_block(doc, min(nodes))
    return {block} if block >= 0 else set()
