"""``search_kwargs`` reach the vector store query that SpireRetriever builds from LlamaIndex's public types
(``VectorStoreQuery`` sent to ``index.vector_store.query``): what ``VectorIndexRetriever`` would send."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from spire_llamaindex import SpireRetriever
from spire_llamaindex.compat import index_embed_model

PAGE = """<html><head><title>Limits</title></head><body><h1>Limits</h1><h2>Checkpoints</h2>
<p>The valid range of {name} is between 30 seconds and one day.</p>
<h2>Sizes</h2><p>A row can hold 1.6 TB.</p></body></html>"""
QUESTION = "valid range of checkpoint_timeout"


class WordEmbedding(BaseEmbedding):
    """A hashed bag of words (deterministic, no model) that counts the questions it embeds."""

    questions: int = 0

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * 128
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % 128] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def _get_query_embedding(self, query: str) -> list[float]:
        self.questions += 1
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


@pytest.fixture
def retriever() -> SpireRetriever:
    """Two pages alike but for the setting they name; the vector search alone (no lexical side)."""
    pages = [
        Document(text=PAGE.format(name="checkpoint_timeout"), id_="db.html"),
        Document(text=PAGE.format(name="flush_interval"), id_="mq.html"),
    ]
    return SpireRetriever.from_documents(pages, embed_model=WordEmbedding(model_name="words"), lexical=False)


@pytest.fixture
def queries(
    retriever: SpireRetriever, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[VectorStoreQuery, dict[str, Any]]]:
    """The queries the retriever's vector store is sent, with their keyword arguments (its ``aquery``
    is LlamaIndex's, which calls ``query``)."""
    sent: list[tuple[VectorStoreQuery, dict[str, Any]]] = []
    store = type(retriever.index.vector_store)  # type: ignore[union-attr]
    assert "aquery" not in vars(store)
    query = store.query

    def spy(self: Any, q: VectorStoreQuery, **kwargs: Any) -> Any:
        sent.append((q, kwargs))
        return query(self, q, **kwargs)

    monkeypatch.setattr(store, "query", spy)
    return sent


def _pages(found: list[Any]) -> set[str]:
    return {sub.doc_id for sub in found}


def test_node_ids_restrict_the_search(
    retriever: SpireRetriever, queries: list[tuple[VectorStoreQuery, dict[str, Any]]]
) -> None:
    best = retriever.retrieve_subdocuments(QUESTION)[0]
    assert best.doc_id == "db.html" and "checkpoint_timeout is between 30 seconds and one day" in best.text
    index = retriever.index
    assert isinstance(index, VectorStoreIndex)
    mq = sorted(
        vector_id
        for vector_id, node_id in index.index_struct.nodes_dict.items()
        if index.docstore.get_node(node_id).metadata.get("spire_doc_id") == "mq.html"
    )
    restricted = SpireRetriever(index, search_kwargs={"node_ids": mq}, lexical=False)
    found = restricted.retrieve_subdocuments(QUESTION)
    assert _pages(found) == {"mq.html"} and "flush_interval is between 30 seconds and one day" in found[0].text
    assert queries[-1][0].node_ids == mq


def test_the_query_mode_and_store_kwargs_reach_the_store(
    retriever: SpireRetriever, queries: list[tuple[VectorStoreQuery, dict[str, Any]]]
) -> None:
    mmr = SpireRetriever(
        retriever.index,
        search_kwargs={"vector_store_query_mode": "mmr", "vector_store_kwargs": {"mmr_threshold": 0.5}},
        lexical=False,
    )
    best = mmr.retrieve_subdocuments(QUESTION)[0]
    assert best.doc_id == "db.html" and "checkpoint_timeout is between 30 seconds and one day" in best.text
    [(query, kwargs)] = queries  # one query for every round
    assert query.mode == VectorStoreQueryMode.MMR and kwargs == {"mmr_threshold": 0.5}
    assert query.query_str == QUESTION and query.query_embedding is not None


async def test_the_question_is_embedded_once_by_the_search_kwargs_model(
    retriever: SpireRetriever, queries: list[tuple[VectorStoreQuery, dict[str, Any]]]
) -> None:
    """``embed_model`` in ``search_kwargs`` embeds the question (as ``VectorIndexRetriever``'s does),
    once per question, sync or async; else the index's model does."""
    index = retriever.index
    assert isinstance(index, VectorStoreIndex)
    index_model = index_embed_model(index)
    assert isinstance(index_model, WordEmbedding)
    wide: dict[str, Any] = dict(budget=20_000, first_k=2, max_rounds=3, lexical=False)  # several rounds
    SpireRetriever(index, **wide).retrieve_subdocuments(QUESTION)
    assert index_model.questions == 1
    own = WordEmbedding(model_name="words")
    chosen = SpireRetriever(index, search_kwargs={"embed_model": own}, **wide)
    found = chosen.retrieve_subdocuments(QUESTION)
    assert "checkpoint_timeout is between 30 seconds and one day" in found[0].text
    assert own.questions == 1
    found = await chosen.aretrieve_subdocuments(QUESTION)
    assert "checkpoint_timeout is between 30 seconds and one day" in found[0].text
    assert own.questions == 2 and index_model.questions == 1 and len(queries) == 3


def test_a_misspelt_search_kwarg_fails_before_any_question(retriever: SpireRetriever) -> None:
    with pytest.raises(TypeError, match=r"'filter'.*filters"):  # LangChain's name for it
        SpireRetriever(retriever.index, search_kwargs={"filter": {"product": "db"}})
