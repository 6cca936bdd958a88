"""Issue 50, LangChain: a dict filter on the default InMemoryVectorStore filters (it raised
``TypeError: 'dict' object is not callable``), or is refused saying what to pass."""

from __future__ import annotations

import pytest

from spire_langchain import SpireRetriever, citations_of

from .conftest import KeywordEmbeddings, small_pages

QUERY = "brewing coffee tea cocoa tyre pressure"


@pytest.fixture
def retriever(keyword_embeddings: KeywordEmbeddings) -> SpireRetriever:
    return SpireRetriever.from_documents(small_pages(), keyword_embeddings)


def pages_of(docs: list) -> set[str]:
    return {d.metadata["spire_doc_id"] for d in docs}


def test_a_dict_filter_on_the_in_memory_store_keeps_the_pages_it_names(keyword_embeddings: KeywordEmbeddings) -> None:
    filtered = SpireRetriever.from_documents(
        small_pages(), keyword_embeddings, search_kwargs={"filter": {"source": "tea.html"}}
    )
    docs = filtered.invoke(QUERY)
    assert pages_of(docs) == {"tea.html"}
    assert {c.doc_id for d in docs for c in citations_of(d)} == {"tea.html"}


def test_a_dict_filter_per_call_and_a_list_of_values(retriever: SpireRetriever) -> None:
    assert len(pages_of(retriever.invoke(QUERY))) > 2  # unfiltered: more pages
    assert pages_of(retriever.invoke(QUERY, filter={"source": "cocoa.html"})) == {"cocoa.html"}
    either = retriever.invoke(QUERY, filter={"source": ["cocoa.html", "tea.html"]})
    assert pages_of(either) == {"cocoa.html", "tea.html"}
    assert retriever.invoke(QUERY, filter={"source": "nowhere.html"}) == []
    callable_filter = retriever.invoke(QUERY, filter=lambda doc: doc.metadata["source"] == "tea.html")
    assert pages_of(callable_filter) == {"tea.html"}  # a callable goes through as it is


def test_an_operator_filter_is_refused_saying_what_to_pass(retriever: SpireRetriever) -> None:
    with pytest.raises(ValueError, match=r"callable filter instead, filter=lambda doc"):
        retriever.invoke(QUERY, filter={"source": {"$in": ["tea.html"]}})
