"""Issue 50, LlamaIndex: a misuse is refused at once with what to change, never answered silently wrong."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document

from spire_core.errors import NotSpireIndexError, SpireError
from spire_llamaindex import SpireNodeParser, SpireRetriever, citations_of, store_sources

from ..support.hash_embedding import HashEmbedding
from .test_upsert import TextVectorStore

ROOT = Path(__file__).resolve().parents[2]
PAGE = Document(
    id_="limits.html",
    text="<html><head><title>Service limits</title></head><body><h1>Service limits</h1>"
    "<p>The upload limit is forty megabytes per file. Larger files are rejected.</p></body></html>",
)


def splitter_index(storage: StorageContext | None = None) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [PAGE], transformations=[SentenceSplitter()], embed_model=HashEmbedding(), storage_context=storage
    )


def test_an_index_built_with_sentence_splitter_is_refused_at_construction() -> None:
    index = splitter_index()
    with pytest.raises(NotSpireIndexError, match=r"transformations=\[SpireNodeParser\(\)\]"):
        SpireRetriever(index)
    store_sources(index.docstore, [PAGE])  # the pages beside the vectors: still no SPIRE units to cite
    with pytest.raises(NotSpireIndexError) as err:
        SpireRetriever(index)
    assert isinstance(err.value, SpireError) and "SentenceSplitter" in str(err.value)


def test_a_store_keeping_text_is_checked_at_the_first_query() -> None:
    storage = StorageContext.from_defaults(vector_store=TextVectorStore())
    index = splitter_index(storage)
    store_sources(index.docstore, [PAGE])
    retriever = SpireRetriever(index)  # nothing to look at yet: the store holds the nodes
    with pytest.raises(NotSpireIndexError, match=r"SpireNodeParser"):
        retriever.retrieve("What is the upload limit?")


async def test_the_first_query_check_holds_for_async_retrieval_too() -> None:
    storage = StorageContext.from_defaults(vector_store=TextVectorStore())
    index = splitter_index(storage)
    store_sources(index.docstore, [PAGE])
    with pytest.raises(NotSpireIndexError):
        await SpireRetriever(index).aretrieve("What is the upload limit?")


def test_an_index_empty_at_construction_is_checked_when_it_has_nodes() -> None:
    index = VectorStoreIndex([], embed_model=HashEmbedding())
    retriever = SpireRetriever(index)
    assert retriever.retrieve("anything") == []
    index.insert_nodes(SentenceSplitter().get_nodes_from_documents([PAGE]))
    with pytest.raises(NotSpireIndexError):
        retriever.retrieve("What is the upload limit?")


def test_a_spire_index_passes_both_checks() -> None:
    storage = StorageContext.from_defaults(vector_store=TextVectorStore())
    for kept in (None, storage):
        index = VectorStoreIndex.from_documents(
            [PAGE], transformations=[SpireNodeParser()], embed_model=HashEmbedding(), storage_context=kept
        )
        store_sources(index.docstore, [PAGE])
        [node] = SpireRetriever(index).retrieve("What is the upload limit?")
        assert "forty megabytes" in node.node.get_content()


def test_a_typo_in_from_documents_options_fails_before_any_page_is_read() -> None:
    def never() -> Iterator[Document]:
        raise AssertionError("a page was read before the options were checked")
        yield PAGE

    with pytest.raises(TypeError, match=r"'budgt' \(did you mean 'budget'\?\); valid: .*budget.*first_k"):
        SpireRetriever.from_documents(never(), embed_model=HashEmbedding(), budgt=500)


def test_from_documents_takes_file_paths_and_page_texts_as_langchains_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    pages = [
        "examples/pages/postgresql-wal.html",  # a path as a string: the page id is the path as given
        ROOT / "examples" / "pages" / "python-json.html",
        "<h1>Espresso</h1><p>An espresso shot takes about 25 seconds.</p>",
        "# Tea\n\nGreen tea steeps for two minutes.\n",
    ]
    retriever = SpireRetriever.from_documents(pages, embed_model=HashEmbedding(), budget=4000)
    found = {n.node.metadata["spire_doc_id"]: n for n in retriever.retrieve("checkpoint_timeout valid range")}
    wal = found["examples/pages/postgresql-wal.html"]  # the vectors are hashes: BM25 finds the sentence
    assert any("between 30 seconds and one day" in c.text for c in citations_of(wal))
    stored = set(retriever.index.docstore.docs)
    assert {"examples/pages/postgresql-wal.html", str(ROOT / "examples" / "pages" / "python-json.html")} <= stored
    assert sum(i.startswith("sha256:") for i in stored) == 2  # the two page texts, by a hash of each
    with pytest.raises(FileNotFoundError, match=r"missing\.html"):
        SpireRetriever.from_documents(["missing.html"], embed_model=HashEmbedding())
