"""The systems compared by the benchmark runner, and what they share.

Every system cuts each page into *units* (the text that is embedded, plus what a citation
of it shows), the runner ranks the units of a question's corpus pages by cosine
similarity to the question, and the system turns that ranking into a :class:`Prediction`
under a token budget counted with :func:`spire_core.size.approx_tokens` (the judge's own
count). SPIRE systems hand the ranking to :func:`spire_core.aggregate`; the baselines
(:mod:`benchmarks.baselines`) admit units greedily, in rank order, while they fit.
"""

from __future__ import annotations

import importlib.util
import json
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path as FsPath
from types import ModuleType
from typing import Any

import numpy as np

from spire_core import HTML, NONE, Citation, Document, Hit, Policy, Subdocument, aggregate, parse_html, seeds
from spire_core.context import global_context
from spire_core.decoding import decode
from spire_core.document import Path
from spire_core.render import render
from spire_core.size import approx_tokens

#: Every system, in table order.
SYSTEMS = ("spire", "spire-noctx", "spire-block", "spire-filter", "fixed-256", "html-header", "bge-block")


class ConfigError(Exception):
    """A system cannot run with the options given (e.g. ``spire-filter`` without an LLM)."""


@dataclass(frozen=True)
class Question:
    """One question line of a dataset."""

    id: str
    question: str
    #: the page ids (paths relative to the dataset folder) searched for this question
    corpus: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)


class Page:
    """One HTML page of a dataset, read and parsed at most once per process."""

    def __init__(self, root: FsPath, page_id: str) -> None:
        self.id = page_id
        self.file = root / page_id

    @cached_property
    def raw(self) -> bytes:
        return self.file.read_bytes()

    @cached_property
    def html(self) -> str:
        """The decoded text (BOM, ``<meta charset>``), as SPIRE's parser decodes it."""
        return decode(self.raw).text

    @cached_property
    def document(self) -> Document:
        return parse_html(self.raw, doc_id=self.id)


@dataclass(frozen=True)
class Unit:
    """One indexed unit: ``text`` is embedded, ``cite`` is what a citation of it shows."""

    doc: str
    text: str
    cite: str
    paths: frozenset[Path] = frozenset()

    @cached_property
    def cost(self) -> int:
        """``approx_tokens(cite)``: what citing this unit alone is charged."""
        return approx_tokens(self.cite)


@dataclass
class Prediction:
    """One prediction line: citations (doc, text, optional paths) and the delivered text."""

    id: str
    citations: list[dict[str, Any]]
    rendered: str

    def to_json(self) -> str:
        return json.dumps({"id": self.id, "citations": self.citations, "rendered": self.rendered}, ensure_ascii=False)


class Ranking:
    """The units of a question's corpus with their cosine similarities, best first (stable)."""

    def __init__(self, units: Sequence[Unit], scores: np.ndarray) -> None:
        self.units = units
        self.scores = scores
        self.order = np.argsort(-scores, kind="stable")

    def __len__(self) -> int:
        return len(self.units)

    def top(self, k: int) -> list[tuple[Unit, float]]:
        return [(self.units[i], float(self.scores[i])) for i in self.order[:k]]

    def __iter__(self) -> Iterator[tuple[Unit, float]]:
        for i in self.order:
            yield self.units[i], float(self.scores[i])


class System:
    """A retrieval system: units per page, and a prediction from a ranking under a budget."""

    name = "system"

    def units(self, page: Page) -> list[Unit]:
        raise NotImplementedError

    def select(self, question: Question, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> Prediction:
        raise NotImplementedError


def cite(doc: str, text: str, paths: frozenset[Path] | None = None) -> dict[str, Any]:
    """A citation in the bench prediction format."""
    out: dict[str, Any] = {"doc": doc, "text": text}
    if paths:
        out["paths"] = [list(p) for p in sorted(paths)]
    return out


class Spire(System):
    """Sentence (or block) seeds with global context, aggregated per page under the budget."""

    def __init__(self, name: str = "spire", *, policy: Policy = HTML, unit: str = "sentence") -> None:
        self.name = name
        self.policy = policy
        self.unit = unit

    def units(self, page: Page) -> list[Unit]:
        return [
            Unit(page.id, s.text, s.text, s.paths) for s in seeds(page.document, policy=self.policy, unit=self.unit)
        ]

    def aggregate(self, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> list[Subdocument]:
        def search(k: int) -> list[Hit]:
            return [Hit(u.doc, u.paths, score) for u, score in ranking.top(k)]

        return aggregate(
            search, documents=lambda pid: pages[pid].document, budget=budget, cost=approx_tokens, policy=self.policy
        )

    def select(self, question: Question, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> Prediction:
        results = self.aggregate(ranking, budget, pages)
        citations = [cite(c.doc_id, c.text, c.paths) for r in results for c in r.citations]
        return Prediction(question.id, citations, "\n\n".join(r.text for r in results))


class SpireFilter(Spire):
    """``spire`` followed by the LLM evidence filter (:func:`spire_core.evidence.select_evidence`)."""

    def __init__(self, llm: Callable[[str], str], *, target: int = 400) -> None:
        super().__init__("spire-filter")
        self.llm = llm
        self.target = target

    def select(self, question: Question, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> Prediction:
        from spire_core.evidence import select_evidence

        results = self.aggregate(ranking, budget, pages)
        documents = {r.doc_id: pages[r.doc_id].document for r in results}
        evidence = select_evidence(
            question.question,
            results,
            documents,
            self.llm,
            target=self.target,
            size=approx_tokens,
            policy=self.policy,
            on_error="keep",
        )
        return Prediction(
            question.id,
            [cite(c.doc_id, c.text, c.paths) for c in evidence.citations],
            self.deliver(evidence.citations, documents),
        )

    def deliver(self, citations: Sequence[Citation], documents: Mapping[str, Document]) -> str:
        """The selected citations merged per page: their union with its global context, rendered once."""
        merged: dict[str, set[Path]] = {}
        for c in citations:
            merged.setdefault(c.doc_id, set()).update(c.paths)
        parts = [render(documents[d], global_context(documents[d], paths, self.policy)) for d, paths in merged.items()]
        return "\n\n".join(parts)


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
    if name == "spire-noctx":
        return Spire(name, policy=NONE)
    if name == "spire-block":
        return Spire(name, unit="block")
    if name == "spire-filter":
        if llm is None:
            raise ConfigError("spire-filter needs an LLM: pass --llm-base-url (and --llm-model)")
        return SpireFilter(llm)
    from . import baselines

    if name == "fixed-256":
        return baselines.FixedChunks()
    if name == "html-header":
        return baselines.HeaderChunks()
    if name == "bge-block":
        return baselines.BlockTree()
    raise ConfigError(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")


def import_file(file: FsPath, name: str) -> ModuleType:
    """Import one Python source file as a module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
