"""SpireRetriever: sentence hits from a vector index, merged per document under a token budget."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import (
    BaseNode,
    NodeRelationship,
    NodeWithScore,
    ObjectType,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import VectorStoreQueryResult

from spire_core import (
    HTML,
    BudgetError,
    Citation,
    Document,
    Hit,
    MissingSourceError,
    Policy,
    SpireError,
    Subdocument,
    UnknownPathError,
    aggregate,
    from_metadata,
    to_metadata,
    unit_id,
)
from spire_core.aggregate import aggregation_pool, seed_indices
from spire_core.options import DEFAULT_BUDGET, DEFAULT_FILL, DEFAULT_FIRST_K, DEFAULT_MAX_ROUNDS, DEFAULT_SIZE, Fmt
from spire_core.passages import PassageHit, expand
from spire_core.results import RESULT_NAMESPACE, SPIRE_KEYS, citations_from, members_of, unit_of, user_metadata
from spire_core.size import SizeFn
from spire_core.table_view import table_views

from ._source import SourceDocuments, log
from .index import build_index
from .parser import SpireNodeParser

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.storage.storage_context import StorageContext

#: What the sentence search is built from: an index (grown from ``first_k``), a
#: factory ``k -> retriever``, or any retriever (used as one ranked list).
SentenceSearch = VectorStoreIndex | BaseRetriever | Callable[[int], BaseRetriever]


def as_sources(source: SourceDocuments | BaseDocumentStore | Any) -> SourceDocuments:
    """A :class:`SourceDocuments` from a docstore, a :class:`SpireRetriever` or one itself."""
    if isinstance(source, SourceDocuments):
        return source
    if isinstance(source, SpireRetriever):
        return source.sources
    if isinstance(source, BaseDocumentStore):
        return SourceDocuments(source)
    raise TypeError(f"expected a docstore, a SpireRetriever or SourceDocuments, not {type(source).__name__}")


def citations_of(node: BaseNode | NodeWithScore) -> list[Citation]:
    """The citations a SPIRE result node carries (``metadata["spire_citations"]``); empty for other nodes."""
    if isinstance(node, NodeWithScore):
        node = node.node
    return citations_from(node.metadata)


def subdocument_of(node: NodeWithScore) -> Subdocument | None:
    """The :class:`spire_core.Subdocument` a SPIRE result node stands for (None for other nodes)."""
    return from_metadata(node.node.metadata, node.node.get_content(), score=float(node.score or 0.0))


def result_node(
    sub: Subdocument,
    source: BaseNode | None,
    *,
    source_hash: str | None = None,
    extra: dict[str, Any] | None = None,
) -> NodeWithScore:
    """A LlamaIndex node for one SPIRE result (merged rendering, citations in metadata)."""
    meta = {**user_metadata(source.metadata if source is not None else {}), **to_metadata(sub), **(extra or {})}
    hidden_embed = [*(source.excluded_embed_metadata_keys if source is not None else ()), *SPIRE_KEYS]
    hidden_llm = [*(source.excluded_llm_metadata_keys if source is not None else ()), *SPIRE_KEYS]
    related = RelatedNodeInfo(
        node_id=sub.doc_id,
        node_type=source.get_type() if source is not None else ObjectType.DOCUMENT,
        hash=source_hash,
    )
    node = TextNode(
        id_=unit_id(sub.doc_id, sub.paths, namespace=RESULT_NAMESPACE),
        text=sub.text,
        metadata=meta,
        excluded_embed_metadata_keys=hidden_embed,
        excluded_llm_metadata_keys=hidden_llm,
        relationships={NodeRelationship.SOURCE: related},
    )
    return NodeWithScore(node=node, score=sub.score)


class _Pinned:
    """The parsed pages of one retrieval, each read once: a page replaced while the query
    runs is seen whole, in its old version or its new one, never a mix of the two."""

    def __init__(self, sources: SourceDocuments) -> None:
        self.sources = sources
        self.docs: dict[str, Document] = {}

    def __call__(self, doc_id: str, expected_hash: str | None = None) -> Document:
        doc = self.docs.get(doc_id)
        if doc is None:
            doc = self.docs[doc_id] = self.sources(doc_id, expected_hash)
        return doc


@dataclasses.dataclass
class _Call:
    """Bookkeeping of one retrieval: its pages, hits skipped and why."""

    #: the question (orders a passage's member sentences)
    query: str = ""
    documents: _Pinned | None = None
    hits: int = 0
    missing: set[str] = dataclasses.field(default_factory=set)
    foreign: int = 0
    #: pages with hits whose paths are not in the page as read (nodes of a version just replaced)
    stale: set[str] = dataclasses.field(default_factory=set)
    #: pages with hits that are nodes of the page as read
    valid: set[str] = dataclasses.field(default_factory=set)

    def again(self) -> bool:
        """Whether the retrieval is worth one more try: a page was replaced or removed while it ran
        (every hit of a page was of another version, or no hit had its source). A page whose index
        is merely out of date with it costs the retries too, but only when none of its hits holds."""
        return bool(self.stale - self.valid) or bool(self.missing and not self.valid and self.hits)


#: how often a retrieval is tried while pages change under it (a concurrent update)
_TRIES = 3
#: how often a vector query is retried when the store changed under it (SimpleVectorStore)
_QUERY_TRIES = 8


def _backoff(attempt: int) -> float:
    """Seconds to wait before query attempt ``attempt + 1`` found nodes missing: a write is
    between its vector and docstore steps, and back-to-back writes need a moment to finish one."""
    return 0.0005 * float(2**attempt)


def _changed_under(err: RuntimeError) -> bool:
    """Whether ``err`` is a dict iteration that a concurrent write disturbed (worth a retry)."""
    return "changed during iteration" in str(err) or "changed size during iteration" in str(err)


class _VectorSearch(VectorIndexRetriever):
    """A ``VectorIndexRetriever`` safe beside a concurrent update. A node deleted between the
    vector query and the docstore fetch (LlamaIndex's own raises ``KeyError``) is left out and
    the query is run again, as is a query that a write disturbed (``SimpleVectorStore``
    iterates a live dict): up to :data:`_QUERY_TRIES` times, then what was found is returned."""

    _dropped = False

    def _get_nodes_with_embeddings(self, query_bundle_with_embeddings: QueryBundle) -> list[NodeWithScore]:
        for attempt in range(_QUERY_TRIES):
            last = attempt == _QUERY_TRIES - 1
            self._dropped = False
            try:
                nodes = super()._get_nodes_with_embeddings(query_bundle_with_embeddings)
            except RuntimeError as err:
                if not _changed_under(err) or last:
                    raise
                continue
            if not self._dropped or last:
                return nodes
            time.sleep(_backoff(attempt))
        raise AssertionError("unreachable")

    async def _aget_nodes_with_embeddings(self, query_bundle_with_embeddings: QueryBundle) -> list[NodeWithScore]:
        for attempt in range(_QUERY_TRIES):
            last = attempt == _QUERY_TRIES - 1
            self._dropped = False
            try:
                nodes = await super()._aget_nodes_with_embeddings(query_bundle_with_embeddings)
            except RuntimeError as err:
                if not _changed_under(err) or last:
                    raise
                continue
            if not self._dropped or last:
                return nodes
            await asyncio.sleep(_backoff(attempt))
        raise AssertionError("unreachable")

    def _determine_nodes_to_fetch(self, query_result: VectorStoreQueryResult) -> list[str]:
        if query_result.nodes or not query_result.ids:
            return super()._determine_nodes_to_fetch(query_result)
        nodes = self._index.index_struct.nodes_dict
        found = [node_id for i in query_result.ids if (node_id := nodes.get(i)) is not None]
        self._dropped = self._dropped or len(found) < len(query_result.ids)
        return found

    def _insert_fetched_nodes_into_query_result(
        self, query_result: VectorStoreQueryResult, fetched_nodes: list[BaseNode]
    ) -> Sequence[BaseNode]:
        if query_result.nodes or not query_result.ids:
            return super()._insert_fetched_nodes_into_query_result(query_result, fetched_nodes)
        by_id = {str(n.node_id): n for n in fetched_nodes}
        nodes_dict = self._index.index_struct.nodes_dict
        similarities = query_result.similarities
        kept: list[tuple[str, BaseNode, float | None]] = []
        for k, i in enumerate(query_result.ids):
            node = by_id.get(str(nodes_dict.get(i)))
            if node is not None:  # else deleted meanwhile: skipped
                kept.append((i, node, similarities[k] if similarities is not None else None))
        self._dropped = self._dropped or len(kept) < len(query_result.ids)
        query_result.ids = [i for i, _, _ in kept]
        if similarities is not None:
            query_result.similarities = [s for _, _, s in kept if s is not None]
        return [node for _, node, _ in kept]


class SpireRetriever(BaseRetriever):
    """Vector search over sentence seeds, aggregated per document under a token budget.

    ``index`` holds the nodes of :class:`~spire_llamaindex.SpireNodeParser`: a
    ``VectorStoreIndex`` (searched with ``first_k`` hits first, doubled while the
    result stays under the budget), a factory ``k -> retriever``, or any retriever (its
    results are one ranked list). ``docstore`` holds the source Documents (the HTML) under
    their ids; by default the index's own docstore. Each result is one node per document:
    its text is the merged rendering (charged against ``budget`` with ``size``), its score
    the best hit's, and its metadata :func:`spire_core.to_metadata` (``spire_citations``: one
    :class:`spire_core.Citation` dict per admitted sentence), hidden from the LLM-visible text.
    ``similarity_top_k`` is the deprecated name of ``first_k``. With ``tables`` (the default)
    the best-ranked tables are delivered as views that answer positional, neighbour and
    extreme questions (:func:`spire_core.table_view.table_views`).

    Hits whose source page is missing from the docstore are skipped with an ERROR log;
    :class:`MissingSourceError` is raised when no hit has its source.
    """

    def __init__(
        self,
        index: SentenceSearch,
        docstore: BaseDocumentStore | SourceDocuments | None = None,
        *,
        budget: int = DEFAULT_BUDGET,
        size: SizeFn = DEFAULT_SIZE,
        policy: Policy = HTML,
        fmt: Fmt = "markdown",
        first_k: int = DEFAULT_FIRST_K,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        fill: float = DEFAULT_FILL,
        tables: bool = True,
        cache_size: int = 64,
        retriever_kwargs: dict[str, Any] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        similarity_top_k: int | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        if similarity_top_k is not None:
            warnings.warn("similarity_top_k is deprecated: pass first_k", DeprecationWarning, stacklevel=2)
            first_k = similarity_top_k
        if budget <= 0:
            raise BudgetError(f"budget must be positive, not {budget}")
        if first_k <= 0 or max_rounds <= 0 or fill <= 0:
            raise ValueError("first_k, max_rounds and fill must be positive")
        if docstore is None:
            if not isinstance(index, VectorStoreIndex):
                raise TypeError("give the docstore that holds the source Documents")
            docstore = index.docstore
        self.index = index
        self.sources = (
            docstore if isinstance(docstore, SourceDocuments) else SourceDocuments(docstore, maxsize=cache_size)
        )
        self.budget = budget
        self.size = size
        self.policy = policy
        self.fmt = fmt
        self.first_k = first_k
        self.max_rounds = max_rounds
        self.fill = fill
        self.tables = tables
        self.retriever_kwargs = dict(retriever_kwargs or {})

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_documents(
        cls,
        documents: Sequence[BaseNode],
        *,
        embed_model: BaseEmbedding | None = None,
        storage_context: StorageContext | None = None,
        parser: SpireNodeParser | None = None,
        show_progress: bool = False,
        budget: int = DEFAULT_BUDGET,
        size: SizeFn = DEFAULT_SIZE,
        policy: Policy | None = None,
        fmt: Fmt | None = None,
        first_k: int = DEFAULT_FIRST_K,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        fill: float = DEFAULT_FILL,
        tables: bool = True,
        cache_size: int = 64,
        similarity_top_k: int | None = None,
    ) -> SpireRetriever:
        """Parse ``documents`` (HTML), embed their seeds (the packaged model by default), store the sources.

        ``policy`` and ``fmt`` default to the parser's.
        """
        parser = parser or SpireNodeParser()
        index = build_index(
            documents,
            parser=parser,
            embed_model=embed_model,
            storage_context=storage_context,
            show_progress=show_progress,
        )
        return cls(
            index,
            budget=budget,
            size=size,
            policy=parser.policy if policy is None else policy,
            fmt=parser.fmt if fmt is None else fmt,
            first_k=first_k,
            max_rounds=max_rounds,
            fill=fill,
            tables=tables,
            cache_size=cache_size,
            similarity_top_k=similarity_top_k,
        )

    # -- the sentence search -----------------------------------------------------------
    def _retriever(self, k: int) -> BaseRetriever:
        if isinstance(self.index, VectorStoreIndex):
            index = self.index
            # not restricted to a snapshot of the index's node ids (as ``as_retriever`` is): a page
            # updated between the snapshot and the query would have neither its old nor its new nodes
            return _VectorSearch(
                index,
                callback_manager=index._callback_manager,
                object_map=index._object_map,
                similarity_top_k=k,
                **self.retriever_kwargs,
            )
        if isinstance(self.index, BaseRetriever):
            return self.index
        return self.index(k)

    def _hits(self, nodes: Sequence[NodeWithScore], call: _Call, k: int) -> list[Hit]:
        documents = call.documents or _Pinned(self.sources)
        found: list[PassageHit] = []
        for n in nodes:
            meta = n.node.metadata
            unit = unit_of(meta)
            if unit is None:
                call.foreign += 1
                continue
            doc_id, paths = unit
            if doc_id in call.missing:
                continue
            source = n.node.source_node
            try:
                # memoised per page: units recur across queries; the unit's page hash spares a lookup
                seed_indices(documents(doc_id, source.hash if source is not None else None), paths)
            except MissingSourceError:
                call.missing.add(doc_id)
                continue
            except UnknownPathError:  # a node of the version a concurrent update just replaced
                call.stale.add(doc_id)
                continue
            call.valid.add(doc_id)
            found.append(PassageHit(doc_id, members_of(meta, paths), float(n.score or 0.0)))
        call.hits = max(call.hits, len(nodes))
        # a passage's hit is one per member sentence, the best first: citations stay sentences
        return expand(found, query=call.query, documents=documents, order="overlap", limit=k)

    def _aggregate(self, run: Callable[[int], Sequence[NodeWithScore]], call: _Call) -> list[Subdocument]:
        """Aggregate the hits of ``run`` (``k -> nodes``), tried again (up to :data:`_TRIES` times)
        while a page was replaced or removed during the try (:meth:`_Call.again`)."""
        for _ in range(_TRIES - 1):
            results = self._aggregate_once(run, call)
            if not call.again():
                return results
            log.debug("SpireRetriever: pages changed during the query, searching again: %s", call.stale or call.missing)
            call.documents, call.hits = None, 0
            call.missing, call.stale, call.valid = set(), set(), set()
        return self._aggregate_once(run, call)

    def _aggregate_once(self, run: Callable[[int], Sequence[NodeWithScore]], call: _Call) -> list[Subdocument]:
        documents = call.documents = _Pinned(self.sources)
        fixed = isinstance(self.index, BaseRetriever)  # one ranked list whatever k
        # the first round asks for first_k; a second one for as many as the last round could
        # need, which every later round takes a prefix of: two searches at most, not max_rounds
        widest = self.first_k << (self.max_rounds - 1)
        cache: dict[int, Sequence[NodeWithScore]] = {}

        def search(k: int) -> list[Hit]:
            asked = k if k == self.first_k else widest
            if asked not in cache:
                cache[asked] = next(iter(cache.values())) if fixed and cache else run(asked)
            return self._hits(cache[asked][:k], call, k)

        results = aggregate(
            search,
            documents=documents,
            budget=self.budget,
            size=self.size,
            policy=self.policy,
            fmt=self.fmt,
            first_k=self.first_k,
            max_rounds=self.max_rounds,
            fill=self.fill,
        )
        if not self.tables:
            return results
        return table_views(
            call.query, results, documents, budget=self.budget, size=self.size, policy=self.policy, fmt=self.fmt
        )

    def _report(self, call: _Call, results: list[Subdocument]) -> None:
        if call.foreign:
            log.warning(
                "SpireRetriever: %d hit(s) without SPIRE metadata skipped (not from SpireNodeParser?)", call.foreign
            )
        if call.missing:
            missing = ", ".join(sorted(map(repr, call.missing)))
            log.error("SpireRetriever: source pages missing from the docstore, their hits skipped: %s", missing)
            if not results and call.hits:
                raise MissingSourceError(
                    f"no retrieved sentence has its source page in the docstore (missing: {missing}, "
                    "on every try): store the source Documents (spire_llamaindex.store_sources)"
                )

    def _nodes(self, results: list[Subdocument]) -> list[NodeWithScore]:
        out = []
        for sub in results:
            try:
                source: BaseNode | None = self.sources.node(sub.doc_id)
            except SpireError:
                source = None
            out.append(result_node(sub, source, source_hash=self.sources.docstore.get_document_hash(sub.doc_id)))
        return out

    # -- BaseRetriever -----------------------------------------------------------------
    def retrieve_subdocuments(self, query: str | QueryBundle) -> list[Subdocument]:
        """The SPIRE results themselves (:class:`spire_core.Subdocument`), best first."""
        bundle = QueryBundle(query) if isinstance(query, str) else query
        call = _Call(bundle.query_str)
        # the same bundle on every round: the vector retriever embeds the query once
        results = self._aggregate(lambda k: self._retriever(k).retrieve(bundle), call)
        self._report(call, results)
        return results

    async def aretrieve_subdocuments(self, query: str | QueryBundle) -> list[Subdocument]:
        """Async :meth:`retrieve_subdocuments`: searches run on the event loop, pages are parsed off it."""
        bundle = QueryBundle(query) if isinstance(query, str) else query
        embed = getattr(self.index, "_embed_model", None)
        if bundle.embedding is None and embed is not None:
            embedding = await embed.aget_agg_embedding_from_queries(bundle.embedding_strs)
            bundle = dataclasses.replace(bundle, embedding=embedding)
        loop = asyncio.get_running_loop()

        def run(k: int) -> Sequence[NodeWithScore]:
            return asyncio.run_coroutine_threadsafe(self._retriever(k).aretrieve(bundle), loop).result()

        call = _Call(bundle.query_str)
        results = await loop.run_in_executor(aggregation_pool(), self._aggregate, run, call)
        self._report(call, results)
        return results

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.retrieve_subdocuments(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        results = await self.aretrieve_subdocuments(query_bundle)
        return await asyncio.to_thread(self._nodes, results)
