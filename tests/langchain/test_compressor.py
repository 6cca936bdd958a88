"""SpireEvidenceFilter: a real HTTP chat model (local OpenAI stub), fake chat models, failures, composition."""

from __future__ import annotations

import re

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI

from spire_core import EvidenceFilterError, decode_paths, global_context, render
from spire_core.query.evidence import build_prompt, build_views
from spire_langchain import SpireEvidenceFilter, SpireRetriever, citations_of
from tests.support.openai_stub import OpenAIStub

from .conftest import KeywordEmbeddings, small_pages

QUESTION = "What is the valid range of checkpoint_timeout?"
_UNIT = re.compile(r"<(E\d+)>(.*?)</\1>", re.S)


def label_of(prompt: str, needle: str) -> str:
    """The label of the first citable unit in ``prompt`` whose text holds ``needle``."""
    for label, text in _UNIT.findall(prompt):
        if needle in text:
            return str(label)
    raise AssertionError(f"no unit holds {needle!r}")


def chooser(*needles: str, extra: str = "") -> RunnableLambda:
    """A stand-in model answering with the labels of the units holding ``needles``, as a fenced JSON list."""

    def answer(prompt: str) -> str:
        labels = [label_of(prompt, n) for n in needles]
        return "Here you go:\n```json\n" + str([*labels, *([extra] if extra else [])]).replace("'", '"') + "\n```"

    return RunnableLambda(answer)


def chat(stub: OpenAIStub, timeout: float = 30.0) -> ChatOpenAI:
    return ChatOpenAI(base_url=stub.base_url, api_key="x", model="stub", max_retries=0, timeout=timeout)  # type: ignore[arg-type]


@pytest.fixture
def small() -> SpireRetriever:
    return SpireRetriever.from_documents(small_pages(), KeywordEmbeddings())


def test_is_a_document_compressor(small: SpireRetriever) -> None:
    flt = SpireEvidenceFilter(FakeListChatModel(responses=["[]"]), small)
    assert isinstance(flt, BaseDocumentCompressor)
    assert flt.sources is small.sources  # parsed pages are shared, not parsed again
    with pytest.raises(ValueError, match="needs sources"):
        SpireEvidenceFilter(llm=FakeListChatModel(responses=["[]"]))


@pytest.mark.slow
def test_chat_model_over_http_keeps_only_the_answer(example_index: SpireRetriever) -> None:
    docs = example_index.invoke(QUESTION)
    with OpenAIStub(lambda prompt: f'["{label_of(prompt, "30 seconds and one day")}"]') as stub:
        flt = SpireEvidenceFilter(chat(stub), example_index)
        out = flt.compress_documents(docs, QUESTION)
    assert len(stub.requests) == 1
    prompt = stub.requests[0]["messages"][-1]["content"]
    assert QUESTION in prompt and "<E1>" in prompt
    assert len(out) == 1
    doc = out[0]
    assert doc.metadata["spire_doc_id"] == "postgresql-wal.html"
    assert doc.metadata["spire_filter"]["ok"] is True
    assert doc.metadata["title"] == "postgresql-wal"
    [citation] = citations_of(doc)
    assert "30 seconds and one day" in citation.text and "checkpoint_timeout" in citation.text
    page = example_index.sources("postgresql-wal.html")
    assert citation.text == render(page, global_context(page, citation.paths))
    assert decode_paths(doc.metadata["spire_seeds"]) == citation.paths
    assert doc.page_content == render(page, decode_paths(doc.metadata["spire_paths"]))
    assert "30 seconds and one day" in doc.page_content
    assert doc.metadata["spire_cost"] < sum(d.metadata["spire_cost"] for d in docs) / 4


@pytest.mark.slow
def test_garbage_answer_over_http_degrades_and_loses_nothing(
    example_index: SpireRetriever, caplog: pytest.LogCaptureFixture
) -> None:
    docs = example_index.invoke(QUESTION)
    with OpenAIStub(lambda prompt: "I am sorry, I cannot pick passages today.") as stub:
        out = SpireEvidenceFilter(chat(stub), example_index).compress_documents(docs, QUESTION)
    assert [d.page_content for d in out] == [d.page_content for d in docs]
    assert [citations_of(d) for d in out] == [citations_of(d) for d in docs]
    assert all(d.metadata["spire_filter"]["ok"] is False for d in out)
    assert "evidence filter failed" in caplog.text and "no labels" in caplog.text


def test_slow_model_times_out_degrades_and_loses_nothing(
    small: SpireRetriever, caplog: pytest.LogCaptureFixture
) -> None:
    docs = small.invoke("espresso shot seconds")
    with OpenAIStub(lambda prompt: '["E1"]', delay=3.0) as stub:
        stub.server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]  # late reply
        out = SpireEvidenceFilter(chat(stub, timeout=0.3), small).compress_documents(docs, "espresso")
    assert [d.page_content for d in out] == [d.page_content for d in docs]
    assert all(d.metadata["spire_filter"]["ok"] is False for d in out)
    assert "evidence filter failed" in caplog.text and "Timeout" in caplog.text


