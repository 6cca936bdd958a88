"""The lexical index kept in Postgres: saved after indexing, restored by a new query process's
retriever without parsing the unchanged pages, rebuilt from the pages when it cannot be read."""

from __future__ import annotations

import gzip
import io
import json
import logging
from typing import Any

import numpy as np
import psycopg2
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from sqlalchemy.exc import OperationalError

from spire_core import HTML
from spire_core.query.lexical import LexicalIndex
from spire_llamaindex import SpireRetriever, read_page, update_index
from spire_llamaindex.postgres import LexiconTable, PostgresLexicon, postgres_index, postgres_pages, save_lexicon

from .conftest import EXAMPLE_PAGES, MANUAL_PAGES, Memo
from .test_postgres_llamaindex import JSON, QUESTION, WAL, MemoEmbedding

#: found by the lexical ranking in the WAL page's sentence on checkpoint_timeout's range
LEXICAL = "checkpoint_timeout valid range"


@pytest.fixture(scope="module")
def embed_model(memo: Memo) -> BaseEmbedding:
    return MemoEmbedding(memo=memo)


def indexed(uri: str, table: str, embed_model: BaseEmbedding) -> VectorStoreIndex:
    index = postgres_index(uri, table=table, embed_model=embed_model)
    update_index(index, [read_page(EXAMPLE_PAGES / name, EXAMPLE_PAGES) for name in MANUAL_PAGES])
    return index


def fresh(uri: str, table: str, embed_model: BaseEmbedding) -> tuple[SpireRetriever, list[str]]:
    """The retriever of a new query process (fresh store objects), and the pages its lexicon parses."""
    retriever = SpireRetriever(postgres_index(uri, table=table, embed_model=embed_model), budget=300)
    lexicon = retriever.lexicon
    assert isinstance(lexicon, PostgresLexicon)
    parse, parsed = lexicon.pages, []

    def spy(doc_id: str) -> Any:
        parsed.append(doc_id)
        return parse(doc_id)

    lexicon.pages = spy
    return retriever, parsed


def answers(retriever: SpireRetriever) -> None:
    """The lexical ranking finds the sentence on the question's rare words, and the question is answered."""
    assert retriever.lexicon is not None
    hits = retriever.lexicon.hits(LEXICAL, 3)
    assert hits and hits[0].doc_id == WAL
    best = retriever.retrieve_subdocuments(QUESTION)[0]
    assert best.doc_id == WAL and "between 30 seconds and one day" in best.text


def set_blob(uri: str, table: str, data: bytes) -> None:
    with psycopg2.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(f"UPDATE data_{table}_lexical SET data = %s", (psycopg2.Binary(data),))
        assert cur.rowcount == 1


def saved_blob(uri: str, table: str) -> bytes:
    with psycopg2.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT data FROM data_{table}_lexical")
        return bytes(cur.fetchone()[0])


def test_a_new_retriever_restores_the_saved_index(
    postgres_uri: str, embed_model: BaseEmbedding, caplog: pytest.LogCaptureFixture
) -> None:
    table = "lex_restore"
    index = indexed(postgres_uri, table, embed_model)
    caplog.set_level(logging.WARNING, logger="spire_llamaindex")
    before, parsed = fresh(postgres_uri, table, embed_model)  # nothing saved yet: built from every page
    answers(before)
    assert sorted(parsed) == sorted(MANUAL_PAGES) and not caplog.records  # no table yet is no warning

    assert save_lexicon(index)
    retriever, parsed = fresh(postgres_uri, table, embed_model)
    answers(retriever)
    assert parsed == []  # restored: no page parsed for the lexical index
    assert sorted(retriever.lexicon.index.pages) == sorted(MANUAL_PAGES)  # type: ignore[union-attr]

    # an index the caller restores is kept, not replaced by the saved one
    given, parsed = fresh(postgres_uri, table, embed_model)
    assert given.lexicon is not None
    given.lexicon.restore(LexicalIndex())
    given.lexicon.refresh()
    assert sorted(parsed) == sorted(MANUAL_PAGES)


def test_a_page_changed_after_the_save_is_indexed_again(postgres_uri: str, embed_model: BaseEmbedding) -> None:
    table = "lex_changed"
    assert save_lexicon(indexed(postgres_uri, table, embed_model))
    html = "<html><head><title>Zanzibar</title></head><body><p>The zanzibar_interval is seven fortnights.</p></body>"
    changed = read_page(EXAMPLE_PAGES / WAL, EXAMPLE_PAGES)
    changed.set_content(html)
    assert update_index(postgres_index(postgres_uri, table=table, embed_model=embed_model), [changed]).updated == [WAL]

    retriever, parsed = fresh(postgres_uri, table, embed_model)
    assert retriever.lexicon is not None
    new = retriever.lexicon.hits("zanzibar_interval fortnights", 3)
    assert new and new[0].doc_id == WAL
    assert all(hit.doc_id != WAL for hit in retriever.lexicon.hits(LEXICAL, 10))  # the old version's words are gone
    assert parsed == [WAL]  # the unchanged page is not parsed

    # saved again: the next process parses nothing, and finds the new version
    assert save_lexicon(postgres_index(postgres_uri, table=table, embed_model=embed_model))
    again, parsed = fresh(postgres_uri, table, embed_model)
    assert again.lexicon is not None and again.lexicon.hits("zanzibar_interval", 3)[0].doc_id == WAL
    assert parsed == []


