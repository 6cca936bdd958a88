"""The systems compared by the benchmark runner (the shared types are :mod:`benchmarks.common`).

SPIRE systems hand a question's ranking to the core query pipeline
(:func:`spire_core.pipeline.run_query`); the baselines (:mod:`benchmarks.baselines`) admit
units greedily, in rank order, while they fit.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spire_core import HTML, NONE, Document, MissingSourceError, Policy, Subdocument, approx_tokens, compose, seeds
from spire_core.context import DEFINITIONS
from spire_core.options import DEFAULT_TARGET, DEFAULT_UNIT, QueryOptions
from spire_core.options import Unit as UnitKind
from spire_core.pipeline import filter_results, run_query
from spire_core.query.lexical import LexicalIndex
from spire_core.query.passages import PassageHit
from spire_core.query.strength import ranked_evidence

from . import baselines
from .common import Page, Prediction, Question, Ranking, System, Unit, cite, import_file

__all__ = [
    "SYSTEMS",
    "ConfigError",
    "Page",
    "Prediction",
    "Question",
    "Ranking",
    "Spire",
    "SpireFilter",
    "System",
    "Unit",
    "cite",
    "import_file",
    "make_system",
    "openai_chat",
]

#: Every system, in table order.
SYSTEMS = (
    "spire",
    "spire-dense",
    "spire-sentence",
    "spire-noctx",
    "spire-block",
    "spire-definitions",
    "spire-refs",
    "spire-filter",
    "fixed-256",
    "fused-256",
    "html-header",
    "bge-block",
)


class ConfigError(Exception):
    """A system cannot run with the options given (e.g. ``spire-filter`` without an LLM)."""


class Spire(System):
    """Passage (or sentence, or block) seeds with global context, aggregated per page under the budget.

    A passage hit counts as its member sentences, the ones sharing most words with the
    question first (:func:`spire_core.query.passages.expand`): citations stay sentences.
    """

    def __init__(
        self,
        name: str = "spire",
        *,
        policy: Policy = HTML,
        unit: UnitKind = DEFAULT_UNIT,
        tables: bool = True,
        lexical: bool = True,
        resolve_refs: bool = False,
    ) -> None:
        self.name = name
        self.policy = policy
        self.unit = unit
        #: follow cited sentences' references one hop into the question's corpus (``QueryOptions.resolve_refs``)
        self.resolve_refs = resolve_refs
        #: deliver views of the best-ranked tables (:func:`spire_core.query.table_views.table_views`)
        self.tables = tables
        #: fuse a BM25 index over every sentence of the dataset's pages (built at the first question)
        self.lexical = lexical
        self.index: LexicalIndex | None = None
        #: the citation cut's options (``QueryOptions.max_citations`` ...), the defaults when empty
        self.cut: dict[str, Any] = {}

    def lexical_index(self, pages: Mapping[str, Page]) -> LexicalIndex:
        """The lexical index of every sentence of ``pages``, built once (its cost logged to stderr)."""
        if self.index is None:
            start = time.perf_counter()
            self.index = LexicalIndex()
            for page in pages.values():
                self.index.add_document(page.document)
            print(
                f"{self.name}: lexical index of {len(self.index)} sentences, {time.perf_counter() - start:.1f}s",
                file=sys.stderr,
                flush=True,
            )
        return self.index

    def units(self, page: Page) -> list[Unit]:
        return [
            Unit(page.id, s.text, s.text, s.paths, s.members)
            for s in seeds(page.document, policy=self.policy, unit=self.unit)
        ]

    def aggregate(
        self,
        ranking: Ranking,
        budget: int,
        pages: Mapping[str, Page],
        query: str,
        corpus: Sequence[str] | None = None,
    ) -> list[Subdocument]:
        """The results of ``query`` over ``ranking``; ``corpus`` (default: the ranked units' pages) is
        what a followed reference may reach: a page outside it is reported missing."""

        def passages(n: int) -> list[PassageHit]:
            return [PassageHit(u.doc, u.members or (u.paths,), score) for u, score in ranking.top(n)]

        options = QueryOptions(
            budget=budget,
            size=approx_tokens,
            policy=self.policy,
            tables=self.tables,
            resolve_refs=self.resolve_refs,
            **self.cut,
        )
        reach = set(corpus if corpus is not None else (u.doc for u in ranking.units))

        def document(pid: str) -> Document:
            if pid not in reach or pid not in pages:
                raise MissingSourceError("not in the question's corpus", doc_id=pid)
            return pages[pid].document

        lexical = None
        if self.lexical:
            index, ranked = self.lexical_index(pages), list(dict.fromkeys(u.doc for u in ranking.units))
            lexical = lambda q, n: index.hits(q, n, doc_ids=ranked)  # noqa: E731 (the question's pages only)
        return run_query(query, passages, document, options, lexical)

    def select(self, question: Question, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> Prediction:
        results = self.aggregate(ranking, budget, pages, question.question, question.corpus)
        citations = [cite(c.doc_id, c.text, c.paths) for c in ranked_evidence(results)]
        return Prediction(question.id, citations, "\n\n".join(r.text for r in results))


class SpireFilter(Spire):
    """``spire`` followed by the LLM evidence filter (:func:`spire_core.pipeline.filter_results`)."""

    def __init__(self, llm: Callable[[str], str], *, target: int = DEFAULT_TARGET) -> None:
        super().__init__("spire-filter")
        self.llm = llm
        self.target = target

    def select(self, question: Question, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> Prediction:
        results = self.aggregate(ranking, budget, pages, question.question, question.corpus)
        documents = {r.doc_id: pages[r.doc_id].document for r in results}
        options = QueryOptions(budget=budget, size=approx_tokens, policy=self.policy)
        filtered = filter_results(question.question, results, documents, self.llm, options=options, target=self.target)
        delivered = results if filtered.kept is None else list(filtered.kept.values())
        return Prediction(
            question.id,
            [cite(c.doc_id, c.text, c.paths) for c in filtered.evidence.citations],
            "\n\n".join(sub.text for sub in delivered),
        )


def openai_chat(
    base_url: str, model: str, *, api_key: str | None = None, timeout: float = 120.0
) -> Callable[[str], str]:
    """A ``prompt -> completion`` callable for an OpenAI-compatible ``/chat/completions`` endpoint (temperature 0)."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key or 'EMPTY'}"}

    def call(prompt: str) -> str:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0}
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.load(response)
        return str(data["choices"][0]["message"].get("content") or "")

    return call


