"""Every entry point takes every query option by its ``QueryOptions`` name (issue 51).

For each field of :class:`spire_core.options.QueryOptions`, the LlamaIndex ``SpireRetriever``
(constructor and ``from_documents``), ``spire_llamaindex.Store.retriever``, the LangChain
``SpireRetriever`` (fields and ``from_documents``) and ``spire serve``'s
``QueryService.retriever`` accept it and pass it on to the options the query runs with. Two
names are the frameworks' own: ``max_pages`` is LangChain's ``k`` and LlamaIndex's
``search_kwargs["similarity_top_k"]``. A misspelt option raises ``TypeError`` before anything
is embedded. A new ``QueryOptions`` field fails here until every entry point takes it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from spire_core.context import NONE
from spire_core.options import QueryOptions

#: embedding calls, per fake model (each asserted 0 where an option is refused)
CALLS: Counter[str] = Counter()

PAGE = """<html><head><title>Brewing coffee</title></head><body><h1>Brewing coffee</h1>
<p>Use 60 grams of coffee per litre of water. Water should be between 90 and 96 degrees.</p></body></html>"""


def _vector(text: str, dims: int = 64) -> list[float]:
    v = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % dims] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


class CountingEmbedding(BaseEmbedding):
    """LlamaIndex: a hashed bag of words, counting its calls."""

    def _get_text_embedding(self, text: str) -> list[float]:
        CALLS["llamaindex"] += 1
        return _vector(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        CALLS["llamaindex"] += 1
        return _vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class CountingEmbeddings(Embeddings):
    """LangChain: a hashed bag of words, counting its calls."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        CALLS["langchain"] += 1
        return [_vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        CALLS["langchain"] += 1
        return _vector(text)


def _size(text: str) -> int:
    return len(text.split())


#: a value other than the default for each field (a new field needs one here)
VALUES: dict[str, Any] = {
    "budget": 777,
    "size": _size,
    "policy": NONE,
    "fmt": "text",
    "first_k": 5,
    "max_rounds": 2,
    "fill": 0.5,
    "tables": False,
    "max_pages": 3,
    "resolve_refs": True,
    "max_citations": 5,
    "min_score": 0.1,
    "relative_score": 0.2,
}
FIELDS = [f.name for f in dataclasses.fields(QueryOptions)]


def test_every_field_has_a_test_value() -> None:
    assert sorted(VALUES) == sorted(FIELDS)
    defaults = QueryOptions()
    assert all(getattr(defaults, name) != value for name, value in VALUES.items())
    QueryOptions(**VALUES)  # valid together


def _llamaindex(name: str, value: Any) -> dict[str, Any]:
    """``name=value`` as the LlamaIndex retriever takes it."""
    return {"search_kwargs": {"similarity_top_k": value}} if name == "max_pages" else {name: value}


def _langchain(name: str, value: Any) -> dict[str, Any]:
    """``name=value`` as the LangChain retriever takes it."""
    return {"k": value} if name == "max_pages" else {name: value}


@pytest.fixture(scope="module")
def llama_index() -> Any:
    from spire_llamaindex import SpireRetriever

    return SpireRetriever.from_documents([PAGE], embed_model=CountingEmbedding()).index


@pytest.fixture(scope="module")
def langchain_retriever() -> Any:
    from spire_langchain import SpireRetriever

    return SpireRetriever.from_documents([PAGE], CountingEmbeddings())


def _store(index: Any, tmp_path: Path) -> Any:
    from spire_app import Store
    from spire_llamaindex import SpireNodeParser

    return Store(path=tmp_path, index=index, parser=SpireNodeParser(), manifest={"documents": []})


def _entry_points(llama_index: Any, langchain_retriever: Any, tmp_path: Path) -> dict[str, Callable[..., Any]]:
    """Entry point -> ``(name, value) -> the retriever it makes with that option``."""
    import spire_langchain
    import spire_llamaindex
    from spire_app.serve import QueryService

    li = spire_llamaindex.SpireRetriever
    lc = spire_langchain.SpireRetriever
    lc_fields = {k: getattr(langchain_retriever, k) for k in ("vectorstore", "docstore", "transformer")}
    return {
        "llamaindex SpireRetriever": lambda n, v, **kw: li(llama_index, **_llamaindex(n, v), **kw),
        "llamaindex from_documents": lambda n, v, **kw: li.from_documents(
            [PAGE], embed_model=CountingEmbedding(), **_llamaindex(n, v), **kw
        ),
        "llamaindex Store.retriever": lambda n, v, **kw: _store(llama_index, tmp_path).retriever(
            **_llamaindex(n, v), **kw
        ),
        "langchain SpireRetriever": lambda n, v, **kw: lc(**lc_fields, **_langchain(n, v), **kw),
        "langchain from_documents": lambda n, v, **kw: lc.from_documents(
            [PAGE], CountingEmbeddings(), **_langchain(n, v), **kw
        ),
        "serve QueryService.retriever": lambda n, v: QueryService(_store(llama_index, tmp_path)).retriever(**{n: v}),
    }


ENTRY_POINTS = [
    "llamaindex SpireRetriever",
    "llamaindex from_documents",
    "llamaindex Store.retriever",
    "langchain SpireRetriever",
    "langchain from_documents",
    "serve QueryService.retriever",
]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("name", FIELDS)
def test_entry_point_takes_every_query_option(
    entry: str, name: str, llama_index: Any, langchain_retriever: Any, tmp_path: Path
) -> None:
    make = _entry_points(llama_index, langchain_retriever, tmp_path)[entry]
    retriever = make(name, VALUES[name])
    assert getattr(retriever.options, name) == VALUES[name]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_misspelt_option_fails_before_any_embedding(
    entry: str, llama_index: Any, langchain_retriever: Any, tmp_path: Path
) -> None:
    make = _entry_points(llama_index, langchain_retriever, tmp_path)[entry]
    CALLS.clear()
    with pytest.raises(TypeError, match="budgt"):
        make("budgt", 500)
    assert sum(CALLS.values()) == 0


@pytest.mark.parametrize("entry", [e for e in ENTRY_POINTS if not e.startswith("serve")])
def test_entry_point_takes_an_options_object_and_keyword_overrides(
    entry: str, llama_index: Any, langchain_retriever: Any, tmp_path: Path
) -> None:
    """``options=QueryOptions(...)`` is the base and a keyword option overrides its field; every
    other field keeps the object's value, None included (serve takes a request's overrides only)."""
    make = _entry_points(llama_index, langchain_retriever, tmp_path)[entry]
    base = QueryOptions(budget=777, fmt="text", max_citations=None, max_pages=3, policy=NONE)
    retriever = make("first_k", 5, options=base)
    assert retriever.options == dataclasses.replace(base, first_k=5)
