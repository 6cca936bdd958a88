"""The sentence search of SpireRetriever: one vector query per retrieval, nodes fetched as rounds need them
(a round reads the passages whose members it uses, not one passage per sentence it asks for)."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import VectorStoreQuery

from spire_app import Store
from spire_core import pipeline
from spire_llamaindex import SpireRetriever
from spire_llamaindex._search import NodeCache
from spire_llamaindex.array_store import ArrayVectorStore
from spire_llamaindex.retriever import result_node

from .conftest import QUESTION

#: a budget no few hits fill, so the prefix grows for every round
#: the vector search alone (the lexical side asks the store for its whole fusion pool at once)
WIDE: dict[str, Any] = dict(budget=20_000, first_k=4, max_rounds=4, lexical=False)


class Counts:
    def __init__(self) -> None:
        self.queries: list[int] = []
        self.fetched: list[str] = []
        self.prefixes: list[int] = []  # the ranks a round's passages were read from


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    seen = Counts()
    query, get_nodes, convert = ArrayVectorStore.query, SimpleDocumentStore.get_nodes, pipeline._Try.convert

    def counted_query(self: ArrayVectorStore, q: VectorStoreQuery, **kwargs: Any) -> Any:
        seen.queries.append(q.similarity_top_k)
        return query(self, q, **kwargs)

    def counted_get_nodes(self: SimpleDocumentStore, node_ids: list[str], raise_error: bool = True) -> Any:
        seen.fetched.extend(node_ids)
        return get_nodes(self, node_ids, raise_error=raise_error)

    def counted_convert(self: Any, entries: Any) -> Any:
        seen.prefixes.append(len(entries))
        return convert(self, entries)

    monkeypatch.setattr(ArrayVectorStore, "query", counted_query)
    monkeypatch.setattr(SimpleDocumentStore, "get_nodes", counted_get_nodes)
    monkeypatch.setattr(pipeline._Try, "convert", counted_convert)
    return seen


def test_one_vector_query_per_retrieval_and_each_rounds_nodes_fetched_once(example: Store, counts: Counts) -> None:
    results = example.retriever(**WIDE).retrieve_subdocuments(QUESTION)
    assert results
    assert counts.queries == [32]  # one query, for the widest round (the budget is never filled)
    assert counts.prefixes == sorted(counts.prefixes) and max(counts.prefixes) <= 32
    assert len(counts.fetched) == len(set(counts.fetched)) == max(counts.prefixes)  # each rank's node once


def test_rounds_read_only_the_passages_they_use(example: Store, counts: Counts) -> None:
    example.retriever(**WIDE).retrieve_subdocuments(QUESTION)
    wide = len(counts.fetched)
    assert wide < 32  # 32 sentence hits, from fewer passages: their members are sentences
    counts.fetched.clear()
    example.retriever(budget=60, first_k=4, max_rounds=4, lexical=False).retrieve_subdocuments(QUESTION)
    assert counts.queries == [32, 32]
    assert len(counts.fetched) <= 4 < wide  # a budget filled early reads the first round's passages at most


def test_the_widest_query_sliced_gives_what_one_ranked_list_gives(example: Store) -> None:
    mine = example.retriever(**WIDE).retrieve_subdocuments(QUESTION)
    plain = SpireRetriever(example.index.as_retriever(similarity_top_k=32), example.index.docstore, **WIDE)
    theirs = plain.retrieve_subdocuments(QUESTION)
    assert [(s.doc_id, s.paths, s.text, s.score) for s in mine] == [
        (s.doc_id, s.paths, s.text, s.score) for s in theirs
    ]


async def test_async_search_queries_once_too(example: Store, counts: Counts) -> None:
    retriever = example.retriever(**WIDE)
    sync = retriever.retrieve_subdocuments(QUESTION)
    counts.queries.clear()
    asynchronous = await retriever.aretrieve_subdocuments(QUESTION)
    assert counts.queries == [32]
    assert [(s.doc_id, s.paths, s.text) for s in sync] == [(s.doc_id, s.paths, s.text) for s in asynchronous]


class CountingDocstore(SimpleDocumentStore):
    reads: int = 0

    def get_document(self, doc_id: str, raise_error: bool = True) -> Any:
        self.reads += 1
        return super().get_document(doc_id, raise_error=raise_error)

    def get_document_hash(self, doc_id: str) -> str | None:
        self.reads += 1
        return super().get_document_hash(doc_id)


def test_result_nodes_take_their_source_from_the_parse_served(example: Store) -> None:
    docstore = CountingDocstore()
    docstore.add_documents(list(example.index.docstore.docs.values()))
    retriever = SpireRetriever(example.index, docstore, budget=600)
    first = retriever.retrieve(QUESTION)  # parses its pages (reading them and their hashes)
    docstore.reads = 0
    again = retriever.retrieve(QUESTION)
    assert docstore.reads == 0  # neither the hits nor the result nodes went back to the docstore
    assert [n.node.node_id for n in again] == [n.node.node_id for n in first]
    for n, sub in zip(again, retriever.retrieve_subdocuments(QUESTION), strict=True):
        stored = docstore.docs[sub.doc_id]
        expected = result_node(sub, stored, source_hash=stored.hash).node  # built from the stored node itself
        assert n.node.source_node is not None and n.node.source_node.hash == stored.hash
        assert n.node.metadata == expected.metadata and n.node.source_node.node_type == stored.get_type()
        assert n.node.excluded_llm_metadata_keys == expected.excluded_llm_metadata_keys


@pytest.mark.parametrize("run", ["sync", "async"])
async def test_a_fetch_that_a_delete_races_is_tried_again(
    example: Store, monkeypatch: pytest.MonkeyPatch, run: str
) -> None:
    """LlamaIndex's SimpleKVStore tests for a key, then reads it: a node deleted between the two
    raises KeyError from the fetch. The query runs again, as for a node found missing."""
    retriever = example.retriever(**WIDE)
    expected = [(s.doc_id, s.paths, s.text) for s in retriever.retrieve_subdocuments(QUESTION)]
    retriever.node_cache = NodeCache()  # cold: the query reads its nodes from the docstore
    get_nodes = SimpleDocumentStore.get_nodes
    raced: list[int] = []

    def racing(self: SimpleDocumentStore, node_ids: list[str], raise_error: bool = True) -> Any:
        if not raced:
            raced.append(len(node_ids))
            raise KeyError(node_ids[0])
        return get_nodes(self, node_ids, raise_error=raise_error)

    async def aracing(self: SimpleDocumentStore, node_ids: list[str], raise_error: bool = True) -> Any:
        return racing(self, node_ids, raise_error)

    monkeypatch.setattr(SimpleDocumentStore, "get_nodes", racing)
    monkeypatch.setattr(SimpleDocumentStore, "aget_nodes", aracing)
    if run == "sync":
        results = retriever.retrieve_subdocuments(QUESTION)
    else:
        results = await retriever.aretrieve_subdocuments(QUESTION)
    assert raced and [(s.doc_id, s.paths, s.text) for s in results] == expected


def test_an_hnsw_store_scans_as_wide_as_the_query_asks() -> None:
    """pgvector's HNSW scan returns at most ``hnsw.ef_search`` rows: a query with ``first_k=64`` widens it."""
    from types import SimpleNamespace

    from llama_index.core.storage.docstore import SimpleDocumentStore

    from spire_core.options import widest

    retriever = SpireRetriever(lambda k: None, SimpleDocumentStore(), first_k=64)  # type: ignore[arg-type,return-value]
    retriever.index = SimpleNamespace(vector_store=SimpleNamespace(hnsw_kwargs={"hnsw_ef_search": widest()}))  # type: ignore[assignment]
    assert retriever._index_kwargs(retriever.options.widest) == {"vector_store_kwargs": {"hnsw_ef_search": 512}}
    assert SpireRetriever(lambda k: None, SimpleDocumentStore())._index_kwargs(256) == {}  # type: ignore[arg-type,return-value]


