"""The sentence search over a ``VectorStoreIndex``: one vector query per question, nodes fetched per round.

Built on LlamaIndex's public API alone: a ``VectorStoreQuery`` sent to ``index.vector_store.query``
(``aquery``), its ids mapped through ``index.index_struct.nodes_dict`` and their nodes read with
``index.docstore.get_nodes`` (``aget_nodes``). The query embedding model is the index's
(:func:`spire_llamaindex.compat.index_embed_model`, the one private member it needs) unless
``search_kwargs`` name one.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.schema import BaseNode, NodeWithScore, ObjectType, QueryBundle
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode, VectorStoreQueryResult

from spire_core.document.tree import LRU

from .compat import index_embed_model

#: how often a question's vector query is tried when the store changed under it (every round
#: shares the one query; the backoffs between tries add up to about one second at most)
QUERY_TRIES = 12

#: ``search_kwargs`` that become fields of the ``VectorStoreQuery`` (``VectorIndexRetriever``'s
#: options of the same names)
QUERY_FIELDS = ("filters", "alpha", "node_ids", "doc_ids", "sparse_top_k", "hybrid_top_k")
#: every ``search_kwargs`` key taken (``verbose``: accepted as ``VectorIndexRetriever`` takes it, unused)
SEARCH_KWARGS = (*QUERY_FIELDS, "vector_store_query_mode", "vector_store_kwargs", "embed_model", "verbose")
#: the query modes that search without the query's embedding
_TEXT_MODES = (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE)


def backoff(attempt: int) -> float:
    """Seconds to wait before query attempt ``attempt + 1`` found nodes missing: a write is
    between its vector and docstore steps, and back-to-back writes need a moment to finish one."""
    return 0.0005 * float(2**attempt)


def _changed_under(err: RuntimeError) -> bool:
    """Whether ``err`` is a dict iteration that a concurrent write disturbed (worth a retry)."""
    return "changed during iteration" in str(err) or "changed size during iteration" in str(err)


@dataclass(frozen=True)
class SearchOptions:
    """``search_kwargs`` read as ``VectorIndexRetriever`` reads them: the query's mode and fields
    (filters, alpha, node and doc ids, sparse and hybrid top k), the keyword arguments of the
    store's ``query`` (``vector_store_kwargs``) and the query embedding model (``embed_model``)."""

    mode: VectorStoreQueryMode = VectorStoreQueryMode.DEFAULT
    fields: dict[str, Any] = field(default_factory=dict)
    store_kwargs: dict[str, Any] = field(default_factory=dict)
    embed_model: BaseEmbedding | None = None

    @classmethod
    def of(cls, search_kwargs: dict[str, Any]) -> SearchOptions:
        """Read ``search_kwargs``; an unknown key raises ``TypeError`` naming the keys taken."""
        unknown = sorted(set(search_kwargs) - set(SEARCH_KWARGS))
        if unknown:
            raise TypeError(
                f"unknown search_kwargs {', '.join(map(repr, unknown))}: "
                f"search_kwargs takes similarity_top_k, {', '.join(SEARCH_KWARGS)}"
            )
        fields = {name: search_kwargs[name] for name in QUERY_FIELDS if search_kwargs.get(name) is not None}
        return cls(
            mode=VectorStoreQueryMode(search_kwargs.get("vector_store_query_mode") or VectorStoreQueryMode.DEFAULT),
            fields=fields,
            store_kwargs=dict(search_kwargs.get("vector_store_kwargs") or {}),
            embed_model=search_kwargs.get("embed_model"),
        )


#: unit nodes a :class:`NodeCache` keeps (each without its text: its metadata and source, a few KB)
NODE_CACHE_SIZE = 4096


class NodeCache:
    """Unit nodes read from an in-memory docstore (``SimpleDocumentStore``), kept decoded between
    questions: a search returns the same units question after question, and reading one (its
    JSON decoded, a pydantic node built) cost more than the rest of its hit's handling.

    A node is served from here only while it is what the docstore holds: the docstore's hash of
    the node (its text and metadata, ``BaseNode.hash``) is the hash of the node kept, and the
    docstore's hash of its source page is the one the node names (a page replaced with this
    unit unchanged stores the unit again, naming the new page). Kept without its text: a hit
    needs its metadata and its source (:class:`~spire_core.pipeline.StoreHit`).
    """

    def __init__(self, maxsize: int = NODE_CACHE_SIZE) -> None:
        #: node id -> (the node's hash, the node without its text)
        self._held: LRU[str, tuple[str, BaseNode]] = LRU(maxsize)

    @staticmethod
    def serves(docstore: BaseDocumentStore) -> bool:
        """Whether ``docstore`` is read from memory (a remote one would pay a round trip per hash)."""
        return isinstance(docstore, SimpleDocumentStore)

    def split(self, docstore: BaseDocumentStore, ids: list[str]) -> tuple[list[BaseNode], list[str]]:
        """The nodes of ``ids`` held and current, and the ids to read from the docstore."""
        held: list[BaseNode] = []
        wanted: list[str] = []
        pages: dict[str, str | None] = {}
        for node_id in ids:
            entry = self._held.get(node_id)
            if entry is not None and _current(docstore, node_id, entry, pages):
                held.append(entry[1])
            else:
                wanted.append(node_id)
        return held, wanted

    def keep(self, nodes: list[BaseNode]) -> None:
        """Keep ``nodes`` (as read from the docstore), each under its own hash."""
        for node in nodes:
            card = node.model_copy()  # shallow: the metadata and relationships shared, not copied
            card.set_content("")
            self._held[node.node_id] = (node.hash, card)


