"""LangChain's standard retriever suite (langchain-tests ``RetrieversIntegrationTests``) on two vector stores.

langchain-tests has no unit-test suite for retrievers; the integration suite needs no
network here: the packaged embedding model runs locally. ``k`` is the number of pages.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from langchain_community.vectorstores import FAISS
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests

from spire_langchain import SpireRetriever

from .conftest import model_embeddings, small_pages


@cache
def _index(store: type[VectorStore]) -> SpireRetriever:
    return SpireRetriever.from_documents(small_pages(), model_embeddings(), vectorstore_cls=store)


class TestInMemoryStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return SpireRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        built = _index(InMemoryVectorStore)
        return {"vectorstore": built.vectorstore, "docstore": built.docstore, "budget": 1000}

    @property
    def retriever_query_example(self) -> str:
        return "How long should I brew it?"


class TestFAISSStandard(TestInMemoryStandard):
    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        built = _index(FAISS)
        return {"vectorstore": built.vectorstore, "docstore": built.docstore, "budget": 1000}