def test_on_error_raise(small: SpireRetriever) -> None:
    docs = small.invoke("espresso shot seconds")
    flt = SpireEvidenceFilter(FakeListChatModel(responses=["no idea"]), small, on_error="raise")
    with pytest.raises(EvidenceFilterError):
        flt.compress_documents(docs, "espresso")


def test_unknown_labels_are_dropped_known_ones_kept(small: SpireRetriever, caplog: pytest.LogCaptureFixture) -> None:
    docs = small.invoke("brewing tea coffee minutes")
    assert {"coffee.html", "tea.html"} <= {d.metadata["spire_doc_id"] for d in docs}
    flt = SpireEvidenceFilter(chooser("steep for 4 minutes", extra="E999"), small)
    out = flt.compress_documents(docs, "How long does black tea steep?")
    assert [d.metadata["spire_doc_id"] for d in out] == ["tea.html"]
    [citation] = citations_of(out[0])
    assert "Black tea: steep for 4 minutes" in citation.text
    assert "Green tea" not in out[0].page_content
    assert "E999" in caplog.text


def test_empty_choice_is_reported_and_loses_nothing(small: SpireRetriever, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 36: an answer that selects nothing (``[]``, which page text may ask for) keeps everything."""
    docs = small.invoke("espresso shot seconds")
    out = SpireEvidenceFilter(FakeListChatModel(responses=["[]"]), small).compress_documents(docs, "x")
    assert [d.page_content for d in out] == [d.page_content for d in docs] and out
    assert all(d.metadata["spire_filter"]["ok"] is False for d in out)
    assert "selected none" in caplog.text


def test_fake_chat_model_with_code_fence_and_prose(small: SpireRetriever) -> None:
    docs = small.invoke("brewing tea coffee minutes")
    flt = SpireEvidenceFilter(FakeListChatModel(responses=["[]"]), small)
    results = flt._results(docs)
    prompt = build_prompt("espresso time and dose", build_views(results, small.sources))
    labels = [label_of(prompt, "25 to 30 seconds"), label_of(prompt, "60 grams")]
    answer = f'Sure! The passages are:\n```json\n["{labels[0]}", "{labels[1]}"]\n```\nHope this helps.'
    model = FakeListChatModel(responses=[answer])
    [coffee] = SpireEvidenceFilter(model, small).compress_documents(docs, "espresso time and dose")
    assert len(citations_of(coffee)) == 2
    assert "25 to 30 seconds" in coffee.page_content and "60 grams" in coffee.page_content
    assert "90 and 96 degrees" not in coffee.page_content
    assert coffee.page_content.count("# Brewing coffee") == 1  # shared context rendered once


def test_non_spire_documents_pass_through(small: SpireRetriever, caplog: pytest.LogCaptureFixture) -> None:
    docs = small.invoke("espresso shot seconds")
    foreign = Document(page_content="from another retriever", metadata={"source": "elsewhere"})
    flt = SpireEvidenceFilter(chooser("25 to 30 seconds"), small)
    out = flt.compress_documents([*docs, foreign], "espresso")
    assert out[-1] == foreign
    assert [d.metadata["spire_doc_id"] for d in out[:-1]] == ["coffee.html"]
    assert "without SPIRE metadata" in caplog.text
    assert flt.compress_documents([foreign], "espresso") == [foreign]


def test_docstore_backed_filter_agrees_with_the_shared_cache(small: SpireRetriever) -> None:
    docs = small.invoke("brewing tea coffee minutes")
    shared = SpireEvidenceFilter(chooser("steep for 2 minutes"), small)
    own = SpireEvidenceFilter(llm=chooser("steep for 2 minutes"), docstore=small.docstore)
    assert own.sources is None
    a = shared.compress_documents(docs, "green tea")
    b = own.compress_documents(docs, "green tea")
    assert [(d.page_content, d.metadata) for d in a] == [(d.page_content, d.metadata) for d in b]


async def test_async_compress_matches_sync(small: SpireRetriever) -> None:
    docs = small.invoke("brewing tea coffee minutes")
    flt = SpireEvidenceFilter(chooser("steep for 2 minutes"), small)
    sync = flt.compress_documents(docs, "green tea")
    asynchronous = await flt.acompress_documents(docs, "green tea")
    assert [(d.page_content, d.metadata) for d in asynchronous] == [(d.page_content, d.metadata) for d in sync]
    fake = SpireEvidenceFilter(FakeListChatModel(responses=["nothing useful"]), small)
    degraded = await fake.acompress_documents(docs, "green tea")
    assert [d.page_content for d in degraded] == [d.page_content for d in docs]


async def test_contextual_compression_retriever(small: SpireRetriever) -> None:
    flt = SpireEvidenceFilter(chooser("80 to 120 psi"), small)
    pipeline = ContextualCompressionRetriever(base_compressor=flt, base_retriever=small)
    for out in (pipeline.invoke("road tyre pressure psi"), await pipeline.ainvoke("road tyre pressure psi")):
        assert [d.metadata["spire_doc_id"] for d in out] == ["bicycles.html"]
        [citation] = citations_of(out[0])
        assert "80 to 120 psi" in citation.text and "Road" in citation.text
        assert "Mountain" not in out[0].page_content
