"""End to end with the packaged embedding model over the three example pages, on two vector stores."""

from __future__ import annotations

import pytest
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document

from spire_core import Citation, approx_tokens, decode_paths, own_paths, render
from spire_langchain import SpireRetriever, citations_of

from .conftest import CachedEmbeddings

pytestmark = pytest.mark.slow

QUESTION = "What is the valid range of checkpoint_timeout?"


def _answer_citation(docs: list[Document]) -> Citation:
    found = [c for d in docs for c in citations_of(d) if "30 seconds and one day" in c.text]
    assert found, [c.text for d in docs for c in citations_of(d)]
    return found[0]


def _check(retriever: SpireRetriever, docs: list[Document]) -> None:
    assert docs
    assert sum(d.metadata["spire_cost"] for d in docs) <= retriever.budget
    citation = _answer_citation(docs)
    assert citation.doc_id == "postgresql-wal.html"
    assert "checkpoint_timeout" in citation.text  # the definition-list term is the sentence's context
    # identity travels: the citation's paths, with their global context, render to its text
    page = retriever.sources(citation.doc_id)
    assert render(page, own_paths(page, citation.paths)) == citation.text
    best = docs[0]
    assert best.metadata["spire_doc_id"] == "postgresql-wal.html"
    assert best.metadata["title"] == "postgresql-wal"  # the page's own metadata is kept
    assert render(page, decode_paths(best.metadata["spire_paths"])) == best.page_content
    assert approx_tokens(best.page_content) == best.metadata["spire_cost"]
    assert "30 seconds and one day" in best.page_content


def test_checkpoint_timeout_in_memory(example_index: SpireRetriever) -> None:
    docs = example_index.invoke(QUESTION)
    _check(example_index, docs)
    assert docs[0].metadata["spire_score"] >= docs[-1].metadata["spire_score"]


async def test_checkpoint_timeout_async(example_index: SpireRetriever) -> None:
    docs = await example_index.ainvoke(QUESTION)
    _check(example_index, docs)
    assert [d.metadata["spire_paths"] for d in docs] == [
        d.metadata["spire_paths"] for d in example_index.invoke(QUESTION)
    ]


def test_same_retriever_over_faiss(example_index: SpireRetriever, embeddings: CachedEmbeddings) -> None:
    """FAISS (L2 distance: lower is closer) behind the same retriever gives the same evidence."""
    sentences = example_index.transformer.transform_documents(
        [example_index.docstore.mget([s])[0] for s in sorted(example_index.docstore.yield_keys())]  # type: ignore[misc]
    )
    calls = embeddings.calls
    faiss = FAISS.from_documents(list(sentences), embeddings, ids=[str(d.id) for d in sentences])
    assert embeddings.calls == calls  # every sentence was embedded once, for the first store
    retriever = SpireRetriever(vectorstore=faiss, docstore=example_index.docstore)
    docs = retriever.invoke(QUESTION)
    _check(retriever, docs)
    assert retriever._distance is True  # read from the store's order: FAISS lists ascending distances
    scores = [c.score for d in docs for c in citations_of(d)]
    assert all(s is not None and 0 < s <= 1 for s in scores)
    # the store's ranking decides: the same pages in the same order as in memory (cosine on unit vectors)
    assert [d.metadata["spire_doc_id"] for d in docs] == [
        d.metadata["spire_doc_id"] for d in example_index.invoke(QUESTION)
    ]
