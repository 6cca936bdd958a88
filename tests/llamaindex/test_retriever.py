"""SpireRetriever end to end with the packaged embedding model over examples/pages."""

from __future__ import annotations

import logging
import re

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore

from spire_app import Store
from spire_core import Citation, approx_tokens, decode_paths
from spire_llamaindex import MissingSourceError, SpireRetriever, citations_of, numbered_citations, subdocument_of

from .conftest import QUESTION


def test_question_yields_the_expected_citation(example: Store) -> None:
    nodes = example.retriever(budget=1000).retrieve(QUESTION)
    assert nodes and nodes[0].node.metadata["spire_doc_id"] == "postgresql-wal.html"
    cited = [c for n in nodes for c in citations_of(n)]
    hit = next(c for c in cited if "30 seconds and one day" in c.text)
    assert hit.doc_id == "postgresql-wal.html"
    assert "checkpoint_timeout" in hit.text
    assert "checkpoint_timeout" in nodes[0].node.get_content()
    assert "30 seconds and one day" in nodes[0].node.get_content()


def test_results_respect_the_budget_and_carry_their_identity(example: Store) -> None:
    for budget in (150, 1000):
        nodes = example.retriever(budget=budget).retrieve("How do I decode JSON with a custom object hook?")
        assert nodes
        docs = [n.node.metadata["spire_doc_id"] for n in nodes]
        assert len(docs) == len(set(docs))  # one node per document
        assert sum(approx_tokens(n.node.get_content()) for n in nodes) <= budget
        for n in nodes:
            meta = n.node.metadata
            seeds = decode_paths(meta["spire_seeds"])
            assert seeds <= decode_paths(meta["spire_paths"])
            assert all(c.paths <= seeds for c in citations_of(n))
            assert n.score == max(c.score or 0.0 for c in citations_of(n))
            for mode in (MetadataMode.LLM, MetadataMode.EMBED):
                shown = n.node.get_content(metadata_mode=mode)
                assert "spire_" not in shown and "citations" not in shown
            sub = subdocument_of(n)
            assert sub is not None and sub.seeds == seeds and sub.text == n.node.get_content()
    small = example.retriever(budget=150).retrieve("How do I decode JSON with a custom object hook?")
    large = example.retriever(budget=1000).retrieve("How do I decode JSON with a custom object hook?")
    assert sum(len(citations_of(n)) for n in small) < sum(len(citations_of(n)) for n in large)


async def test_async_gives_the_same_results(example: Store) -> None:
    retriever = example.retriever(budget=600)
    sync = retriever.retrieve(QUESTION)
    asynchronous = await retriever.aretrieve(QUESTION)
    assert [(n.node.get_content(), n.score) for n in sync] == [(n.node.get_content(), n.score) for n in asynchronous]


def test_precomputed_query_embedding_and_a_plain_retriever(example: Store, embed_model) -> None:
    bundle = QueryBundle(QUESTION, embedding=embed_model.get_query_embedding(QUESTION))
    via_index = example.retriever(budget=500, first_k=256, max_rounds=1).retrieve(bundle)  # the same 256 hits
    plain = SpireRetriever(
        example.index.as_retriever(similarity_top_k=256),
        example.index.docstore,
        budget=500,
        first_k=256,
        max_rounds=1,
        policy=example.parser.policy,
    )
    assert [n.node.get_content() for n in plain.retrieve(bundle)] == [n.node.get_content() for n in via_index]


def test_query_engine(example: Store) -> None:
    retriever = example.retriever(budget=400)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(QUESTION)
    assert [n.node.get_content() for n in response.source_nodes] == [
        n.node.get_content() for n in retriever.retrieve(QUESTION)
    ]
    assert "30 seconds and one day" in str(response)  # MockLLM echoes its prompt: the context was sent
    assert "spire_paths" not in str(response)


def test_missing_sources_are_logged_then_raised(example: Store, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR), pytest.raises(MissingSourceError, match=r"postgresql-wal\.html"):
        SpireRetriever(example.index, SimpleDocumentStore()).retrieve(QUESTION)
    partial = SimpleDocumentStore()
    partial.add_documents([example.index.docstore.get_document("python-json.html")])
    caplog.clear()
    with caplog.at_level(logging.ERROR):  # every node is a hit: the other pages' hits are skipped
        nodes = SpireRetriever(example.index, partial, first_k=5000, max_rounds=1).retrieve(QUESTION)
    assert nodes and {n.node.metadata["spire_doc_id"] for n in nodes} == {"python-json.html"}
    assert any("source pages missing" in r.getMessage() for r in caplog.records)


def test_format_citations_marks_what_numbered_citations_lists(example: Store) -> None:
    retriever = example.retriever(budget=400)
    nodes = retriever.retrieve(QUESTION)
    numbered = numbered_citations(nodes)
    text = retriever.format_citations(nodes)
    assert text.startswith("Source: postgresql-wal.html\n") and text.count("Source: postgresql-wal.html") == 1
    assert approx_tokens(text) <= 400  # markers and Source lines included
    # [1] is the strongest named citation: the answer, marked right after its sentence
    assert "30 seconds and one day" in numbered[0].text
    assert "The valid range is between 30 seconds and one day." in text.split(" [1]")[0].splitlines()[-1]
    shown = {int(n) for n in re.findall(r" \[(\d+)\]", text)}
    assert shown == set(range(1, max(shown) + 1)) and max(shown) <= len(numbered)
    for n in shown:
        assert f"Source: {numbered[n - 1].doc_id}" in text
    plain = NodeWithScore(node=TextNode(id_="x", text="no SPIRE metadata here"))
    assert numbered_citations([plain]) == [Citation("x", frozenset(), "no SPIRE metadata here")]
    with pytest.raises(ValueError, match="not a SPIRE result"):
        retriever.format_citations([plain])
