"""SpireEvidenceFilter with a real HTTP stub (OpenAILike), MockLLM and fixed-answer LLMs; degraded paths."""

from __future__ import annotations

import logging

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.llms.openai_like import OpenAILike

from spire_app import Store
from spire_core import EvidenceFilterError
from spire_llamaindex import SpireEvidenceFilter, SpireRetriever, citations_of
from tests.support.openai_stub import OpenAIStub

from .conftest import QUESTION, FixedLLM, label_of, texts

PHRASE = "30 seconds and one day"


@pytest.fixture(scope="module")
def retriever(example: Store) -> SpireRetriever:
    return example.retriever(budget=600)


@pytest.fixture(scope="module")
def retrieved(retriever: SpireRetriever) -> list[NodeWithScore]:
    nodes = retriever.retrieve(QUESTION)
    assert sum(len(citations_of(n)) for n in nodes) > 3
    return nodes


def stub_llm(stub: OpenAIStub, timeout: float = 30.0) -> OpenAILike:
    return OpenAILike(
        api_base=stub.base_url, model="stub", api_key="unused", is_chat_model=True, timeout=timeout, max_retries=0
    )


def picker(prompt: str) -> str:
    return f'Sure. ```json\n["{label_of(prompt, PHRASE)}"]\n```'


def check_selected(out: list[NodeWithScore]) -> None:
    assert len(out) == 1
    meta = out[0].node.metadata
    assert meta["spire_doc_id"] == "postgresql-wal.html"
    assert meta["spire_filter"]["ok"] is True and len(meta["spire_filter"]["labels"]) == 1
    (cit,) = citations_of(out[0])
    assert PHRASE in cit.text and "checkpoint_timeout" in cit.text
    assert PHRASE in out[0].node.get_content() and "checkpoint_timeout" in out[0].node.get_content()
    assert "The default is five minutes" not in out[0].node.get_content()


def test_filter_over_http_with_openai_like(retriever: SpireRetriever, retrieved: list[NodeWithScore]) -> None:
    with OpenAIStub(picker) as stub:
        out = SpireEvidenceFilter(stub_llm(stub), retriever).postprocess_nodes(retrieved, query_str=QUESTION)
    assert len(stub.requests) == 1
    assert QUESTION in str(stub.requests[0]["messages"])
    check_selected(out)


async def test_async_filter(retriever: SpireRetriever, retrieved: list[NodeWithScore]) -> None:
    with OpenAIStub(picker) as stub:
        out = await SpireEvidenceFilter(stub_llm(stub), retriever).apostprocess_nodes(retrieved, query_str=QUESTION)
    check_selected(out)


def test_query_engine_with_the_filter(retriever: SpireRetriever) -> None:
    with OpenAIStub(picker) as stub:
        engine = RetrieverQueryEngine.from_args(
            retriever, llm=MockLLM(), node_postprocessors=[SpireEvidenceFilter(stub_llm(stub), retriever)]
        )
        response = engine.query(QUESTION)
    check_selected(response.source_nodes)
    assert PHRASE in str(response)


def test_fixed_answers(retriever: SpireRetriever, retrieved: list[NodeWithScore]) -> None:
    llm = FixedLLM(answer="[]")
    # selecting nothing is reported, never obeyed silently (issue 36): the results come back unfiltered
    kept = SpireEvidenceFilter(llm, retriever).postprocess_nodes(retrieved, query_str=QUESTION)
    assert texts(kept) == texts(retrieved)
    report = kept[0].node.metadata["spire_filter"]
    assert report["ok"] is False and "selected none" in report["error"]
    assert len(llm.prompts) == 1 and "<E1>" in llm.prompts[0]
    prompt = llm.prompts[0]
    llm = FixedLLM(answer=f"The answer is in {label_of(prompt, PHRASE)}.")
    check_selected(SpireEvidenceFilter(llm, retriever.sources).postprocess_nodes(retrieved, query_str=QUESTION))


def test_mock_llm_echoing_the_prompt_degrades(retriever: SpireRetriever, retrieved: list[NodeWithScore]) -> None:
    # MockLLM echoes the prompt (labels included): read as no answer, the results come back unfiltered
    out = SpireEvidenceFilter(MockLLM(), retriever).postprocess_nodes(retrieved, query_str=QUESTION)
    assert texts(out) == texts(retrieved)
    report = out[0].node.metadata["spire_filter"]
    assert report["ok"] is False and report["error"] == "the answer repeats the prompt"


@pytest.mark.parametrize(
    ("llm", "cause"),
    [
        (FixedLLM(answer="I am not sure what you mean."), "no labels"),
        (FixedLLM(error="connection refused"), "RuntimeError: connection refused"),
    ],
)
def test_garbage_or_failure_keeps_everything(
    llm: FixedLLM,
    cause: str,
    retriever: SpireRetriever,
    retrieved: list[NodeWithScore],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        out = SpireEvidenceFilter(llm, retriever).postprocess_nodes(retrieved, query_str=QUESTION)
    assert texts(out) == texts(retrieved)
    assert [citations_of(n) for n in out] == [citations_of(n) for n in retrieved]
    report = out[0].node.metadata["spire_filter"]
    assert report["ok"] is False and cause in report["error"]
    assert any("evidence filter failed" in r.getMessage() for r in caplog.records)
    with pytest.raises(EvidenceFilterError):
        SpireEvidenceFilter(llm, retriever, on_error="raise").postprocess_nodes(retrieved, query_str=QUESTION)


def test_timeout_degrades(
    retriever: SpireRetriever, retrieved: list[NodeWithScore], caplog: pytest.LogCaptureFixture
) -> None:
    with OpenAIStub(picker, delay=3.0) as stub, caplog.at_level(logging.WARNING):
        stub.server.handle_error = lambda *args: None  # type: ignore[method-assign]  # the late reply's broken pipe
        out = SpireEvidenceFilter(stub_llm(stub, timeout=0.5), retriever).postprocess_nodes(
            retrieved, query_str=QUESTION
        )
    assert texts(out) == texts(retrieved)
    report = out[0].node.metadata["spire_filter"]
    assert report["ok"] is False and "Timeout" in report["error"]
    assert any("evidence filter failed" in r.getMessage() for r in caplog.records)


def test_other_nodes_pass_through(retriever: SpireRetriever, retrieved: list[NodeWithScore]) -> None:
    foreign = NodeWithScore(node=TextNode(text="not from SPIRE"), score=0.1)
    with OpenAIStub(picker) as stub:
        out = SpireEvidenceFilter(stub_llm(stub), retriever).postprocess_nodes(
            [*retrieved, foreign], query_str=QUESTION
        )
    assert out[-1] is foreign
    check_selected(out[:-1])
    with pytest.raises(ValueError, match="needs the query"):
        SpireEvidenceFilter(FixedLLM(answer="[]"), retriever).postprocess_nodes(retrieved)
