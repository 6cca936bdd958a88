"""What a LlamaIndex user gets: nodes scored in [0, 1] by their evidence, best first, that
LlamaIndex's postprocessors read as similarities; the citation cut; ``similarity_top_k``."""

from __future__ import annotations

import pytest
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine

from spire_app import Store
from spire_core.results.schema import citations_from

from .conftest import QUESTION, FixedLLM

ANSWER = "30 seconds and one day"


def test_nodes_are_scored_in_the_unit_range_best_first(example: Store) -> None:
    nodes = example.retriever(budget=600).retrieve(QUESTION)
    scores = [n.score for n in nodes]
    assert scores and all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert ANSWER in nodes[0].node.get_content()
    cited = citations_from(nodes[0].node.metadata)
    assert ANSWER in cited[0].text  # the first citation a reader sees holds the answer
    assert [c.score for c in cited] == sorted((c.score for c in cited), reverse=True)
    assert nodes[0].score == cited[0].score


def test_a_similarity_cutoff_keeps_the_answer_in_a_query_engine(example: Store) -> None:
    llm = FixedLLM(answer="Between 30 seconds and one day.")
    engine = RetrieverQueryEngine.from_args(
        example.retriever(budget=600), llm=llm, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.5)]
    )
    response = engine.query(QUESTION)
    assert str(response) != "Empty Response"
    assert any(ANSWER in n.node.get_content() for n in response.source_nodes)
    assert ANSWER in llm.prompts[-1]  # the model was shown the evidence


def test_the_cut_names_the_strongest_citations_and_delivers_the_rest_as_context(example: Store) -> None:
    full = example.retriever(budget=600, max_citations=None, relative_score=0.0).retrieve(QUESTION)
    two = example.retriever(budget=600, max_citations=2).retrieve(QUESTION)
    assert [n.node.get_content() for n in full] == [n.node.get_content() for n in two]  # what the model reads
    named = [c for n in two for c in citations_from(n.node.metadata) if c.evidence]
    assert len(named) == 2 and any(ANSWER in c.text for c in named)
    context = [c for n in two for c in citations_from(n.node.metadata) if not c.evidence]
    assert len(named) + len(context) == sum(len(citations_from(n.node.metadata)) for n in full)


def test_similarity_top_k_caps_the_pages(example: Store) -> None:
    retriever = example.retriever(budget=2000, search_kwargs={"similarity_top_k": 1})
    nodes = retriever.retrieve(QUESTION)
    assert len(nodes) == 1 and ANSWER in nodes[0].node.get_content()
    assert retriever.options.max_pages == 1
    with pytest.raises(ValueError, match="similarity_top_k"):
        example.retriever(search_kwargs={"similarity_top_k": 0})


def test_a_misspelt_cut_option_fails_at_once(example: Store) -> None:
    with pytest.raises(TypeError):
        example.retriever(max_citation=3)
    with pytest.raises(ValueError):
        example.retriever(min_score=2.0)