def test_the_node_cache_serves_a_node_only_while_the_docstore_holds_it(example: Store) -> None:
    """Unit nodes are kept between questions, and read again once the docstore's node, or its page, changed."""
    index = example.index
    docstore = index.docstore
    retriever = example.retriever(**WIDE)
    expected = [(s.doc_id, s.paths, s.text, s.score) for s in retriever.retrieve_subdocuments(QUESTION)]
    ids = list(index.index_struct.nodes_dict.values())[:3]
    cache = retriever.node_cache
    held, wanted = cache.split(docstore, ids)
    cache.keep(docstore.get_nodes(wanted))
    held, wanted = cache.split(docstore, ids)
    assert [n.node_id for n in held] == ids and wanted == []
    assert all(n.get_content() == "" for n in held)  # kept without their text
    assert [(s.doc_id, s.paths, s.text, s.score) for s in retriever.retrieve_subdocuments(QUESTION)] == expected
    node = docstore.get_node(ids[0])
    changed = node.model_copy(update={"metadata": {**node.metadata, "note": "edited"}})
    docstore.add_documents([changed])  # the node replaced: its hash changes
    page = node.source_node
    assert page is not None
    page_hash = docstore.get_document_hash(page.node_id)
    try:
        _, wanted = cache.split(docstore, ids)
        assert wanted == ids[:1]
        docstore.add_documents([node])
        assert cache.split(docstore, ids)[1] == []
        docstore.set_document_hash(page.node_id, "another version")  # its page replaced
        assert ids[0] in cache.split(docstore, ids)[1]
    finally:
        docstore.add_documents([node])
        docstore.set_document_hash(page.node_id, page_hash)
