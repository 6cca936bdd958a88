"""LlamaIndex on Postgres + pgvector: index the example pages, query from a fresh connection, update, delete."""

from __future__ import annotations

from typing import Any

import psycopg2
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding

from spire_llamaindex import SpireRetriever, delete_sources, read_page, update_index
from spire_llamaindex.postgres import postgres_index

from .conftest import EXAMPLE_PAGES, MANUAL_PAGES, Memo

TABLE = "li_examples"
WAL = "postgresql-wal.html"
JSON = "python-json.html"
QUESTION = "What is the valid range of checkpoint_timeout?"


class MemoEmbedding(BaseEmbedding):
    """A LlamaIndex embedding over the session's :class:`Memo` (the packaged model's vectors)."""

    memo: Any

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.memo.texts([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self.memo.texts(texts)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.memo.query(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self.memo.query(query)


@pytest.fixture(scope="module")
def embed_model(memo: Memo) -> BaseEmbedding:
    return MemoEmbedding(memo=memo)


def units_of(uri: str, doc_id: str) -> int:
    with psycopg2.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM data_{TABLE} WHERE metadata_->>'ref_doc_id' = %s", (doc_id,))
        return int(cur.fetchone()[0])


def test_index_query_update_delete(postgres_uri: str, embed_model: BaseEmbedding) -> None:
    pages = [read_page(EXAMPLE_PAGES / name, EXAMPLE_PAGES) for name in MANUAL_PAGES]
    first = update_index(postgres_index(postgres_uri, table=TABLE, embed_model=embed_model), pages)
    assert sorted(first.added) == sorted(p.node_id for p in pages)
    assert first.nodes > 0 and units_of(postgres_uri, WAL) > 0

    # a query process: fresh store objects, nothing but the database (no files, no cache)
    def ask(question: str) -> list:
        retriever = SpireRetriever(postgres_index(postgres_uri, table=TABLE, embed_model=embed_model), budget=300)
        return retriever.retrieve_subdocuments(question)

    best = ask(QUESTION)[0]
    assert best.doc_id == WAL
    assert "between 30 seconds and one day" in best.text
    # the lexical ranking reads the pages from the database too (pgvector keeps the units' text,
    # so the docstore holds the pages alone): the sentence naming the question's rare words is found
    lexicon = SpireRetriever(postgres_index(postgres_uri, table=TABLE, embed_model=embed_model)).lexicon
    assert lexicon is not None
    hits = lexicon.hits("checkpoint_timeout valid range", 3)
    assert hits and hits[0].doc_id == WAL

    # unchanged pages are skipped; a changed page replaces its units
    again = update_index(postgres_index(postgres_uri, table=TABLE, embed_model=embed_model), pages)
    assert sorted(again.unchanged) == sorted(p.node_id for p in pages) and again.nodes == 0
    wal = next(p for p in pages if p.node_id == WAL)
    changed = read_page(EXAMPLE_PAGES / WAL, EXAMPLE_PAGES)
    changed.set_content(wal.text.replace("between 30 seconds and one day", "between 45 seconds and one week"))
    update = update_index(postgres_index(postgres_uri, table=TABLE, embed_model=embed_model), [changed])
    assert update.updated == [WAL]
    assert units_of(postgres_uri, WAL) == update.nodes
    text = ask(QUESTION)[0].text
    assert "between 45 seconds and one week" in text and "30 seconds and one day" not in text

    # a deleted page leaves neither units nor source
    index = postgres_index(postgres_uri, table=TABLE, embed_model=embed_model)
    assert delete_sources(index, [JSON]) == [JSON]
    assert units_of(postgres_uri, JSON) == 0
    assert not index.docstore.document_exists(JSON)
    assert all(sub.doc_id != JSON for sub in ask("How do I serialize an object to a JSON formatted string?"))


def test_page_hashes_read_in_one_query(postgres_uri: str, embed_model: BaseEmbedding) -> None:
    """The hashes of a question's lexical pages come in one query, and a parse is served for the
    hash read only when it is of that version (a replaced page is parsed again)."""
    from spire_llamaindex._source import QueryPages, SourceDocuments
    from spire_llamaindex.postgres import postgres_pages

    index = postgres_index(postgres_uri, table="li_hashes", embed_model=embed_model)
    pages = [read_page(EXAMPLE_PAGES / name, EXAMPLE_PAGES) for name in MANUAL_PAGES]
    update_index(index, pages)
    ids = [p.node_id for p in pages]
    found = postgres_pages(index.docstore)
    assert found is not None and found.hashes is not None
    sources = SourceDocuments(index.docstore)
    assert sources.hashes([*ids, "not-stored.html"]) == {i: index.docstore.get_document_hash(i) for i in ids}

    old = sources(WAL)
    assert QueryPages(sources)(WAL) is old  # held for the hash stored
    wal = next(p for p in pages if p.node_id == WAL)
    changed = read_page(EXAMPLE_PAGES / WAL, EXAMPLE_PAGES)
    changed.set_content(wal.text.replace("between 30 seconds and one day", "between 45 seconds and one week"))
    update_index(postgres_index(postgres_uri, table="li_hashes", embed_model=embed_model), [changed])
    lookup = QueryPages(sources)
    lookup.lexical(lambda query, n: [])("", 1)  # no hits: nothing read
    new = sources(WAL, current=sources.hashes([WAL])[WAL])
    assert new is not old and "between 45 seconds and one week" in "".join(new.text)


def test_page_hashes_turn_off_on_a_table_not_as_expected(postgres_uri: str, embed_model: BaseEmbedding) -> None:
    """A kvstore table the reader does not find (another layout, another name) turns the one-query
    reader off, so pages are asked one by one as before: no query fails."""
    from spire_llamaindex.postgres import PageHashes

    index = postgres_index(postgres_uri, table="li_layout", embed_model=embed_model)
    update_index(index, [read_page(EXAMPLE_PAGES / WAL, EXAMPLE_PAGES)])
    reader = PageHashes(postgres_uri, "no_such_table")
    assert reader.read([WAL], index.docstore) is None
    assert reader.read([WAL], index.docstore) is None  # and stays off
    assert PageHashes(postgres_uri, "li_layout_pages").read([WAL], index.docstore) == {
        WAL: index.docstore.get_document_hash(WAL)
    }
