"""Postgres + pgvector as the store of a SPIRE retriever: sentence vectors and source pages in one database.

    from spire_langchain.postgres import postgres_retriever

    retriever = postgres_retriever("postgresql://user:pw@db:5432/docs")
    retriever.add_documents(pages)             # a changed page replaces its sentences
    retriever.invoke("...")                    # any process, no local files

The vectors go to ``langchain-postgres``' ``PGVectorStore`` (one table per index, an HNSW
index, cosine distance), the source pages to ``langchain-community``'s ``SQLStore`` (through
LangChain's ``create_kv_docstore``) in the same database, so any number of query processes
can answer from it; their parsed-page caches only make them faster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spire_core.options import DEFAULT_FIRST_K, DEFAULT_MAX_ROUNDS, widest
from spire_runtime.database import postgres_url
from spire_runtime.defaults import DEFAULT_INDEX_NAME, MODEL_DIM

from .embeddings import default_embeddings
from .retriever import SpireRetriever

if TYPE_CHECKING:
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import Embeddings
    from langchain_core.stores import BaseStore
    from langchain_postgres import PGVectorStore


def vector_store(
    uri: str,
    embeddings: Embeddings,
    *,
    table: str = DEFAULT_INDEX_NAME,
    embed_dim: int = MODEL_DIM,
    hnsw: bool = True,
    ef_search: int | None = None,
) -> PGVectorStore:
    """``langchain-postgres``' ``PGVectorStore`` over table ``table``, created (with its HNSW index) if missing.

    An HNSW scan returns at most ``ef_search`` rows (pgvector's default is 40): it is raised to
    the most hits a query's rounds ask for (:func:`spire_core.options.widest` of the defaults,
    or of the retriever's own ``first_k`` and ``max_rounds``: :func:`postgres_retriever` does).
    """
    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex, HNSWQueryOptions
    from sqlalchemy import create_engine, inspect

    sync = create_engine(postgres_url(uri, "psycopg"))
    try:
        exists = inspect(sync).has_table(table)
    finally:
        sync.dispose()
    engine = PGEngine.from_connection_string(postgres_url(uri, "psycopg"))
    if not exists:
        # text ids: SPIRE's unit ids are strings, not necessarily UUIDs
        engine.init_vectorstore_table(table, embed_dim, id_column=Column("langchain_id", "TEXT", nullable=False))
    options = HNSWQueryOptions(ef_search=ef_search or widest()) if hnsw else None
    store = PGVectorStore.create_sync(engine, embeddings, table, index_query_options=options)
    if hnsw and not exists:
        store.apply_vector_index(HNSWIndex())
    return store


def page_store(uri: str, *, table: str = DEFAULT_INDEX_NAME) -> BaseStore[str, LCDocument]:
    """The source pages of index ``table``: a ``SQLStore`` (namespace ``<table>_pages``) holding ``Document``\\ s."""
    from langchain_classic.storage import create_kv_docstore
    from langchain_community.storage import SQLStore

    store = SQLStore(namespace=f"{table}_pages", db_url=postgres_url(uri, "psycopg"))
    store.create_schema()
    return create_kv_docstore(store)


def postgres_retriever(
    uri: str,
    embeddings: Embeddings | None = None,
    *,
    table: str = DEFAULT_INDEX_NAME,
    embed_dim: int = MODEL_DIM,
    hnsw: bool = True,
    **fields: Any,
) -> SpireRetriever:
    """A :class:`SpireRetriever` whose vectors and pages are in Postgres (tables created on first use).

    ``embeddings`` defaults to the packaged all-MiniLM-L6-v2 (``embed_dim`` must match it);
    ``fields`` are retriever fields (``budget``, ``transformer``, ...).
    """
    embeddings = embeddings or default_embeddings()
    ef_search = widest(fields.get("first_k", DEFAULT_FIRST_K), fields.get("max_rounds", DEFAULT_MAX_ROUNDS))
    return SpireRetriever(
        vectorstore=vector_store(uri, embeddings, table=table, embed_dim=embed_dim, hnsw=hnsw, ef_search=ef_search),
        docstore=page_store(uri, table=table),
        **fields,
    )
