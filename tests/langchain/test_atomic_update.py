"""Updates are atomic for readers (issue 12, L4, M7), and LangChain's indexing API re-runs
embed nothing when pages go through ``SpireRetriever.index_pages`` (L3)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, index
from langchain_core.stores import InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore

from spire_core import parse_page, render, sentences
from spire_langchain import SpireRetriever, SpireTransformer, citations_of

from .conftest import KeywordEmbeddings

PAGE = "page.html"
#: two versions of one page whose paths differ: a unit of one is not a unit of the other
OLD = "<title>Versions</title><p>Alpha sentence is here. Beta sentence is here.</p>"
NEW = (
    "<title>Versions</title><h1>Heading</h1><div><p>Gamma sentence is here.</p>"
    "<p>Delta sentence is here. Epsilon sentence is here.</p></div>"
)


def version_pieces(html: str) -> set[str]:
    """The sentences and rendered lines of one version: what a citation of it can show."""
    doc = parse_page(html, doc_id=PAGE)
    return {s.text for s in sentences(doc)} | set(render(doc, list(doc.paths())).split("\n"))


def stored(retriever: SpireRetriever) -> dict[str, dict[str, Any]]:
    """The entries of the retriever's InMemoryVectorStore, by id."""
    store = retriever.vectorstore
    assert isinstance(store, InMemoryVectorStore)
    return store.store


@contextmanager
def frequent_switches() -> Iterator[None]:
    """Switch threads every few microseconds, so that reads interleave with each step of a write."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_queries_during_add_documents_see_the_old_page_or_the_new_one(keyword_embeddings: KeywordEmbeddings) -> None:
    retriever = SpireRetriever.from_documents(
        [Document(page_content=OLD, id=PAGE)],
        keyword_embeddings,
        transformer=SpireTransformer(unit="sentence"),
        budget=400,
    )
    versions = [version_pieces(OLD), version_pieces(NEW)]
    stop = threading.Event()
    errors: list[BaseException] = []
    bad: list[str] = []
    queries = [0]

    def read() -> None:
        while not stop.is_set():
            try:
                docs = retriever.invoke("which sentence is here")
            except BaseException as err:  # every exception is a failure of the test
                errors.append(err)
                continue
            queries[0] += 1
            if [d.metadata["spire_doc_id"] for d in docs] != [PAGE]:
                bad.append(f"not one result for {PAGE}: {docs}")
                continue
            cited = {c.text.rsplit("\n", 1)[-1] for c in citations_of(docs[0])}  # the sentence, without context
            if not any(cited <= v for v in versions):  # one version, never a mix
                bad.append(f"citations from both versions: {sorted(cited)}")

    readers = [threading.Thread(target=read) for _ in range(2)]
    with frequent_switches():
        for t in readers:
            t.start()
        # writes go on until both sides have done enough (a fast writer can make its updates
        # before slow readers finish 20 queries), or for 6 seconds at most
        deadline, updates = time.monotonic() + 6, 0
        try:
            while (updates < 300 or queries[0] < 40) and time.monotonic() < deadline:
                assert retriever.add_documents([Document(page_content=NEW if updates % 2 == 0 else OLD, id=PAGE)])
                updates += 1
        finally:
            stop.set()
            for t in readers:
                t.join(30)
    assert not errors, f"{len(errors)} queries raised, first: {errors[0]!r}"
    assert not bad, f"{len(bad)} bad results, first: {bad[0]}"
    assert updates >= 20 and queries[0] >= 20
    last = NEW if updates % 2 else OLD
    expected = {str(d.id) for d in retriever.transformer.split(Document(page_content=last, id=PAGE))}
    assert set(stored(retriever)) == expected  # no leftovers


def test_a_parse_overlapping_add_documents_is_not_served_after_it(keyword_embeddings: KeywordEmbeddings) -> None:
    """M7: a query's parse of the old page, still running when the page is replaced, is not cached."""
    retriever = SpireRetriever.from_documents([Document(page_content=OLD, id=PAGE)], keyword_embeddings)
    cache = retriever.sources
    cache.invalidate(PAGE)  # parsed by the BM25 build; the query below parses it again
    real, started, release = cache.load, threading.Event(), threading.Event()

    def slow(doc_id: str) -> str | bytes:
        text = real(doc_id)  # the old page, read before the update
        if not started.is_set():
            started.set()
            release.wait(10)
        return text

    cache.load = slow
    reader = threading.Thread(target=cache, args=(PAGE,))
    reader.start()
    assert started.wait(10)
    retriever.add_documents([Document(page_content=NEW, id=PAGE)])
    release.set()
    reader.join(10)
    assert [s.text for s in sentences(cache(PAGE))] == [s.text for s in sentences(parse_page(NEW))]
    [doc] = retriever.invoke("which sentence is here")
    assert "Gamma sentence is here." in doc.page_content and "Alpha" not in doc.page_content


