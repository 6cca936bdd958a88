"""Numbered sources for an answer prompt: one merged view per page, citation markers inside it.

What an LLM is sent is what the budget paid for: each retrieved page once, as its merged
rendering (shared headings and labels once, the citations delivered as context included),
with ``[n]`` after the text of the ``n``-th strongest citation named as evidence (the
markers follow :func:`numbered`: ``[1]`` is the strongest, whatever its place in the page's
reading order). The markers and the ``Source:`` lines cost tokens too; when the whole no
longer fits ``budget``, the weakest citations are left out (their page re-rendered without
them), those delivered as context first, then the evidence from the last number: the
markers shown are always ``[1]`` to ``[m]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spire_core.context import HTML, Policy, global_context
from spire_core.document.render import render
from spire_core.options import DEFAULT_SIZE, Fmt
from spire_core.query.strength import ranked_evidence, ranked_evidence_of
from spire_core.results.schema import DOC_ID, citations_from, from_metadata
from spire_core.size import SizeFn
from spire_core.values import Citation, Documents, Subdocument, document_lookup


@dataclass(frozen=True)
class Sources:
    """The sources block of a prompt and the citations its markers stand for."""

    #: the text sent: per page a ``Source: doc_id`` line and its marked merged view
    text: str
    #: ``[n]`` is ``citations[n - 1]``
    citations: list[Citation]
    #: numbers of the citations that are in ``text`` (``1`` to ``m``)
    shown: frozenset[int]
    #: ``size(text)``
    cost: int


def numbered(results: Sequence[Subdocument]) -> list[Citation]:
    """The citations of ``results`` named as evidence, strongest first: the ``n``-th is marked ``[n]``."""
    return ranked_evidence(results)


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
    number = {id(c): n for n, c in enumerate(citations, start=1)}
    pages = [(sub.doc_id, list(sub.citations)) for sub in results]
    kept = {id(c) for _, cited in pages for c in cited}

    def view(doc_id: str, cited: list[Citation]) -> str:
        shown = [c for c in cited if id(c) in kept]
        if not shown:
            return ""
        doc = get(doc_id)
        seeds = frozenset(p for c in shown for p in c.paths)
        markers = {str(number[id(c)]): c.paths for c in shown if id(c) in number}
        body = render(doc, global_context(doc, seeds, policy), fmt=fmt, markers=markers)
        return f"Source: {doc_id}\n\n{body}"

    views = [view(doc_id, cited) for doc_id, cited in pages]
    text = _join(views)
    cost = size(text)
    # left out first: the context citations (weakest first), then the evidence from the last number
    context = sorted((c for _, cited in pages for c in cited if id(c) not in number), key=lambda c: c.score or 0.0)
    order = [*context, *reversed(citations)]
    while budget is not None and cost > budget and order:
        dropped = order.pop(0)
        kept.discard(id(dropped))
        page = next(i for i, (_, cited) in enumerate(pages) if any(c is dropped for c in cited))
        views[page] = view(*pages[page])
        text = _join(views)
        cost = size(text)
    shown = frozenset(number[i] for i in kept if i in number)
    return Sources(text, citations, shown, cost)


#: A retrieved result as a framework holds it: its page's id, its metadata and its text (a LlamaIndex
#: node, a LangChain document): what the adapters' ``numbered_citations`` and ``format_citations`` read.
Retrieved = tuple[str, Mapping[str, Any], str]


def numbered_retrieved(results: Sequence[Retrieved]) -> list[Citation]:
    """The citations of retrieved ``results`` named as evidence, strongest first: the ``n``-th is
    ``[n]`` in :func:`cite_retrieved`. A result without SPIRE citations counts as one citation of
    its page with an empty path set, after them."""
    cited = [citations_from(metadata) for _, metadata, _ in results]
    plain = [
        Citation(str(metadata.get(DOC_ID) or page), frozenset(), text)
        for (page, metadata, text), found in zip(results, cited, strict=True)
        if not found
    ]
    return [*ranked_evidence_of([c for found in cited for c in found]), *plain]


def cite_retrieved(
    results: Sequence[Retrieved], documents: Documents, *, budget: int, size: SizeFn, policy: Policy, fmt: Fmt
) -> Sources:
    """:func:`cite_sources` of retrieved SPIRE ``results`` (numbered as :func:`numbered_retrieved`).
    Raises ``ValueError`` naming the page of a result that is no SPIRE result."""
    subs = []
    for page, metadata, text in results:
        sub = from_metadata(metadata, text, size=size)
        if sub is None or not sub.citations:
            raise ValueError(f"the result of page {page!r} is not a SPIRE result: it has no citations")
        subs.append(sub)
    return cite_sources(subs, documents, budget=budget, size=size, policy=policy, fmt=fmt)


def _join(views: Sequence[str]) -> str:
    return "\n\n".join(v for v in views if v)
