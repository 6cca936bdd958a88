"""Fixtures of the LangChain adapter tests: one embedding model per session, small pages, the example index."""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from spire_langchain import SpireRetriever, default_embeddings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

EXAMPLE_PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"


class CachedEmbeddings(Embeddings):
    """Memoises another model's vectors, so several stores over the same texts embed them once."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.vectors: dict[str, list[float]] = {}
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            self.calls += 1
            self.vectors.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


class KeywordEmbeddings(Embeddings):
    """A tiny deterministic lexical model: hashed bag of lower-cased words, L2-normalised."""

    dims = 512

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * self.dims
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dims] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


@cache
def model_embeddings() -> CachedEmbeddings:
    """The packaged all-MiniLM-L6-v2, loaded once per test session."""
    return CachedEmbeddings(default_embeddings())


SMALL_PAGES: dict[str, str] = {
    "coffee.html": """<html><head><title>Brewing coffee</title></head><body>
<h1>Brewing coffee</h1><h2>Pour-over</h2>
<p>Use 60 grams of coffee per litre of water. Water should be between 90 and 96 degrees Celsius.</p>
<h2>Espresso</h2><p>An espresso shot takes about 25 to 30 seconds to extract.</p></body></html>""",
    "tea.html": """<html><head><title>Brewing tea</title></head><body>
<h1>Brewing tea</h1><ul><li>Green tea: steep for 2 minutes at 80 degrees.</li>
<li>Black tea: steep for 4 minutes in boiling water.</li></ul></body></html>""",
    "cocoa.html": """<html><head><title>Hot cocoa</title></head><body>
<h1>Hot cocoa</h1><p>Whisk cocoa powder into warm milk. Brewing is not needed for cocoa.</p></body></html>""",
    "bicycles.html": """<html><head><title>Bicycle maintenance</title></head><body>
<h1>Bicycle maintenance</h1><table><caption>Tyre pressure</caption>
<tr><th>Tyre</th><th>Pressure</th></tr><tr><td>Road</td><td>80 to 120 psi</td></tr>
<tr><td>Mountain</td><td>25 to 35 psi</td></tr></table></body></html>""",
}


def small_pages() -> list[Document]:
    return [Document(page_content=html, metadata={"source": name}) for name, html in SMALL_PAGES.items()]


def example_pages() -> list[Document]:
    return [
        Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.name, "title": p.stem})
        for p in sorted(EXAMPLE_PAGES.glob("*.html"))
    ]


@pytest.fixture(scope="session")
def embeddings() -> CachedEmbeddings:
    return model_embeddings()


@pytest.fixture
def keyword_embeddings() -> KeywordEmbeddings:
    return KeywordEmbeddings()


@pytest.fixture(scope="session")
def example_index(embeddings: CachedEmbeddings) -> SpireRetriever:
    """The three example pages indexed once (InMemoryVectorStore, real model)."""
    return SpireRetriever.from_documents(example_pages(), embeddings)


def texts(documents: Sequence[Document]) -> list[str]:
    return [d.page_content for d in documents]
