"""Numbered sources for an answer prompt: one merged view per page, citation markers inside it.

What an LLM is sent is what the budget paid for: each retrieved page once, as its merged
rendering (shared headings and labels once), with ``[n]`` after the text of the ``n``-th
citation (citations are numbered in result order, so ``[n]`` in an answer is the
``n``-th of :func:`numbered`). The markers and the ``Source:`` lines cost tokens too; when
the whole no longer fits ``budget``, the lowest-scored citations are left out (their page
re-rendered without them, its number kept free) until it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spire_core.context import HTML, Policy, global_context
from spire_core.document.render import render
from spire_core.options import DEFAULT_SIZE, Fmt
from spire_core.query.aggregate import Documents, Subdocument, document_lookup
from spire_core.query.citation import Citation
from spire_core.size import SizeFn


@dataclass(frozen=True)
class Sources:
    """The sources block of a prompt and the citations its markers stand for."""

    #: the text sent: per page a ``Source: doc_id`` line and its marked merged view
    text: str
    #: ``[n]`` is ``citations[n - 1]`` (left-out citations keep their number)
    citations: list[Citation]
    #: numbers of the citations that are in ``text``
    shown: frozenset[int]
    #: ``size(text)``
    cost: int


def numbered(results: Sequence[Subdocument]) -> list[Citation]:
    """The citations of ``results`` in order: the ``n``-th is marked ``[n]``."""
    return [c for sub in results for c in sub.citations]


def cite_sources(
    results: Sequence[Subdocument],
    documents: Documents,
    *,
    budget: int | None = None,
    size: SizeFn = DEFAULT_SIZE,
    policy: Policy = HTML,
    fmt: Fmt = "markdown",
) -> Sources:
    """One marked merged view per page of ``results`` (in order), fitted to ``budget`` when given."""
    get = document_lookup(documents)
    citations = numbered(results)
    pages: list[tuple[str, list[int]]] = []
    n = 0
    for sub in results:
        pages.append((sub.doc_id, list(range(n + 1, n + 1 + len(sub.citations)))))
        n += len(sub.citations)
    shown = {k for _, numbers in pages for k in numbers}

    def view(doc_id: str, numbers: list[int]) -> str:
        kept = [k for k in numbers if k in shown]
        if not kept:
            return ""
        doc = get(doc_id)
        seeds = frozenset(p for k in kept for p in citations[k - 1].paths)
        markers = {str(k): citations[k - 1].paths for k in kept}
        body = render(doc, global_context(doc, seeds, policy), fmt=fmt, markers=markers)
        return f"Source: {doc_id}\n\n{body}"

    views = [view(doc_id, numbers) for doc_id, numbers in pages]
    text = _join(views)
    cost = size(text)
    # left out first: the lowest score, then the latest number
    order = sorted(shown, key=lambda k: (citations[k - 1].score or 0.0, -k))
    while budget is not None and cost > budget and order:
        dropped = order.pop(0)
        shown.discard(dropped)
        page = next(i for i, (_, numbers) in enumerate(pages) if dropped in numbers)
        views[page] = view(*pages[page])
        text = _join(views)
        cost = size(text)
    return Sources(text, citations, frozenset(shown), cost)


def _join(views: Sequence[str]) -> str:
    return "\n\n".join(v for v in views if v)