def make_system(name: str, *, llm: Callable[[str], str] | None = None) -> System:
    """The system called ``name`` (one of :data:`SYSTEMS`)."""
    if name == "spire":
        return Spire()
    if name == "spire-dense":
        return Spire(name, lexical=False)
    if name == "spire-sentence":
        return Spire(name, unit="sentence", lexical=False)
    if name == "spire-noctx":
        return Spire(name, policy=NONE, unit="sentence", lexical=False)
    if name == "spire-block":
        return Spire(name, unit="block", lexical=False)
    if name == "spire-definitions":  # the glossary-aware policy added to the default
        return Spire(name, policy=compose(HTML, DEFINITIONS))
    if name == "spire-refs":  # references followed one hop, under the same budget
        return Spire(name, resolve_refs=True)
    if name == "spire-filter":
        if llm is None:
            raise ConfigError("spire-filter needs an LLM: pass --llm-base-url (and --llm-model)")
        return SpireFilter(llm)
    if name == "fixed-256":
        return baselines.FixedChunks()
    if name == "fused-256":  # the same chunks, BM25 and vector rankings fused (reciprocal rank fusion)
        return baselines.FusedChunks()
    if name == "html-header":
        return baselines.HeaderChunks()
    if name == "bge-block":
        return baselines.BlockTree()
    raise ConfigError(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")
