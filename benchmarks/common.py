"""What every benchmark system shares: questions, pages, units, rankings, predictions.

Every system cuts each page into *units* (the text that is embedded, plus what a citation
of it shows), the runner ranks the units of a question's corpus pages by cosine
similarity to the question, and the system turns that ranking into a :class:`Prediction`
under a token budget counted with :func:`spire_core.approx_tokens` (the judge's own count).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path as FsPath
from types import ModuleType
from typing import Any

import numpy as np

from spire_core import Document, Path, approx_tokens, declared_kind, markdown_to_html, parse_page, text_to_html
from spire_core.reading.decoding import decode
from spire_core.reading.parse import PageKind, page_kind


@dataclass(frozen=True)
class Question:
    """One question line of a dataset."""

    id: str
    question: str
    #: the page ids (paths relative to the dataset folder) searched for this question
    corpus: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)


class Page:
    """One page of a dataset (HTML or Markdown), read and parsed at most once per process.

    It is parsed the way the adapters parse a source page (:func:`spire_core.parse_page`):
    what the page is comes from its text, so ``.md`` / ``.markdown`` pages are read as
    Markdown and HTML pages exactly as :func:`spire_core.parse_html` reads them.
    """

    def __init__(self, root: FsPath, page_id: str) -> None:
        self.id = page_id
        self.file = root / page_id

    @cached_property
    def raw(self) -> bytes:
        return self.file.read_bytes()

    @cached_property
    def text(self) -> str:
        """The decoded text (BOM, ``<meta charset>``), as SPIRE's parser decodes it."""
        return decode(self.raw).text

    @cached_property
    def kind(self) -> PageKind:
        """What :func:`spire_core.parse_page` reads the page as: ``html``, ``markdown`` or ``text``."""
        return page_kind(self.text)

    @cached_property
    def html(self) -> str:
        """The page as HTML (what the HTML baselines cut): a Markdown page's CommonMark rendering
        (:func:`spire_core.markdown_to_html`, the HTML SPIRE parses it as), plain text as paragraphs."""
        if self.kind == "markdown":
            return markdown_to_html(self.text)
        if self.kind == "text":
            return text_to_html(self.text)
        return self.text

    @cached_property
    def document(self) -> Document:
        return parse_page(self.raw, doc_id=self.id, declared=declared_kind(file_name=self.id))


@dataclass(frozen=True)
class Unit:
    """One indexed unit: ``text`` is embedded, ``cite`` is what a citation of it shows."""

    doc: str
    text: str
    cite: str
    paths: frozenset[Path] = frozenset()
    #: the sentence path sets a hit on this unit cites (a passage's members)
    members: tuple[frozenset[Path], ...] = ()

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


def import_file(file: FsPath, name: str) -> ModuleType:
    """Import one Python source file as a module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
