"""Postgres + pgvector as the store of a SPIRE index: vectors and source pages in one database.

    from spire_llamaindex import SpireRetriever, update_index
    from spire_llamaindex.postgres import postgres_index

    index = postgres_index("postgresql://user:pw@db:5432/docs")
    update_index(index, pages)                 # or spire_app.ray_ingest.ray_index
    SpireRetriever(index).retrieve("...")      # any process, no local files

The vectors go to LlamaIndex's official ``PGVectorStore`` (an HNSW index, cosine), the source
pages to its ``PostgresDocumentStore``, both in the same database, so any number of query
processes can answer from it; their parsed-page caches only make them faster.
"""

from __future__ import annotations

from collections.abc import Iterable
from threading import Lock
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from spire_core.options import widest
from spire_runtime.database import postgres_url
from spire_runtime.defaults import DEFAULT_INDEX_NAME, MODEL_DIM

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.indices.vector_store.base import VectorStoreIndex
    from llama_index.core.storage.docstore.types import BaseDocumentStore
    from llama_index.core.storage.storage_context import StorageContext
    from llama_index.storage.docstore.postgres import PostgresDocumentStore
    from llama_index.vector_stores.postgres import PGVectorStore

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

    kvstore = PostgresKVStore(  # not from_uri(), which drops a socket folder (?host=/run/...)
        table_name=f"{table}_pages",
        connection_string=postgres_url(uri, "psycopg2"),
        async_connection_string=postgres_url(uri, "asyncpg"),
        use_jsonb=True,
    )
    store = PostgresDocumentStore(kvstore)
    _PAGE_HASHES[store] = PageHashes(uri, f"{table}_pages")
    return store


class PageHashes:
    """The docstore hashes of many pages of a :func:`page_store` in one query (LlamaIndex's
    docstore asks one page per round trip, or lists every page: ``get_all_document_hashes``).

    Reads the rows ``PostgresKVStore`` writes (table ``data_<table>``, one row per key and
    collection, the value's ``doc_hash`` in the docstore's metadata collection) with a
    connection of its own. The first answer is compared with the docstore's own
    ``get_document_hash`` of one page: a layout that differs turns it off (None from then on,
    and each page is asked on its own, as before).
    """

    def __init__(self, uri: str, table: str) -> None:
        from llama_index.core.storage.docstore.keyval_docstore import (
            DEFAULT_METADATA_COLLECTION_SUFFIX,
            DEFAULT_NAMESPACE,
        )

        self.uri = uri
        self.table = f"data_{table}".lower()  # as PostgresKVStore names and lowercases it
        self.collection = f"{DEFAULT_NAMESPACE}{DEFAULT_METADATA_COLLECTION_SUFFIX}"
        self._engine: Any = None
        self._checked: bool | None = None  # None: not compared with the docstore yet
        self._lock = Lock()

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
        from sqlalchemy import bindparam, create_engine, text

        with self._lock:
            if self._engine is None:
                self._engine = create_engine(postgres_url(self.uri, "psycopg2"))
            engine = self._engine
        name = engine.dialect.identifier_preparer.quote(self.table)
        query = text(
            f"SELECT key, value->>'doc_hash' FROM public.{name} WHERE namespace = :collection AND key IN :keys"
        ).bindparams(bindparam("keys", expanding=True))
        with engine.connect() as conn:
            rows = conn.execute(query, {"collection": self.collection, "keys": keys}).all()
        return {str(key): str(digest) for key, digest in rows if digest is not None}


_PAGE_HASHES: WeakKeyDictionary[Any, PageHashes] = WeakKeyDictionary()


def page_hashes(docstore: BaseDocumentStore) -> PageHashes | None:
    """The :class:`PageHashes` of a docstore made by :func:`page_store` (None for any other)."""
    try:
        return _PAGE_HASHES.get(docstore)
    except TypeError:  # not weakly referable
        return None


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