def pages(n: int, edited: int | None = None) -> list[Document]:
    """``n`` pages of 7 sentences each (page ``edited`` with one sentence changed)."""
    out = []
    for i in range(n):
        body = " ".join(f"Page {i} sentence {k} is here." for k in range(7))
        if i == edited:
            body = body.replace("sentence 3 is here", "sentence 3 was edited")
        out.append(Document(page_content=f"<title>P{i}</title><p>{body}</p>", id=f"p{i}.html"))
    return out


def test_langchain_index_api_splits_pages_across_batches_and_re_embeds_them(
    keyword_embeddings: KeywordEmbeddings,
) -> None:
    """Why index_pages exists: plain ``index(cleanup="incremental")`` re-adds on an identical run."""
    store, records = InMemoryVectorStore(keyword_embeddings), InMemoryRecordManager("plain")
    records.create_schema()
    units = SpireTransformer(unit="sentence").split_documents(pages(6))
    for _ in range(2):
        result = index(
            units,
            records,
            store,
            cleanup="incremental",
            source_id_key="spire_doc_id",
            batch_size=10,
            key_encoder="sha256",
        )
    assert result["num_added"] > 0  # the identical second run re-embedded pages cut by a batch boundary


def test_index_pages_re_run_adds_nothing_and_a_change_replaces_only_its_page(
    keyword_embeddings: KeywordEmbeddings,
) -> None:
    retriever = SpireRetriever(
        vectorstore=InMemoryVectorStore(keyword_embeddings),
        docstore=InMemoryStore(),
        transformer=SpireTransformer(unit="sentence"),
    )
    records = InMemoryRecordManager("spire")
    records.create_schema()
    first = retriever.index_pages(pages(6), records, batch_size=10)
    assert first["num_added"] == 6 * 7 and first["num_deleted"] == 0
    again = retriever.index_pages(pages(6), records, batch_size=10)
    assert again["num_added"] == 0 and again["num_deleted"] == 0 and again["num_skipped"] == 6 * 7
    edited = retriever.index_pages(pages(6, edited=2), records, batch_size=10)
    assert (edited["num_added"], edited["num_deleted"]) == (1, 1)
    [doc] = retriever.invoke("page 2 sentence 3 was edited", k=1)
    assert doc.metadata["spire_doc_id"] == "p2.html" and "sentence 3 was edited" in doc.page_content
    full = retriever.index_pages(pages(4, edited=2), records, cleanup="full", batch_size=10)
    assert full["num_added"] == 0 and full["num_deleted"] == 2 * 7  # the pages not given any more
    assert len(stored(retriever)) == 4 * 7


def test_index_pages_full_cleanup_removes_the_pages_from_every_retrieval(
    keyword_embeddings: KeywordEmbeddings,
) -> None:
    """A page that cleanup="full" reports deleted is never returned nor cited again (issue 50): its
    units, its docstore entry and its sentences in the lexical index all go."""
    retriever = SpireRetriever(
        vectorstore=InMemoryVectorStore(keyword_embeddings),
        docstore=InMemoryStore(),
        transformer=SpireTransformer(unit="sentence"),
    )
    records = InMemoryRecordManager("spire")
    records.create_schema()
    retriever.index_pages(pages(3), records)
    [before] = retriever.invoke("Page 2 sentence 4", k=1)
    assert before.metadata["spire_doc_id"] == "p2.html"
    full = retriever.index_pages(pages(2), records, cleanup="full")
    assert full["num_deleted"] == 7
    assert list(retriever.docstore.yield_keys()) == ["p0.html", "p1.html"]
    for query in ("Page 2 sentence 4", "page 2", "sentence is here"):
        for search_type in ("similarity", "mmr"):
            retriever.search_type = search_type  # type: ignore[assignment]
            docs = retriever.invoke(query)
            assert docs and all(d.metadata["spire_doc_id"] != "p2.html" for d in docs)
            assert all(c.doc_id != "p2.html" for d in docs for c in citations_of(d))
            assert "Page 2" not in "".join(d.page_content for d in docs)
    assert all(r.doc_id != "p2.html" for r in retriever.retrieve_subdocuments("Page 2 sentence 4"))
