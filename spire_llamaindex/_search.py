"""The sentence search over a ``VectorStoreIndex``: one vector query per question, nodes fetched per round."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import VectorStoreQueryResult

#: how often a question's vector query is tried when the store changed under it (every round
#: shares the one query; the backoffs between tries add up to about one second at most)
QUERY_TRIES = 12


def backoff(attempt: int) -> float:
    """Seconds to wait before query attempt ``attempt + 1`` found nodes missing: a write is
    between its vector and docstore steps, and back-to-back writes need a moment to finish one."""
    return 0.0005 * float(2**attempt)


def _changed_under(err: RuntimeError) -> bool:
    """Whether ``err`` is a dict iteration that a concurrent write disturbed (worth a retry)."""
    return "changed during iteration" in str(err) or "changed size during iteration" in str(err)


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
    ``search_kwargs`` are ``VectorIndexRetriever``'s (filters, query mode, ...).
    """

    def __init__(
        self, index: VectorStoreIndex, bundle: QueryBundle, k: int, search_kwargs: dict[str, Any], *, first: int
    ) -> None:
        self.widest = k
        #: the ranks the vector query asks for
        self.asked = min(k, first) if index.vector_store.stores_text else k
        # not restricted to a snapshot of the index's node ids (as ``as_retriever`` is): a page
        # updated between the snapshot and the query would have neither its old nor its new nodes
        self.search = VectorIndexRetriever(
            index,
            callback_manager=index._callback_manager,
            object_map=index._object_map,
            similarity_top_k=self.asked,
            **search_kwargs,
        )
        self.bundle = bundle
        self.tries = 0
        self.result: VectorStoreQueryResult | None = None
        self.nodes: list[NodeWithScore] = []
        self.fetched = 0  # ranks whose nodes were looked up

    def _embedded(self) -> QueryBundle:
        search, bundle = self.search, self.bundle
        if bundle.embedding is None and search._needs_embedding() and bundle.embedding_strs:
            bundle.embedding = search._embed_model.get_agg_embedding_from_queries(bundle.embedding_strs)
        return bundle

    def top(self, k: int) -> list[NodeWithScore]:
        """The ``k`` best nodes (fewer when the index holds fewer or nodes went missing on every try)."""
        self._widen(k)
        while True:
            last = self.tries >= QUERY_TRIES - 1
            if self.result is None:
                query = self.search._build_vector_store_query(self._embedded())
                try:
                    self._start(self.search._vector_store.query(query, **self.search._kwargs))
                except RuntimeError as err:
                    if not _changed_under(err) or last:
                        raise
                    self.tries += 1
                    continue
            try:
                complete = self._add(k, self.search._docstore.get_nodes(self._wanted(k), raise_error=False))
            except KeyError:  # a node deleted during its fetch (see the class docstring)
                self.result, complete = None, False
            if complete or last:
                return self.nodes[:k]
            time.sleep(backoff(self.tries))
            self.tries += 1

    async def atop(self, k: int) -> list[NodeWithScore]:
        """Async :meth:`top` (the query embedded beforehand)."""
        self._widen(k)
        while True:
            last = self.tries >= QUERY_TRIES - 1
            if self.result is None:
                query = self.search._build_vector_store_query(self.bundle)
                try:
                    self._start(await self.search._vector_store.aquery(query, **self.search._kwargs))
                except RuntimeError as err:
                    if not _changed_under(err) or last:
                        raise
                    self.tries += 1
                    continue
            try:
                complete = self._add(k, await self.search._docstore.aget_nodes(self._wanted(k), raise_error=False))
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
            self.search._similarity_top_k = self.asked
            self.result = None

    def _start(self, result: VectorStoreQueryResult) -> None:
        self.result, self.nodes, self.fetched = result, [], 0
        if result.nodes is not None or not result.ids:  # the store keeps text: its own nodes
            wanted = self.search._determine_nodes_to_fetch(result)  # LlamaIndex's: only non-text nodes
            if wanted:
                fetched = self.search._docstore.get_nodes(wanted, raise_error=False)
                result.nodes = list(self.search._insert_fetched_nodes_into_query_result(result, fetched))
            self.nodes = self.search._convert_nodes_to_scored_nodes(result)
            self.fetched = len(result.ids or self.nodes)

    def _wanted(self, k: int) -> list[str]:
        """The docstore ids of the ranks up to ``k`` not fetched yet (none when the store keeps text)."""
        assert self.result is not None
        nodes_dict = self.search._index.index_struct.nodes_dict
        return [n for i in (self.result.ids or [])[self.fetched : k] if (n := nodes_dict.get(i)) is not None]

    def _add(self, k: int, fetched: list[BaseNode]) -> bool:
        """Add the ``fetched`` nodes of the ranks up to ``k``; False (query again) when one is
        missing: its page was updated or deleted between the query and the fetch."""
        assert self.result is not None
        ids, similarities = self.result.ids or [], self.result.similarities
        end = min(k, len(ids))
        by_id = {str(n.node_id): n for n in fetched}
        nodes_dict = self.search._index.index_struct.nodes_dict
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
