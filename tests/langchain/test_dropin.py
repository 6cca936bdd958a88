"""LangChain drop-in behaviour: what code written for a TextSplitter and a stock vector-store retriever expects."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from spire_langchain import SpireRetriever, SpireTransformer
from tests.langchain.conftest import SMALL_PAGES, KeywordEmbeddings, small_pages

COFFEE = SMALL_PAGES["coffee.html"]


def test_text_splitter_methods_agree() -> None:
    splitter = SpireTransformer()
    pages = small_pages()
    expected = list(splitter.transform_documents(pages))
    assert expected
    assert splitter.split_documents(pages) == expected
    assert splitter.invoke(pages) == expected
    texts = [p.page_content for p in pages]
    metadatas = [p.metadata for p in pages]
    assert splitter.create_documents(texts, metadatas) == expected
    assert splitter.split_text(COFFEE) == [d.page_content for d in splitter.split_documents([pages[0]])]
    with pytest.raises(ValueError, match="metadatas"):
        splitter.create_documents(texts, metadatas[:1])


async def test_async_invoke_matches() -> None:
    splitter = SpireTransformer()
    assert await splitter.ainvoke(small_pages()) == splitter.split_documents(small_pages())


def test_from_documents_takes_strings_documents_and_paths(tmp_path: Path) -> None:
    page = tmp_path / "tea.html"
    page.write_text(SMALL_PAGES["tea.html"], encoding="utf-8")
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\n## Cocoa\n\n- Whisk cocoa powder into warm milk.\n- Serve hot.\n", encoding="utf-8")
    bikes = Document(page_content=SMALL_PAGES["bicycles.html"], metadata={"source": "bicycles.html"})
    retriever = SpireRetriever.from_documents([COFFEE, page, notes, bikes], KeywordEmbeddings())
    sources = {d.metadata["spire_doc_id"] for d in retriever.invoke("coffee tea cocoa tyre pressure", k=10)}
    assert {str(page), str(notes), "bicycles.html"} <= sources
    assert any(s.startswith("sha256:") for s in sources)  # the bare string: a content id
    cocoa = retriever.invoke("whisk cocoa powder")[0]
    assert cocoa.page_content.startswith("# Notes\n\n## Cocoa")  # Markdown read as structure


def test_a_file_name_string_is_read_as_the_file(embeddings: Embeddings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's snippet: ``from_documents(["examples/pages/postgresql-wal.html"])`` indexes the page,
    not its name, and the README's question retrieves the answer sentence."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    retriever = SpireRetriever.from_documents(["examples/pages/postgresql-wal.html"], embeddings)
    [page] = retriever.invoke("What is the valid range of checkpoint_timeout?")
    assert page.metadata["spire_doc_id"] == "examples/pages/postgresql-wal.html"
    assert "The valid range is between 30 seconds and one day." in page.page_content
    text = SpireRetriever.from_documents(["<p>examples/pages/postgresql-wal.html is a file name.</p>"], embeddings)
    assert "is a file name" in text.invoke("file name")[0].page_content  # markup: a page, whatever it names


def test_a_page_file_name_naming_no_file_is_refused(keyword_embeddings: KeywordEmbeddings) -> None:
    """``from_documents(["missing.html"])`` raises, naming the file, instead of indexing the name as a page."""
    with pytest.raises(FileNotFoundError, match=r"missing\.html"):
        SpireRetriever.from_documents(["missing.html"], keyword_embeddings)


def test_search_kwargs_k_caps_the_pages(keyword_embeddings: KeywordEmbeddings) -> None:
    """``search_kwargs={"k": 4}``, the LangChain idiom, caps the pages (it raised a TypeError in the store call)."""
    retriever = SpireRetriever.from_documents(small_pages(), keyword_embeddings, search_kwargs={"k": 1})
    docs = retriever.invoke("coffee tea cocoa tyre pressure")
    assert len(docs) == 1
    assert len(retriever.invoke("coffee tea cocoa tyre pressure", k=3)) == 3


def test_from_documents_vectorstore_kwargs_and_progress(capsys: pytest.CaptureFixture[str]) -> None:
    from langchain_qdrant import QdrantVectorStore

    retriever = SpireRetriever.from_documents(
        small_pages(),
        KeywordEmbeddings(),
        vectorstore_cls=QdrantVectorStore,
        vectorstore_kwargs={"location": ":memory:", "collection_name": "brewing"},
        show_progress=True,
    )
    assert retriever.vectorstore.collection_name == "brewing"
    assert "coffee" in retriever.invoke("grams of coffee per litre")[0].page_content
    assert "embedding" in capsys.readouterr().err


def test_ids_are_namespaced_by_collection() -> None:
    pages = small_pages()[:1]
    a = SpireRetriever(vectorstore=InMemoryVectorStore(KeywordEmbeddings()), docstore=_store(), id_namespace="a")
    b = SpireRetriever(vectorstore=InMemoryVectorStore(KeywordEmbeddings()), docstore=_store(), id_namespace="b")
    ids_a, ids_b = a.add_documents(pages), b.add_documents(pages)
    assert ids_a and not set(ids_a) & set(ids_b)
    again = SpireRetriever(vectorstore=InMemoryVectorStore(KeywordEmbeddings()), docstore=_store(), id_namespace="a")
    assert again.add_documents(pages) == ids_a  # deterministic within a namespace


def test_an_upsert_that_does_not_land_warns(caplog: pytest.LogCaptureFixture) -> None:
    class Lossy(InMemoryVectorStore):
        """Keeps one unit of each batch only, as a store whose ids belong to another collection does."""

        def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
            ids = kwargs.pop("ids")
            super().add_documents(documents[:1], ids=ids[:1], **kwargs)
            return list(ids)

    retriever = SpireRetriever(vectorstore=Lossy(KeywordEmbeddings()), docstore=_store())
    with caplog.at_level(logging.WARNING):
        retriever.add_documents(small_pages()[:1])
    assert any("did not land" in r.getMessage() for r in caplog.records)


def test_stripped_html_warns(caplog: pytest.LogCaptureFixture) -> None:
    stripped = Document(page_content="Brewing coffee Pour-over Use 60 grams of coffee.", metadata={"source": "c.html"})
    with caplog.at_level(logging.WARNING):
        SpireTransformer().split_documents([stripped])
    messages = [r.getMessage() for r in caplog.records]
    assert any("declared HTML but holds no tags" in m and "c.html" in m for m in messages)


def test_mmr_search(keyword_embeddings: KeywordEmbeddings) -> None:
    retriever = SpireRetriever.from_documents(small_pages(), keyword_embeddings, search_type="mmr")
    found = retriever.invoke("brewing coffee water temperature")
    assert found and found[0].metadata["spire_doc_id"] == "coffee.html"


def test_run_manager_gets_the_result_summary(keyword_embeddings: KeywordEmbeddings) -> None:
    class Texts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.texts: list[str] = []

        def on_text(self, text: str, **kwargs: Any) -> None:
            self.texts.append(text)

    handler = Texts()
    retriever = SpireRetriever.from_documents(small_pages(), keyword_embeddings, budget=200)
    docs = retriever.invoke("grams of coffee", config={"callbacks": [handler]})
    assert handler.texts, "nothing reported to the callbacks"
    assert f"{len(docs)} page(s)" in handler.texts[-1]


def _store() -> Any:
    from langchain_core.stores import InMemoryStore

    return InMemoryStore()


class ConstantEmbeddings(Embeddings):
    """Every text the same vector: the vector ranking says nothing, only the lexical signal does."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]


def test_the_lexical_signal_finds_the_sentence_naming_the_rare_words() -> None:
    filler = " ".join(f"Paragraph {i} talks about ordinary settings of the system." for i in range(12))
    pages = [Document(page_content=f"<h1>Page {n}</h1><p>{filler}</p>", id=f"p{n}.html") for n in range(6)]
    pages.append(
        Document(page_content=f"<h1>Tuning</h1><p>{filler} The frobnicator depth defaults to 42.</p>", id="t.html")
    )
    retriever = SpireRetriever.from_documents(pages, ConstantEmbeddings(), budget=60)
    assert "The frobnicator depth defaults to 42." in " ".join(
        d.page_content for d in retriever.invoke("frobnicator depth")
    )
    retriever.add_documents([Document(page_content="<p>The quux limit is 7.</p>", id="q.html")])
    assert "The quux limit is 7." in " ".join(d.page_content for d in retriever.invoke("quux limit"))
