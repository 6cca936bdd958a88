"""SpireRetriever on small pages with a deterministic lexical embedding: results, budget, k, scores, upserts."""

from __future__ import annotations

import asyncio

import pytest
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document
from langchain_core.stores import InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_qdrant import QdrantVectorStore

import spire_langchain.retriever as retriever_module
from spire_core import Citation, approx_tokens, decode_paths, own_paths, render
from spire_langchain import SpireRetriever, SpireTransformer, citations_of, numbered_citations

from .conftest import SMALL_PAGES, KeywordEmbeddings, example_pages, small_pages


@pytest.fixture
def retriever(keyword_embeddings: KeywordEmbeddings) -> SpireRetriever:
    return SpireRetriever.from_documents(small_pages(), keyword_embeddings)


def test_one_document_per_page_with_citations(retriever: SpireRetriever) -> None:
    docs = retriever.invoke("espresso shot seconds")
    assert docs[0].metadata["spire_doc_id"] == "coffee.html"
    assert docs[0].metadata["source"] == "coffee.html"  # the page's own metadata travels
    assert "spire_ids" not in docs[0].metadata
    assert len({d.metadata["spire_doc_id"] for d in docs}) == len(docs)
    for doc in docs:
        page = retriever.sources(doc.metadata["spire_doc_id"])
        paths = decode_paths(doc.metadata["spire_paths"])
        seeds = decode_paths(doc.metadata["spire_seeds"])
        assert seeds <= paths
        assert render(page, paths) == doc.page_content  # the text is a rendering of the path set
        assert doc.metadata["spire_cost"] == approx_tokens(doc.page_content)
        citations = citations_of(doc)
        assert citations and all(c.doc_id == doc.metadata["spire_doc_id"] for c in citations)
        assert frozenset().union(*(c.paths for c in citations)) == seeds
        for c in citations:
            assert c.text == render(page, own_paths(page, c.paths))
    espresso = [c for c in citations_of(docs[0]) if "25 to 30 seconds" in c.text]
    assert espresso and "## Espresso" in espresso[0].text
    scores = [d.metadata["spire_score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_budget_bounds_the_delivered_text(retriever: SpireRetriever) -> None:
    wide = retriever.invoke("brewing water minutes degrees")
    narrow = retriever.invoke("brewing water minutes degrees", budget=30)
    assert sum(d.metadata["spire_cost"] for d in narrow) <= 30
    assert sum(d.metadata["spire_cost"] for d in wide) > 30
    assert len(narrow) < len(wide)
    with pytest.raises(ValueError, match="budget"):
        retriever.invoke("coffee", budget=0)


def test_k_caps_the_pages_and_the_budget_goes_to_them(retriever: SpireRetriever) -> None:
    everything = retriever.invoke("brewing tea coffee cocoa tyre")
    assert len(everything) == 4
    two = retriever.invoke("brewing tea coffee cocoa tyre", k=2)
    assert [d.metadata["spire_doc_id"] for d in two] == [d.metadata["spire_doc_id"] for d in everything[:2]]
    capped = retriever.model_copy(update={"k": 1})
    assert len(capped.invoke("brewing tea coffee cocoa tyre")) == 1
    with pytest.raises(ValueError, match="must be positive"):
        retriever.invoke("coffee", k=0)


def test_search_kwargs_reach_the_store(retriever: SpireRetriever) -> None:
    only_tea = retriever.invoke("brewing", filter=lambda d: d.metadata["spire_doc_id"] == "tea.html")
    assert [d.metadata["spire_doc_id"] for d in only_tea] == ["tea.html"]
    fixed = retriever.model_copy(update={"search_kwargs": {"filter": lambda d: d.metadata["source"] == "cocoa.html"}})
    assert [d.metadata["spire_doc_id"] for d in fixed.invoke("brewing")] == ["cocoa.html"]


def test_a_faiss_filter_finds_the_filtered_pages_evidence(keyword_embeddings: KeywordEmbeddings) -> None:
    # FAISS filters the fetch_k=20 nearest units only: a page outside them used to give [] silently
    retriever = SpireRetriever.from_documents(
        example_pages() + small_pages(),
        keyword_embeddings,
        vectorstore_cls=FAISS,
        search_kwargs={"filter": {"source": "coffee.html"}},  # the as_retriever idiom
    )
    query = "How long is the shot of espresso?"
    assert retriever.vectorstore.similarity_search_with_score(query, 256, filter={"source": "coffee.html"}) == []
    for docs in (retriever.invoke(query), asyncio.run(retriever.ainvoke(query)), retriever.invoke(query, fetch_k=40)):
        assert [d.metadata["spire_doc_id"] for d in docs] == ["coffee.html"]
        assert "An espresso shot takes about 25 to 30 seconds to extract." in docs[0].page_content


def test_fetch_k_reaches_only_a_store_that_takes_it(keyword_embeddings: KeywordEmbeddings) -> None:
    retriever = SpireRetriever.from_documents(
        small_pages(),
        keyword_embeddings,
        vectorstore_cls=QdrantVectorStore,  # whose search refuses unknown arguments
        vectorstore_kwargs={"location": ":memory:", "collection_name": "fetch_k"},
        search_kwargs={"k": 1, "fetch_k": 50},
    )
    docs = retriever.invoke("espresso shot seconds")
    assert [d.metadata["spire_doc_id"] for d in docs] == ["coffee.html"]
    assert "25 to 30 seconds" in docs[0].page_content
    mmr = retriever.model_copy(update={"search_type": "mmr"})  # MMR reads it
    assert "25 to 30 seconds" in mmr.invoke("espresso shot seconds")[0].page_content
    # an MMR search returns no scores: a threshold would hold ranks, so it is refused, not misread
    with pytest.raises(ValueError, match="score_threshold needs a similarity search"):
        mmr.invoke("espresso shot seconds", score_threshold=0.5)


@pytest.mark.filterwarnings("ignore:Relevance scores must be between")  # FAISS's L2 normalisation
@pytest.mark.parametrize("store", [InMemoryVectorStore, FAISS])  # without relevance scores, and with
def test_a_score_threshold_keeps_the_hits_that_reach_it(keyword_embeddings: KeywordEmbeddings, store: type) -> None:
    retriever = SpireRetriever.from_documents(small_pages(), keyword_embeddings, vectorstore_cls=store)
    query = "espresso shot seconds"
    assert len(retriever.invoke(query)) == 4
    thresholded = retriever.model_copy(
        update={"search_type": "similarity_score_threshold", "search_kwargs": {"score_threshold": 0.3}}
    )
    kept = thresholded.invoke(query)
    assert [d.metadata["spire_doc_id"] for d in kept] == ["coffee.html"]
    assert "An espresso shot takes about 25 to 30 seconds to extract." in kept[0].page_content
    assert "60 grams" not in kept[0].page_content  # the pour-over passage scores under 0.3
    assert all(c.score is not None and c.score >= 0.3 for c in citations_of(kept[0]))
    assert retriever.invoke(query, score_threshold=0.99) == []
    with pytest.raises(ValueError, match="score_threshold"):
        retriever.model_copy(update={"search_type": "similarity_score_threshold"}).invoke(query)


def test_faiss_distances_become_similarities_in_store_order(keyword_embeddings: KeywordEmbeddings) -> None:
    # the store's numbers as scores: the vector ranking alone (fused results are scored by rank fusion)
    retriever = SpireRetriever.from_documents(small_pages(), keyword_embeddings, vectorstore_cls=FAISS, lexical=False)
    query = "tyre pressure psi road"
    ranked = retriever.vectorstore.similarity_search_with_score(query, k=8)
    distances = [s for _, s in ranked]
    assert distances == sorted(distances) and distances[0] < distances[-1]  # FAISS L2: lower is closer
    docs = retriever.invoke(query)
    assert retriever._distance is True
    assert docs[0].metadata["spire_doc_id"] == ranked[0][0].metadata["spire_doc_id"] == "bicycles.html"
    best = citations_of(docs[0])[0]
    assert best.score == pytest.approx(1 / (1 + float(distances[0])))
    assert all(0 < c.score <= 1 for d in docs for c in citations_of(d) if c.score is not None)
    in_memory = SpireRetriever.from_documents(small_pages(), keyword_embeddings, lexical=False)
    in_memory.invoke(query)
    assert in_memory._distance is False  # cosine similarity: higher is closer


@pytest.mark.filterwarnings("ignore:Relevance scores must be between")  # FAISS's L2 normalisation
@pytest.mark.parametrize(("mode", "store"), [("similarity", InMemoryVectorStore), ("relevance", FAISS)])
def test_explicit_score_modes(keyword_embeddings: KeywordEmbeddings, mode: str, store: type) -> None:
    retriever = SpireRetriever.from_documents(
        small_pages(), keyword_embeddings, vectorstore_cls=store, scores=mode, lexical=False
    )
    docs = retriever.invoke("espresso shot seconds")
    assert docs[0].metadata["spire_doc_id"] == "coffee.html"
    assert retriever._distance is None  # nothing inferred when the mode is given
    # the store's own numbers are reported, in the store's order
    best = retriever._raw("espresso shot seconds", 1, {})[0][1]
    assert docs[0].metadata["spire_score"] == pytest.approx(float(best))


def test_foreign_and_stale_entries_are_skipped_loudly(
    retriever: SpireRetriever, caplog: pytest.LogCaptureFixture
) -> None:
    store = retriever.vectorstore
    store.add_documents([Document(page_content="espresso espresso shot", metadata={"source": "elsewhere"})])
    gone = SpireTransformer().transform_documents(
        [Document(page_content="<p>An espresso shot from a deleted page.</p>", id="deleted.html")]
    )
    store.add_documents(list(gone), ids=[str(d.id) for d in gone])
    docs = retriever.invoke("espresso shot")
    assert {d.metadata["spire_doc_id"] for d in docs} <= set(SMALL_PAGES)
    assert "coffee.html" in {d.metadata["spire_doc_id"] for d in docs}
    assert "without SPIRE metadata skipped" in caplog.text
    assert "source pages missing, their hits skipped: 'deleted.html'" in caplog.text


def test_pages_are_parsed_once(retriever: SpireRetriever) -> None:
    cache = retriever.sources
    assert all(cache.cached(page) for page in SMALL_PAGES)  # parsed once already, by the BM25 build
    for page in SMALL_PAGES:
        cache.invalidate(page)
    load = cache.load
    loaded: list[str] = []

    def counting(source: str) -> str | bytes:
        loaded.append(source)
        return load(source)

    cache.load = counting
    first = retriever.invoke("espresso tea")
    retriever.invoke("espresso tea")
    retriever.invoke("coffee water degrees tyre")
    assert first and loaded
    assert sorted(loaded) == sorted(set(loaded))  # each page loaded and parsed once, then served from the LRU
    assert cache("coffee.html") is cache("coffee.html")


def test_plain_text_pages_round_trip(keyword_embeddings: KeywordEmbeddings) -> None:
    text = "Sourdough needs a starter.\n\nFeed the starter every day with flour and water."
    retriever = SpireRetriever.from_documents([Document(page_content=text, id="bread.txt")], keyword_embeddings)
    docs = retriever.invoke("feed the starter flour")
    assert docs[0].metadata["spire_doc_id"] == "bread.txt"
    assert "Feed the starter every day" in docs[0].page_content


def _ids(retriever: SpireRetriever, source: str) -> list[str]:
    record = retriever.docstore.mget([source])[0]
    assert record is not None
    return list(record.metadata["spire_ids"])


@pytest.mark.parametrize("store", [InMemoryVectorStore, FAISS])
def test_upsert_replaces_a_changed_page(keyword_embeddings: KeywordEmbeddings, store: type) -> None:
    retriever = SpireRetriever.from_documents(small_pages(), keyword_embeddings, vectorstore_cls=store)
    old_ids = _ids(retriever, "tea.html")
    assert "steep for 4 minutes" in retriever.invoke("black tea steep minutes")[0].page_content
    assert retriever.add_documents(small_pages()) == []  # nothing changed: nothing re-embedded
    changed = """<html><head><title>Brewing tea</title></head><body><h1>Brewing tea</h1>
<p>Oolong tea: rinse the leaves, then steep for 3 minutes at 90 degrees.</p></body></html>"""
    added = retriever.add_documents([Document(page_content=changed, metadata={"source": "tea.html", "v": 2})])
    assert added == _ids(retriever, "tea.html") and added
    stale = set(old_ids) - set(added)
    assert stale and not retriever.vectorstore.get_by_ids(sorted(stale))
    assert len(retriever.vectorstore.get_by_ids(added)) == len(added)
    docs = retriever.invoke("black tea steep minutes")
    tea = [d for d in docs if d.metadata["spire_doc_id"] == "tea.html"]
    assert tea and "Oolong" in tea[0].page_content and "Black tea" not in tea[0].page_content
    assert tea[0].metadata["v"] == 2
    assert all("Black tea" not in c.text for d in docs for c in citations_of(d))
    assert retriever.delete_sources(["tea.html", "nowhere.html"]) == ["tea.html"]  # the pages that were there
    assert not retriever.vectorstore.get_by_ids(added)
    assert "tea.html" not in {d.metadata["spire_doc_id"] for d in retriever.invoke("oolong tea")}


def test_upsert_without_recorded_ids(keyword_embeddings: KeywordEmbeddings) -> None:
    """A docstore filled by hand has no id record: the old sentence ids are recomputed from the old page."""
    pages = small_pages()
    sentences = SpireTransformer().transform_documents(pages)
    store = InMemoryVectorStore(keyword_embeddings)
    store.add_documents(list(sentences), ids=[str(d.id) for d in sentences])
    docstore = InMemoryStore()
    docstore.mset([(p.metadata["source"], p) for p in pages])
    retriever = SpireRetriever(vectorstore=store, docstore=docstore)
    before = len(store.store)
    retriever.add_documents([Document(page_content="<p>Cocoa is gone.</p>", metadata={"source": "cocoa.html"})])
    cocoa = [d for d in sentences if d.metadata["spire_doc_id"] == "cocoa.html"]
    assert len(store.store) == before - len(cocoa) + 1


async def test_async_matches_sync(retriever: SpireRetriever) -> None:
    sync = retriever.invoke("espresso shot seconds", k=2)
    asynchronous = await retriever.ainvoke("espresso shot seconds", k=2)
    assert [(d.page_content, d.metadata) for d in asynchronous] == [(d.page_content, d.metadata) for d in sync]


def test_numbered_citations_map_back(retriever: SpireRetriever) -> None:
    docs = retriever.invoke("espresso shot seconds")
    numbered = numbered_citations(docs)
    text = retriever.format_citations(docs)
    assert text.startswith("Source: coffee.html\n")
    for n, citation in enumerate(numbered, start=1):
        assert f" [{n}]" in text and f"Source: {citation.doc_id}" in text
    plain = Document(page_content="no SPIRE metadata here", metadata={"source": "x"})
    assert numbered_citations([plain]) == [Citation("x", frozenset(), "no SPIRE metadata here")]


async def test_many_concurrent_async_queries(retriever: SpireRetriever) -> None:
    """More concurrent queries than executor threads: the async store search must still get a thread."""
    queries = [f"espresso shot seconds {n}" for n in range(24)]
    # (the default executor deadlocks here; the wait only turns a hang into a failure)
    results = await asyncio.wait_for(asyncio.gather(*(retriever.ainvoke(q) for q in queries)), timeout=120)
    assert all(r and r[0].metadata["spire_doc_id"] == "coffee.html" for r in results)


def test_one_store_search_per_question_whatever_the_rounds(
    retriever: SpireRetriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    search = InMemoryVectorStore.similarity_search_with_score

    def counted(self: InMemoryVectorStore, query: str, k: int = 4, **kwargs: object) -> object:
        asked.append(k)
        return search(self, query, k, **kwargs)

    monkeypatch.setattr(InMemoryVectorStore, "similarity_search_with_score", counted)
    wide = retriever.model_copy(update={"first_k": 2, "max_rounds": 4, "budget": 5000})
    once = wide.retrieve_subdocuments("brewing water minutes degrees")
    assert asked == [16]  # one search (one query embedding), for the widest round: 2 << 3
    # the same results as a search per round (the store's order is the same for every k)
    monkeypatch.setattr(retriever_module, "searched_once", lambda search, widest: search)
    asked.clear()
    per_round = wide.retrieve_subdocuments("brewing water minutes degrees")
    assert len(asked) > 1
    assert [(s.doc_id, s.paths, s.text) for s in once] == [(s.doc_id, s.paths, s.text) for s in per_round]
