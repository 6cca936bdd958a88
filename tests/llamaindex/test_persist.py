"""Reopening a persisted index without ``Settings.embed_model``, and vector stores an IngestionPipeline can fill."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import SimpleVectorStore

from spire_core import SpireError
from spire_llamaindex import SpireNodeParser, SpireRetriever, citations_of, load_index
from tests.support.hash_embedding import HashEmbedding

ANSWER = "An espresso shot takes about 25 to 30 seconds to extract."
PAGE = f"<h1>Coffee</h1><h2>Espresso</h2><p>{ANSWER}</p><h2>Beans</h2><p>Buy whole beans and grind them fresh.</p>"


def _cited(retriever: SpireRetriever, question: str) -> list[str]:
    return [c.text for node in retriever.retrieve(question) for c in citations_of(node)]


def test_a_persisted_index_reopens_on_the_packaged_model(
    tmp_path: Path, embed_model: BaseEmbedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Settings, "_embed_model", None)  # the application set no model
    built = SpireRetriever.from_documents([Document(id_="coffee.html", text=PAGE)], embed_model=embed_model)
    built.index.storage_context.persist(str(tmp_path))
    with pytest.raises(ImportError, match="llama-index-embeddings-openai"):  # LlamaIndex's own loader
        load_index_from_storage(StorageContext.from_defaults(persist_dir=str(tmp_path)))
    retriever = SpireRetriever(load_index(tmp_path))
    assert any(ANSWER in text for text in _cited(retriever, "How long does an espresso shot take?"))
    with pytest.raises(SpireError, match="no persisted index"):
        load_index(tmp_path / "missing")


def test_a_pipeline_filled_store_without_text_is_named(caplog: pytest.LogCaptureFixture) -> None:
    page = Document(id_="coffee.html", text=PAGE)
    vectors = SimpleVectorStore()
    pipeline = IngestionPipeline(
        transformations=[SpireNodeParser(), HashEmbedding()], docstore=SimpleDocumentStore(), vector_store=vectors
    )
    pipeline.run(documents=[page])
    with pytest.raises(ValueError, match="does not store text"):  # LlamaIndex's refusal
        VectorStoreIndex.from_vector_store(vectors, embed_model=HashEmbedding())
    blind = VectorStoreIndex(
        [], storage_context=StorageContext.from_defaults(vector_store=vectors), embed_model=HashEmbedding()
    )
    with pytest.raises(SpireError, match="keeps no text cannot be filled by an IngestionPipeline"):
        SpireRetriever(blind, pipeline.docstore)  # it answered [] to every question
    # the documented way for in-memory stores: the pipeline's nodes (embedded once) into an index
    plain = IngestionPipeline(transformations=[SpireNodeParser(), HashEmbedding()], docstore=SimpleDocumentStore())
    with warnings.catch_warnings():  # LlamaIndex says it switches to duplicates_only (0.14 warns, 0.13 prints)
        warnings.filterwarnings("ignore", "docstore_strategy", UserWarning)
        nodes = plain.run(documents=[page])
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())
    assert any(ANSWER in text for text in _cited(SpireRetriever(index, plain.docstore), "espresso shot seconds"))
