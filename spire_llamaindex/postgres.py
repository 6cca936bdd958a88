"""Postgres + pgvector as the store of a SPIRE index: vectors and source pages in one database.

    from spire_llamaindex import SpireRetriever, update_index
    from spire_llamaindex.postgres import postgres_index

    index = postgres_index("postgresql://user:pw@db:5432/docs")
    update_index(index, pages)                 # or spire_app.ray_ingest.ray_index
    save_lexicon(index)                        # the BM25 index, kept beside them (ray_index does it)
    SpireRetriever(index).retrieve("...")      # any process, no local files

The vectors go to LlamaIndex's official ``PGVectorStore`` (an HNSW index, cosine), the source
pages to its ``PostgresDocumentStore``, both in the same database, so any number of query
processes can answer from it; their parsed-page caches only make them faster.

The retriever's lexical index (BM25 over every stored sentence) is built from every page; kept
in the same database (:class:`LexiconTable`, written by :func:`save_lexicon`), a new query
process reads it back at its first question and parses only the pages changed since it was saved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from threading import Lock
from typing import TYPE_CHECKING, Any

from spire_core.context import HTML, Policy
from spire_core.document.tree import Document
from spire_core.options import widest
from spire_core.query.lexical import LexicalIndex, Lexicon
from spire_runtime.database import postgres_url
from spire_runtime.defaults import DEFAULT_INDEX_NAME, MODEL_DIM

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.indices.vector_store.base import VectorStoreIndex
    from llama_index.core.storage.docstore.types import BaseDocumentStore
    from llama_index.core.storage.storage_context import StorageContext
    from llama_index.storage.docstore.postgres import PostgresDocumentStore
    from llama_index.vector_stores.postgres import PGVectorStore
    from sqlalchemy.engine import Engine

log = logging.getLogger("spire_llamaindex")

#: pgvector HNSW parameters (cosine distance, as the retriever queries). An HNSW scan returns at
#: most ``ef_search`` rows (40 by default): it is raised to what the last round of a query with the
#: default options asks for, and each query of :class:`~spire_llamaindex.SpireRetriever` sets it to
#: its own widest round (:func:`spire_core.options.widest`).
HNSW = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": widest(), "hnsw_dist_method": "vector_cosine_ops"}


def vector_store(
    uri: str, *, table: str = DEFAULT_INDEX_NAME, embed_dim: int = MODEL_DIM, hnsw: bool = True
) -> PGVectorStore:
    """LlamaIndex's ``PGVectorStore`` for the units of index ``table`` (created on first use)."""
    from llama_index.vector_stores.postgres import PGVectorStore

    return PGVectorStore.from_params(
        connection_string=postgres_url(uri, "psycopg2"),
        async_connection_string=postgres_url(uri, "asyncpg"),
        table_name=table,
        embed_dim=embed_dim,
        use_jsonb=True,
        hnsw_kwargs=dict(HNSW) if hnsw else None,
    )


def page_store(uri: str, *, table: str = DEFAULT_INDEX_NAME) -> PostgresDocumentStore:
    """LlamaIndex's ``PostgresDocumentStore`` holding the source pages of index ``table``."""
    from llama_index.storage.docstore.postgres import PostgresDocumentStore
    from llama_index.storage.kvstore.postgres import PostgresKVStore

    from ._source import register_backend

    kvstore = PostgresKVStore(  # not from_uri(), which drops a socket folder (?host=/run/...)
        table_name=f"{table}_pages",
        connection_string=postgres_url(uri, "psycopg2"),
        async_connection_string=postgres_url(uri, "asyncpg"),
        use_jsonb=True,
    )
    store = PostgresDocumentStore(kvstore)
    engine = _Engine(uri)
    hashes = PageHashes(uri, f"{table}_pages", engine=engine)
    register_backend(store, PostgresPages(hashes, LexiconTable(uri, table, engine=engine)))
    return store


