"""What a LangChain user gets: ``spire_score`` in [0, 1], best first, on one scale whether or not a
``score_threshold`` applies; the citation cut, the same as LlamaIndex's for the same page and model."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from spire_core.results.schema import SCORE, citations_from
from spire_langchain import SpireRetriever

from .conftest import CachedEmbeddings, example_pages

QUESTION = "What is the valid range of checkpoint_timeout?"
ANSWER = "30 seconds and one day"


def test_scores_are_in_the_unit_range_best_first(example_index: SpireRetriever) -> None:
    docs = example_index.invoke(QUESTION)
    scores = [d.metadata[SCORE] for d in docs]
    assert scores and all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    first = citations_from(docs[0].metadata)[0]
    assert ANSWER in first.text and first.score == scores[0]


def test_a_score_threshold_keeps_the_answer_on_the_same_scale(example_index: SpireRetriever) -> None:
    plain = example_index.invoke(QUESTION)
    held = example_index.invoke(QUESTION, search_type="similarity_score_threshold", score_threshold=0.3)
    assert any(ANSWER in d.page_content for d in held)
    best_plain, best_held = plain[0].metadata[SCORE], held[0].metadata[SCORE]
    # without the lexical ranking (a threshold turns it off) the strength is the passage's similarity:
    # the same [0, 1] scale, not a rank-fusion value 20 times smaller
    assert 0.3 <= best_held <= 1.0 and abs(best_plain - best_held) < 0.35


def test_the_cut_is_an_option_and_checked(embeddings: CachedEmbeddings) -> None:
    pages = [p for p in example_pages() if p.metadata["source"] == "postgresql-wal.html"]
    retriever = SpireRetriever.from_documents(pages, embeddings, max_citations=1)
    docs = retriever.invoke(QUESTION)
    named = [c for d in docs for c in citations_from(d.metadata) if c.evidence]
    assert len(named) == 1 and ANSWER in named[0].text
    with pytest.raises(TypeError, match="max_citation"):
        SpireRetriever.from_documents([Document(page_content="<p>x</p>")], embeddings, max_citation=1)


def test_the_cut_is_the_same_through_both_adapters(embeddings: CachedEmbeddings) -> None:
    from llama_index.core import Document as LIDocument

    from spire_llamaindex import SpireRetriever as LIRetriever
    from spire_llamaindex import default_embeddings as li_embeddings

    pages = [p for p in example_pages() if p.metadata["source"] == "postgresql-wal.html"]
    lc = SpireRetriever.from_documents(pages, embeddings, budget=600, max_citations=3)
    li = LIRetriever.from_documents(
        [LIDocument(id_="postgresql-wal.html", text=pages[0].page_content)],
        embed_model=li_embeddings(),
        budget=600,
        max_citations=3,
    )
    lc_named = [(c.paths, c.evidence) for d in lc.invoke(QUESTION) for c in citations_from(d.metadata)]
    li_named = [(c.paths, c.evidence) for n in li.retrieve(QUESTION) for c in citations_from(n.node.metadata)]
    assert lc_named == li_named and sum(e for _, e in lc_named) == 3
