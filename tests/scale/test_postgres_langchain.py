"""LangChain on Postgres + pgvector: index the example pages, query from a fresh connection, update, delete."""

from __future__ import annotations

import psycopg
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from spire_langchain.postgres import postgres_retriever

from .conftest import EXAMPLE_PAGES, MANUAL_PAGES, Memo

TABLE = "lc_examples"
WAL = "postgresql-wal.html"
JSON = "python-json.html"
QUESTION = "What is the valid range of checkpoint_timeout?"


class MemoEmbeddings(Embeddings):
    """LangChain embeddings over the session's :class:`Memo` (the packaged model's vectors)."""

    def __init__(self, memo: Memo) -> None:
        self.memo = memo

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.memo.texts(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.memo.query(text)


@pytest.fixture(scope="module")
def embeddings(memo: Memo) -> Embeddings:
    return MemoEmbeddings(memo)


def page(name: str, html: str | None = None) -> Document:
    text = html if html is not None else (EXAMPLE_PAGES / name).read_text(encoding="utf-8")
    return Document(id=name, page_content=text, metadata={"source": name})


def units_of(uri: str, doc_id: str) -> int:
    with psycopg.connect(uri) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM {TABLE} WHERE langchain_metadata::text LIKE %s",
            (f'%"{doc_id}"%',),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_index_query_update_delete(postgres_uri: str, embeddings: Embeddings) -> None:
    writer = postgres_retriever(postgres_uri, embeddings, table=TABLE)
    added = writer.add_documents([page(name) for name in MANUAL_PAGES])
    assert added and units_of(postgres_uri, WAL) > 0 and units_of(postgres_uri, JSON) > 0

    # a query process: fresh store objects, nothing but the database (no files, no cache)
    def ask(question: str) -> list[Document]:
        return postgres_retriever(postgres_uri, embeddings, table=TABLE, budget=300).invoke(question)

    best = ask(QUESTION)[0]
    assert best.metadata["source"] == WAL
    assert "between 30 seconds and one day" in best.page_content

    # unchanged pages are skipped; a changed page replaces its sentences
    again = postgres_retriever(postgres_uri, embeddings, table=TABLE)
    assert again.add_documents([page(n) for n in MANUAL_PAGES]) == []
    html = (EXAMPLE_PAGES / WAL).read_text(encoding="utf-8")
    changed = html.replace("between 30 seconds and one day", "between 45 seconds and one week")
    replaced = postgres_retriever(postgres_uri, embeddings, table=TABLE).add_documents([page(WAL, changed)])
    assert units_of(postgres_uri, WAL) == len(replaced)
    text = ask(QUESTION)[0].page_content
    assert "between 45 seconds and one week" in text and "30 seconds and one day" not in text

    # a deleted page leaves neither sentences nor source
    remover = postgres_retriever(postgres_uri, embeddings, table=TABLE)
    assert remover.delete_sources([JSON]) == [JSON]
    assert units_of(postgres_uri, JSON) == 0
    assert remover.docstore.mget([JSON]) == [None]
    assert all(d.metadata["source"] != JSON for d in ask("How do I serialize an object to a JSON formatted string?"))