class _Engine:
    """One SQLAlchemy engine (a connection pool) of a database, made at its first use: what the
    readers of one :func:`page_store` share."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._engine: Engine | None = None
        self._lock = Lock()

    def __call__(self) -> Engine:
        from sqlalchemy import create_engine

        with self._lock:
            if self._engine is None:
                self._engine = create_engine(postgres_url(self.uri, "psycopg2"))
            return self._engine


class PageHashes:
    """The docstore hashes of many pages of a :func:`page_store` in one query (LlamaIndex's
    docstore asks one page per round trip, or lists every page: ``get_all_document_hashes``).

    Reads the rows ``PostgresKVStore`` writes (table ``data_<table>``, one row per key and
    collection, the value's ``doc_hash`` in the docstore's metadata collection) with a
    connection of its own. The first answer is compared with the docstore's own
    ``get_document_hash`` of one page: a layout that differs turns it off (None from then on,
    and each page is asked on its own, as before).
    """

    def __init__(self, uri: str, table: str, *, engine: Callable[[], Engine] | None = None) -> None:
        from llama_index.core.storage.docstore.keyval_docstore import (
            DEFAULT_METADATA_COLLECTION_SUFFIX,
            DEFAULT_NAMESPACE,
        )

        self.uri = uri
        self.table = f"data_{table}".lower()  # as PostgresKVStore names and lowercases it
        self.collection = f"{DEFAULT_NAMESPACE}{DEFAULT_METADATA_COLLECTION_SUFFIX}"
        self._engine = engine or _Engine(uri)
        self._checked: bool | None = None  # None: not compared with the docstore yet

    def read(self, doc_ids: Iterable[str], docstore: BaseDocumentStore) -> dict[str, str] | None:
        """``doc_id -> hash`` of those of ``doc_ids`` that are stored (one query), or None when
        this reader is off (its first answer disagreed with ``docstore``)."""
        keys = sorted(set(doc_ids))
        if self._checked is False:
            return None
        if not keys:
            return {}
        from sqlalchemy.exc import SQLAlchemyError

        try:
            found = self._query(keys)
        except SQLAlchemyError:  # no table or columns as PostgresKVStore writes them: off, as below
            self._checked = False
            return None
        if self._checked is None:
            probe = keys[0]
            try:
                own = docstore.get_document_hash(probe)
            except KeyError:
                own = None
            self._checked = found.get(probe) == own
            if not self._checked:
                return None
        return found

    def _query(self, keys: list[str]) -> dict[str, str]:
        from sqlalchemy import bindparam, text

        engine = self._engine()
        name = engine.dialect.identifier_preparer.quote(self.table)
        query = text(
            f"SELECT key, value->>'doc_hash' FROM public.{name} WHERE namespace = :collection AND key IN :keys"
        ).bindparams(bindparam("keys", expanding=True))
        with engine.connect() as conn:
            rows = conn.execute(query, {"collection": self.collection, "keys": keys}).all()
        return {str(key): str(digest) for key, digest in rows if digest is not None}


#: The largest lexical index :class:`LexiconTable` writes (:meth:`LexicalIndex.to_bytes`): the whole
#: PostgreSQL manual's (1,169 pages, 86,973 sentences) is 4.4 MiB.
MAX_LEXICON_BYTES = 256 * 2**20
#: SQLSTATE of a table that does not exist (nothing saved yet)
_UNDEFINED_TABLE = "42P01"


class LexiconTable:
    """The lexical index of a :func:`page_store`'s pages, kept beside them in table
    ``data_<table>_lexical``: one row per rendering policy (its name), the index as one blob
    (:meth:`LexicalIndex.to_bytes`).

    :meth:`write` replaces the row in one transaction (an upsert): a reader sees the previous index
    or the new one, never part of one, and a writer killed midway leaves the previous one.
    :meth:`read` is one query. Neither raises on a database error, nor :meth:`read` on a blob it
    cannot read (damaged, foreign, of another format): each logs a warning and answers None /
    False, and the index is built from the pages as without a saved one.
    """

    def __init__(
        self,
        uri: str,
        table: str = DEFAULT_INDEX_NAME,
        *,
        max_bytes: int = MAX_LEXICON_BYTES,
        engine: Callable[[], Engine] | None = None,
    ) -> None:
        self.uri = uri
        self.table = f"data_{table}_lexical".lower()  # beside PostgresKVStore's data_<table>_pages
        self.max_bytes = max_bytes
        self._engine = engine or _Engine(uri)

    def _name(self, engine: Engine) -> str:
        return f"public.{engine.dialect.identifier_preparer.quote(self.table)}"

    def read(self, policy: str) -> LexicalIndex | None:
        """The index saved for ``policy`` (a policy's name), or None: none saved, unreadable (logged)."""
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        try:
            engine = self._engine()
            with engine.connect() as conn:
                query = text(f"SELECT data FROM {self._name(engine)} WHERE policy = :policy")
                row = conn.execute(query, {"policy": policy}).first()
        except SQLAlchemyError as err:
            if getattr(getattr(err, "orig", None), "pgcode", None) != _UNDEFINED_TABLE:
                log.warning("lexical index %s not read (%s); it is built from the pages", self.table, _reason(err))
            return None
        if row is None:
            return None
        try:
            return LexicalIndex.from_bytes(bytes(row[0]))
        except ValueError as err:
            log.warning("lexical index %s unreadable (%s); it is built from the pages", self.table, err)
            return None

    def write(self, data: bytes, policy: str) -> bool:
        """Save ``data`` (:meth:`LexicalIndex.to_bytes`) as the index of ``policy``, replacing the one
        saved; False (logged, nothing changed) when it is over ``max_bytes`` or the database fails."""
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        if len(data) > self.max_bytes:
            log.warning(
                "lexical index %s not saved: %d bytes, over the limit of %d (each query process builds it)",
                self.table,
                len(data),
                self.max_bytes,
            )
            return False
        try:
            engine = self._engine()
            name = self._name(engine)
            with engine.begin() as conn:  # one transaction
                conn.execute(
                    text(
                        f"CREATE TABLE IF NOT EXISTS {name} (policy text PRIMARY KEY, data bytea NOT NULL, "
                        "saved_at timestamptz NOT NULL DEFAULT now())"
                    )
                )
                conn.execute(
                    text(
                        f"INSERT INTO {name} (policy, data) VALUES (:policy, :data) ON CONFLICT (policy) "
                        "DO UPDATE SET data = excluded.data, saved_at = now()"
                    ),
                    {"policy": policy, "data": data},
                )
        except SQLAlchemyError as err:
            log.warning("lexical index %s not saved (%s)", self.table, _reason(err))
            return False
        return True

    def delete(self) -> None:
        """Drop the saved indexes (each query process builds its own again until the next save)."""
        from sqlalchemy import text

        engine = self._engine()
        with engine.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {self._name(engine)}"))


def _reason(err: Exception) -> str:
    """The first line of a database error's message (SQLAlchemy's own adds the statement and a link)."""
    message = str(getattr(err, "orig", None) or err).strip()
    return message.splitlines()[0] if message else type(err).__name__


class PostgresLexicon(Lexicon):
    """A :class:`~spire_core.query.lexical.Lexicon` over a :func:`page_store`'s pages that starts
    from the index saved in its :class:`LexiconTable` (read once, at the first search or refresh:
    only the pages whose docstore hash changed since are parsed) and saves back to it
    (:meth:`save_to_postgres`). What :class:`~spire_llamaindex.SpireRetriever` holds over such a store."""

    def __init__(
        self,
        versions: Callable[[], Mapping[str, str | None]],
        pages: Callable[[str], Document],
        table: LexiconTable,
        *,
        policy: Policy = HTML,
        **kwargs: Any,
    ) -> None:
        super().__init__(versions, pages, policy=policy, saved=lambda: table.read(policy.name), **kwargs)
        self.table = table

    def save_to_postgres(self) -> bool:
        """Bring the index in step with the stored pages and write it to :attr:`table` (False,
        logged, when it is not written: see :meth:`LexiconTable.write`)."""
        return self.table.write(self.to_bytes(), self.policy.name)


class PostgresPages:
    """What a :func:`page_store`'s database adds to the retriever's page lookup
    (:class:`~spire_llamaindex._source.StoreBackend`): the hashes of many pages in one query, and a
    lexicon that starts from the index saved beside the pages."""

    def __init__(self, hashes: PageHashes, lexicons: LexiconTable) -> None:
        self.hashes = hashes
        self.lexicons = lexicons

    def read_hashes(self, doc_ids: Iterable[str], docstore: BaseDocumentStore) -> dict[str, str] | None:
        return self.hashes.read(doc_ids, docstore)

    def lexicon(
        self, versions: Callable[[], Mapping[str, str | None]], pages: Callable[[str], Document], policy: Policy
    ) -> PostgresLexicon:
        return PostgresLexicon(versions, pages, self.lexicons, policy=policy)


def postgres_pages(docstore: BaseDocumentStore) -> PostgresPages | None:
    """The :class:`PostgresPages` (its :class:`PageHashes` and :class:`LexiconTable`) of a docstore
    made by :func:`page_store` (None for any other)."""
    from ._source import backend_of

    backend = backend_of(docstore)
    return backend if isinstance(backend, PostgresPages) else None


def save_lexicon(index: VectorStoreIndex | BaseDocumentStore, *, policy: Policy = HTML) -> bool:
    """Keep the lexical index of a :func:`postgres_index` (or its :func:`page_store`) in Postgres,
    so that query processes read it instead of parsing every page at their first question.

    Call it after indexing (:func:`spire_llamaindex.update_index`; :func:`spire_app.ray_ingest.ray_index`
    calls it): it starts from the index saved before, parses the pages added or changed since
    (by docstore hash), drops the pages gone, and replaces the saved index in one transaction.
    ``policy`` is the retriever's rendering policy (``QueryOptions.policy``; each is kept apart).
    Returns False (logged) when it was not written; raises ``ValueError`` for a docstore that
    :func:`page_store` did not make.
    """
    from llama_index.core.storage.docstore.types import BaseDocumentStore

    from ._source import SourceDocuments

    docstore = index if isinstance(index, BaseDocumentStore) else index.docstore
    lexicon = SourceDocuments(docstore, maxsize=2).lexicon(policy)
    if not isinstance(lexicon, PostgresLexicon):
        raise ValueError(f"not a Postgres page store (spire_llamaindex.postgres.page_store): {type(docstore).__name__}")
    return lexicon.save_to_postgres()


def postgres_storage(
    uri: str, *, table: str = DEFAULT_INDEX_NAME, embed_dim: int = MODEL_DIM, hnsw: bool = True
) -> StorageContext:
    """A ``StorageContext``: units in :func:`vector_store`, source pages in :func:`page_store`."""
    from llama_index.core.storage.storage_context import StorageContext

    return StorageContext.from_defaults(
        vector_store=vector_store(uri, table=table, embed_dim=embed_dim, hnsw=hnsw),
        docstore=page_store(uri, table=table),
    )


def postgres_index(
    uri: str,
    *,
    table: str = DEFAULT_INDEX_NAME,
    embed_model: BaseEmbedding | None = None,
    embed_dim: int = MODEL_DIM,
    hnsw: bool = True,
) -> VectorStoreIndex:
    """A ``VectorStoreIndex`` over :func:`postgres_storage`: build it with
    :func:`spire_llamaindex.update_index` (or :func:`spire_app.ray_ingest.ray_index`),
    search it with :class:`spire_llamaindex.SpireRetriever`, from any process.

    ``embed_model`` defaults to the packaged all-MiniLM-L6-v2 (``embed_dim`` must match it).
    """
    from llama_index.core.indices.vector_store.base import VectorStoreIndex

    if embed_model is None:
        from spire_llamaindex.embedding import default_embeddings

        embed_model = default_embeddings()
    return VectorStoreIndex(
        nodes=[],
        storage_context=postgres_storage(uri, table=table, embed_dim=embed_dim, hnsw=hnsw),
        embed_model=embed_model,
    )