def older_format(blob: bytes) -> bytes:
    """``blob`` as an index of an older format would be written (the same arrays, format 2)."""
    with np.load(io.BytesIO(blob)) as archive:
        parts = {key: archive[key] for key in archive.files}
    meta = json.loads(gzip.decompress(parts["index"].tobytes()))
    meta["format"] = 2
    parts["index"] = np.frombuffer(gzip.compress(json.dumps(meta).encode()), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **parts)
    return out.getvalue()


def test_an_unreadable_blob_is_rebuilt_from_the_pages(
    postgres_uri: str, embed_model: BaseEmbedding, caplog: pytest.LogCaptureFixture
) -> None:
    table = "lex_corrupt"
    assert save_lexicon(indexed(postgres_uri, table, embed_model))
    good = saved_blob(postgres_uri, table)
    LexicalIndex.from_bytes(good)
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    damaged = {
        "truncated": good[: len(good) // 2],
        "a byte flipped": bytes(flipped),
        "foreign": b"\x00\x01 not an index at all",
        "empty": b"",
        "older format": older_format(good),
    }
    caplog.set_level(logging.WARNING, logger="spire_llamaindex")
    for what, blob in damaged.items():
        with pytest.raises(ValueError):
            LexicalIndex.from_bytes(blob)
        set_blob(postgres_uri, table, blob)
        caplog.clear()
        retriever, parsed = fresh(postgres_uri, table, embed_model)
        answers(retriever)
        assert sorted(parsed) == sorted(MANUAL_PAGES), what  # rebuilt from the pages
        assert any("unreadable" in r.getMessage() for r in caplog.records), what

    # the next save replaces it
    assert save_lexicon(postgres_index(postgres_uri, table=table, embed_model=embed_model))
    _, parsed = fresh(postgres_uri, table, embed_model)
    answers(_)
    assert parsed == []


def test_a_reader_sees_the_saved_index_while_a_write_is_in_progress(
    postgres_uri: str, embed_model: BaseEmbedding
) -> None:
    table = "lex_atomic"
    assert save_lexicon(indexed(postgres_uri, table, embed_model))
    writer = psycopg2.connect(postgres_uri)
    try:
        with writer.cursor() as cur:  # a write not committed (a writer killed now leaves the row as it was)
            cur.execute(f"UPDATE data_{table}_lexical SET data = %s", (psycopg2.Binary(b"half an index"),))
        retriever, parsed = fresh(postgres_uri, table, embed_model)
        answers(retriever)
        assert parsed == []
    finally:
        writer.rollback()
        writer.close()


def test_a_database_error_never_fails_a_query(
    postgres_uri: str, embed_model: BaseEmbedding, caplog: pytest.LogCaptureFixture
) -> None:
    table = "lex_broken"
    index = indexed(postgres_uri, table, embed_model)
    caplog.set_level(logging.WARNING, logger="spire_llamaindex")

    # the connection fails when the saved index is read
    retriever, parsed = fresh(postgres_uri, table, embed_model)

    def refused() -> Any:
        raise OperationalError("SELECT data", {}, Exception("server closed the connection unexpectedly"))

    assert isinstance(retriever.lexicon, PostgresLexicon)
    retriever.lexicon.table._engine = refused
    answers(retriever)
    assert sorted(parsed) == sorted(MANUAL_PAGES)
    assert any("not read" in r.getMessage() for r in caplog.records)

    # a table of that name in another layout: neither read nor written, and logged
    with psycopg2.connect(postgres_uri) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE TABLE data_{table}_lexical (id integer)")
    caplog.clear()
    assert save_lexicon(index) is False
    assert any("not saved" in r.getMessage() for r in caplog.records)
    caplog.clear()
    retriever, parsed = fresh(postgres_uri, table, embed_model)
    answers(retriever)
    assert sorted(parsed) == sorted(MANUAL_PAGES)
    assert any("not read" in r.getMessage() for r in caplog.records)


def test_an_index_over_the_size_limit_is_not_saved(
    postgres_uri: str, embed_model: BaseEmbedding, caplog: pytest.LogCaptureFixture
) -> None:
    table = "lex_limit"
    index = indexed(postgres_uri, table, embed_model)
    assert save_lexicon(index)
    before = saved_blob(postgres_uri, table)
    found = postgres_pages(index.docstore)
    assert found is not None and found.lexicons is not None
    small = LexiconTable(postgres_uri, table, max_bytes=1024)
    caplog.set_level(logging.WARNING, logger="spire_llamaindex")
    assert small.write(LexicalIndex().to_bytes() + b"\x00" * 2048, HTML.name) is False
    assert any("over the" in r.getMessage() for r in caplog.records)
    assert saved_blob(postgres_uri, table) == before  # the saved index is kept
    with pytest.raises(ValueError, match="not a Postgres page store"):
        save_lexicon(SpireRetriever.from_documents([EXAMPLE_PAGES / JSON]).sources.docstore)
