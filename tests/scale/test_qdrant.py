"""The official Qdrant integrations of both frameworks install beside SPIRE's pins and serve it (local mode)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.stores import InMemoryStore
from langchain_qdrant import QdrantVectorStore as LCQdrant
from llama_index.core import StorageContext
from llama_index.core.schema import Document
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import QdrantClient
from qdrant_client.models import Distance, VectorParams

from spire_langchain import SpireRetriever as LCRetriever
from spire_llamaindex import SpireRetriever, build_index
from spire_runtime.defaults import MODEL_DIM

from .conftest import Memo
from .test_postgres_langchain import MemoEmbeddings
from .test_postgres_llamaindex import MemoEmbedding

PAGE = """<html><head><title>Night trains</title></head><body><h1>Night trains</h1>
<h2>Departures</h2><p>The night train to Vienna leaves at 22:40 from platform 4.</p>
<h2>Tickets</h2><p>Sleeper tickets go on sale ninety days ahead.</p></body></html>"""
QUESTION = "When does the night train leave?"


def test_llamaindex_qdrant(memo: Memo) -> None:
    store = QdrantVectorStore(client=QdrantClient(location=":memory:"), collection_name="spire")
    index = build_index(
        [Document(id_="trains.html", text=PAGE)],
        embed_model=MemoEmbedding(memo=memo),
        storage_context=StorageContext.from_defaults(vector_store=store),
    )
    best = SpireRetriever(index, budget=100).retrieve_subdocuments(QUESTION)[0]
    assert best.doc_id == "trains.html" and "22:40" in best.text and "## Departures" in best.text


#: twelve sections, one passage each: more units than a small first round asks for
STATIONS = "".join(
    f"<h2>Station {n}</h2><p>The stop at station {n} lasts {n + 2} minutes. Its kiosk opens at {n}:00.</p>"
    for n in range(12)
)


def test_a_store_that_keeps_text_is_asked_for_the_first_round_then_the_widest(
    memo: Memo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a store that keeps text returns (and decodes) every node it is asked for: asking it for
    # the widest round up front made pgvector read 256 rows where most questions use a few
    store = QdrantVectorStore(client=QdrantClient(location=":memory:"), collection_name="spire")
    page = f"<html><head><title>Stops</title></head><body><h1>Stops</h1>{STATIONS}</body></html>"
    index = build_index(
        [Document(id_="stops.html", text=page)],
        embed_model=MemoEmbedding(memo=memo),
        storage_context=StorageContext.from_defaults(vector_store=store),
    )
    asked: list[int] = []
    query = QdrantVectorStore.query

    def counted(self: QdrantVectorStore, q: VectorStoreQuery, **kwargs: Any) -> Any:
        asked.append(q.similarity_top_k)
        return query(self, q, **kwargs)

    monkeypatch.setattr(QdrantVectorStore, "query", counted)
    question = "How long is the stop at station 7?"
    narrow = SpireRetriever(index, budget=25, first_k=2, max_rounds=3, lexical=False).retrieve_subdocuments(question)
    assert asked == [2] and "9 minutes" in narrow[0].text
    asked.clear()
    wide = dict(budget=5_000, first_k=2, max_rounds=3, lexical=False)
    mine = SpireRetriever(index, **wide).retrieve_subdocuments(question)
    assert asked == [2, 8]  # the second round wants more: the widest round's hits, once
    plain = SpireRetriever(index.as_retriever(similarity_top_k=8), index.docstore, **wide)
    theirs = plain.retrieve_subdocuments(question)
    assert [(s.doc_id, s.paths, s.text) for s in mine] == [(s.doc_id, s.paths, s.text) for s in theirs]


def test_langchain_qdrant(memo: Memo) -> None:
    client = QdrantClient(location=":memory:")
    client.create_collection("spire", vectors_config=VectorParams(size=MODEL_DIM, distance=Distance.COSINE))
    embeddings: Embeddings = MemoEmbeddings(memo)
    retriever = LCRetriever(
        vectorstore=LCQdrant(client=client, collection_name="spire", embedding=embeddings),
        docstore=InMemoryStore(),
        budget=100,
    )
    retriever.add_documents([LCDocument(id="trains.html", page_content=PAGE, metadata={"source": "trains.html"})])
    best = retriever.invoke(QUESTION)[0]
    assert best.metadata["source"] == "trains.html" and "22:40" in best.page_content
