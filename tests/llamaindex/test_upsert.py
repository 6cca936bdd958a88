"""Re-indexing a changed page replaces its nodes: through update_index and through IngestionPipeline upserts."""

from __future__ import annotations

import dataclasses
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.schema import BaseNode, Document
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult

from spire_llamaindex import SpireNodeParser, SpireRetriever, build_index, citations_of, update_index

from .conftest import texts

QUERY = "What is the upload limit?"


def page(limit: str) -> Document:
    return Document(
        id_="limits.html",
        text=f"""<html><head><title>Service limits</title></head><body><h1>Service limits</h1>
        <h2>Uploads</h2><p>The upload limit is {limit} megabytes per file. Larger files are rejected.</p>
        <h2>Requests</h2><p>Requests time out after ninety seconds.</p></body></html>""",
    )


OTHER = Document(
    id_="colours.html",
    text="<html><body><h1>Colours</h1><p>The logo is teal. The background is white.</p></body></html>",
)


class TextVectorStore(SimpleVectorStore):
    """SimpleVectorStore that keeps and returns the nodes, as Chroma, Qdrant or pgvector do."""

    stores_text: bool = True
    _nodes: dict[str, BaseNode] = PrivateAttr(default_factory=dict)

    def add(self, nodes: Any, **kwargs: Any) -> list[str]:
        self._nodes.update({n.node_id: n for n in nodes})
        return super().add(nodes, **kwargs)

    def delete(self, ref_doc_id: str, **kwargs: Any) -> None:
        super().delete(ref_doc_id, **kwargs)
        self._nodes = {k: n for k, n in self._nodes.items() if n.ref_doc_id != ref_doc_id}

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        # an index opened with from_vector_store lists no node ids of its own: search them all
        result = super().query(dataclasses.replace(query, node_ids=None), **kwargs)
        result.nodes = [self._nodes[i] for i in result.ids or []]
        return result


def test_update_index_replaces_a_changed_page(embed_model: BaseEmbedding) -> None:
    index = build_index([page("forty"), OTHER], embed_model=embed_model)
    retriever = SpireRetriever(index, budget=300)
    before = retriever.retrieve(QUERY)
    assert "forty megabytes" in texts(before)
    count = len(index.index_struct.nodes_dict)
    ids = set(index.index_struct.nodes_dict.values())

    report = update_index(index, [page("seventy"), OTHER])
    assert (report.updated, report.unchanged, report.added) == (["limits.html"], ["colours.html"], [])
    assert len(index.index_struct.nodes_dict) == count == len(index.vector_store.to_dict()["embedding_dict"])
    assert set(index.index_struct.nodes_dict.values()) == ids  # same structure: same deterministic ids
    stored = [n.get_content() for n in index.docstore.docs.values()]
    assert not any("forty" in t for t in stored) and any("seventy megabytes" in t for t in stored)

    after = retriever.retrieve(QUERY)  # the same retriever: its parsed-page cache follows the docstore
    assert "seventy megabytes" in texts(after) and "forty" not in texts(after)
    assert any("seventy megabytes" in c.text for n in after for c in citations_of(n))
    assert update_index(index, [page("seventy"), OTHER]).unchanged == ["limits.html", "colours.html"]


def test_ingestion_pipeline_upserts(embed_model: BaseEmbedding) -> None:
    store = TextVectorStore()
    pipeline = IngestionPipeline(
        transformations=[SpireNodeParser(), embed_model],
        docstore=SimpleDocumentStore(),
        vector_store=store,
        docstore_strategy=DocstoreStrategy.UPSERTS,
    )
    first = pipeline.run(documents=[page("forty"), OTHER])
    count = len(store._nodes)
    assert count == len(first) > 3

    second = pipeline.run(documents=[page("seventy"), OTHER])
    assert {n.ref_doc_id for n in second} == {"limits.html"}  # the unchanged page is skipped
    assert len(store._nodes) == count
    assert not any("forty" in n.get_content() for n in store._nodes.values())

    index = VectorStoreIndex.from_vector_store(store, embed_model=embed_model)
    assert pipeline.docstore is not None
    nodes = SpireRetriever(index, pipeline.docstore, budget=300).retrieve(QUERY)
    assert "seventy megabytes" in texts(nodes) and "forty" not in texts(nodes)


def test_a_page_that_fails_to_parse_is_reported_once(embed_model: BaseEmbedding, caplog: Any) -> None:
    """update_index(errors="skip") reports the page in its result; the parser does not log it again."""
    index = build_index([], embed_model=embed_model)
    good = Document(text="<p>The pool opens at nine.</p>", id_="good.html")
    binary = Document(text="%PDF-1.7\n\x00\x01\x02\x03 obj stream \x00\x00", id_="report.pdf.html")
    with caplog.at_level("DEBUG"):
        report = update_index(index, [good, binary], errors="skip")
    assert report.added == ["good.html"] and list(report.failed) == ["report.pdf.html"]
    assert not [r for r in caplog.records if "report.pdf.html" in r.getMessage()]