def _current(
    docstore: BaseDocumentStore, node_id: str, entry: tuple[str, BaseNode], pages: dict[str, str | None]
) -> bool:
    """Whether the node kept as ``entry`` is the docstore's (``pages``: page hashes read so far)."""
    try:
        if docstore.get_document_hash(node_id) != entry[0]:
            return False
        source = entry[1].source_node
        if source is None:
            return True
        if source.node_id not in pages:
            pages[source.node_id] = docstore.get_document_hash(source.node_id)
    except KeyError:  # removed while it was read (LlamaIndex's in-memory store tests, then reads)
        return False
    return pages[source.node_id] == source.hash


class Ranking:
    """The ranked units of one question over ``index``: the vector store is queried once, for the
    widest round's ``k`` hits, and the nodes of a round's prefix are fetched from the docstore when
    the round asks for them. A store that keeps text returns every node with the query (pgvector
    reads and decodes each row), so it is asked for ``first`` hits, and for ``k`` only when a
    round needs more (with a fixed ``ef_search``, an HNSW query's top ``first`` is the top
    ``first`` of its widest query).

    Safe beside a concurrent update: a query that a write disturbed (``SimpleVectorStore``
    iterates a live dict) or whose nodes were deleted before or during their fetch is run again, up to
    :data:`QUERY_TRIES` times in all; after that, what was found is returned. (A fetch from
    LlamaIndex's ``SimpleKVStore`` tests for a key, then reads it: a delete between the two
    raises ``KeyError``. SPIRE's ``PackedKVStore`` reads once.)
    ``search_kwargs`` are ``VectorIndexRetriever``'s (:class:`SearchOptions`). Not restricted to
    a snapshot of the index's node ids (as ``as_retriever`` is): a page updated between the
    snapshot and the query would have neither its old nor its new nodes.
    """

    def __init__(
        self,
        index: VectorStoreIndex,
        bundle: QueryBundle,
        k: int,
        search_kwargs: dict[str, Any],
        *,
        first: int,
        nodes: NodeCache | None = None,
    ) -> None:
        self.index = index
        #: unit nodes kept between questions (used while the docstore is in memory)
        self.cache = nodes if nodes is not None and NodeCache.serves(index.docstore) else None
        self.options = SearchOptions.of(search_kwargs)
        self.widest = k
        #: the ranks the vector query asks for
        self.asked = min(k, first) if index.vector_store.stores_text else k
        self.bundle = bundle
        self.tries = 0
        self.result: VectorStoreQueryResult | None = None
        self.nodes: list[NodeWithScore] = []
        self.fetched = 0  # ranks whose nodes were looked up

    def _needs_embedding(self) -> bool:
        """Whether the query carries the question's embedding (as ``VectorIndexRetriever`` decides)."""
        bundle = self.bundle
        return (
            bundle.embedding is None
            and bool(bundle.embedding_strs)
            and self.index.vector_store.is_embedding_query
            and self.options.mode not in _TEXT_MODES
        )

    def _embed_model(self) -> BaseEmbedding:
        return self.options.embed_model or index_embed_model(self.index)

    def _query(self) -> VectorStoreQuery:
        """The vector store query of ``VectorIndexRetriever`` for the ranks asked."""
        bundle = self.bundle
        return VectorStoreQuery(
            query_embedding=bundle.embedding,
            similarity_top_k=self.asked,
            query_str=bundle.query_str,
            mode=self.options.mode,
            **self.options.fields,
        )

    def top(self, k: int) -> list[NodeWithScore]:
        """The ``k`` best nodes (fewer when the index holds fewer or nodes went missing on every try)."""
        self._widen(k)
        if self._needs_embedding():  # once for every try (the bundle keeps it, as VectorIndexRetriever's does)
            self.bundle.embedding = self._embed_model().get_agg_embedding_from_queries(self.bundle.embedding_strs)
        store, docstore = self.index.vector_store, self.index.docstore
        while True:
            last = self.tries >= QUERY_TRIES - 1
            if self.result is None:
                try:
                    self._start(store.query(self._query(), **self.options.store_kwargs))
                except RuntimeError as err:
                    if not _changed_under(err) or last:
                        raise
                    self.tries += 1
                    continue
            try:
                held, wanted = self._split(self._wanted(k))
                complete = self._add(k, self._kept(held, docstore.get_nodes(wanted, raise_error=False)))
            except KeyError:  # a node deleted during its fetch (see the class docstring)
                self.result, complete = None, False
            if complete or last:
                return self.nodes[:k]
            time.sleep(backoff(self.tries))
            self.tries += 1

    async def atop(self, k: int) -> list[NodeWithScore]:
        """Async :meth:`top`."""
        self._widen(k)
        if self._needs_embedding():
            model = self._embed_model()
            self.bundle.embedding = await model.aget_agg_embedding_from_queries(self.bundle.embedding_strs)
        store, docstore = self.index.vector_store, self.index.docstore
        while True:
            last = self.tries >= QUERY_TRIES - 1
            if self.result is None:
                try:
                    self._start(await store.aquery(self._query(), **self.options.store_kwargs))
                except RuntimeError as err:
                    if not _changed_under(err) or last:
                        raise
                    self.tries += 1
                    continue
            try:
                held, wanted = self._split(self._wanted(k))
                complete = self._add(k, self._kept(held, await docstore.aget_nodes(wanted, raise_error=False)))
            except KeyError:  # a node deleted during its fetch (see the class docstring)
                self.result, complete = None, False
            if complete or last:
                return self.nodes[:k]
            await asyncio.sleep(backoff(self.tries))
            self.tries += 1

    def _widen(self, k: int) -> None:
        """Ask for the widest round's hits (again, if the store gave all it was asked for: it may
        hold more) when ``k`` is more than was asked."""
        result = self.result
        if self.asked < min(k, self.widest) and (result is None or len(result.ids or result.nodes or ()) >= self.asked):
            self.asked = self.widest
            self.result = None

    def _start(self, result: VectorStoreQueryResult) -> None:
        """Take a query's result. A store that keeps text gave its nodes: those that are not text
        nodes are read from the docstore (as ``VectorIndexRetriever`` does), and every rank is
        fetched; otherwise the rounds fetch their prefixes (:meth:`_wanted`)."""
        self.result, self.nodes, self.fetched = result, [], 0
        if result.nodes or not result.ids:
            nodes = list(result.nodes or ())
            others = [str(n.node_id) for n in nodes if n.as_related_node_info().node_type != ObjectType.TEXT]
            if others:
                by_id = {str(n.node_id): n for n in self.index.docstore.get_nodes(others, raise_error=False)}
                nodes = [by_id.get(str(n.node_id), n) for n in nodes]
                result.nodes = nodes
            similarities = result.similarities
            self.nodes = [
                NodeWithScore(node=node, score=similarities[rank] if similarities is not None else None)
                for rank, node in enumerate(nodes)
            ]
            self.fetched = len(result.ids or self.nodes)

    def _wanted(self, k: int) -> list[str]:
        """The docstore ids of the ranks up to ``k`` not fetched yet (none when the store keeps text)."""
        assert self.result is not None
        nodes_dict = self.index.index_struct.nodes_dict
        return [n for i in (self.result.ids or [])[self.fetched : k] if (n := nodes_dict.get(i)) is not None]

    def _split(self, ids: list[str]) -> tuple[list[BaseNode], list[str]]:
        """The nodes of ``ids`` the cache holds current, and the ids to read from the docstore."""
        return ([], ids) if self.cache is None else self.cache.split(self.index.docstore, ids)

    def _kept(self, held: list[BaseNode], read: list[BaseNode]) -> list[BaseNode]:
        """``held`` and the nodes ``read`` from the docstore, those kept in the cache."""
        if self.cache is None:
            return read
        self.cache.keep(read)
        return [*held, *read]

    def _add(self, k: int, fetched: list[BaseNode]) -> bool:
        """Add the ``fetched`` nodes of the ranks up to ``k``; False (query again) when one is
        missing: its page was updated or deleted between the query and the fetch."""
        assert self.result is not None
        ids, similarities = self.result.ids or [], self.result.similarities
        end = min(k, len(ids))
        by_id = {str(n.node_id): n for n in fetched}
        nodes_dict = self.index.index_struct.nodes_dict
        complete = True
        for rank in range(self.fetched, end):
            node = by_id.get(str(nodes_dict.get(ids[rank])))
            if node is None:
                complete = False
                continue
            self.nodes.append(NodeWithScore(node=node, score=similarities[rank] if similarities else None))
        self.fetched = max(self.fetched, end)
        if not complete:
            self.result = None
        return complete
