"""SpireRetriever: sentence hits from a vector index, merged per document under a token budget."""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store.base import VectorStoreIndex
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

from spire_core import (
    HTML,
    BudgetError,
    Citation,
    Document,
    MissingSourceError,
    Policy,
    Subdocument,
    UnknownPathError,
    aggregate,
    from_metadata,
    to_metadata,
)
from spire_core.indexing.passages import PassageHit, sentence_search
from spire_core.options import DEFAULT_BUDGET, DEFAULT_FILL, DEFAULT_FIRST_K, DEFAULT_MAX_ROUNDS, DEFAULT_SIZE, Fmt
from spire_core.query.aggregate import aggregation_pool, searched_once, seed_indices
from spire_core.query.table_views import table_views
from spire_core.results.schema import SPIRE_KEYS, citations_from, members_of, result_id, unit_of, user_metadata
from spire_core.size import SizeFn

from ._search import Ranking
from ._source import SourceDocuments, log
from .index import build_index
from .parser import SpireNodeParser

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.storage.storage_context import StorageContext

#: One search of a retrieval: ``k -> the k best nodes``.
Top = Callable[[int], Sequence[NodeWithScore]]
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
    spire = to_metadata(sub)
    meta = {**user_metadata(source.metadata if source is not None else {}), **spire, **(extra or {})}
    hidden_embed = [*(source.excluded_embed_metadata_keys if source is not None else ()), *SPIRE_KEYS]
    hidden_llm = [*(source.excluded_llm_metadata_keys if source is not None else ()), *SPIRE_KEYS]
    related = RelatedNodeInfo(
        node_id=sub.doc_id,
        node_type=source.get_type() if source is not None else ObjectType.DOCUMENT,
        hash=source_hash,
    )
    node = TextNode(
        id_=result_id(spire),
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
    #: the nodes this try's rounds converted so far, and the passage hits they gave
    ranked: list[NodeWithScore] = dataclasses.field(default_factory=list)
    found: list[PassageHit] = dataclasses.field(default_factory=list)

    def again(self) -> bool:
        """Whether the retrieval is worth one more try: a page was replaced or removed while it ran
        (every hit of a page was of another version, or no hit had its source). A page whose index
        is merely out of date with it costs the retries too, but only when none of its hits holds."""
        return bool(self.stale - self.valid) or bool(self.missing and not self.valid and self.hits)


#: how often a retrieval is tried while pages change under it (a concurrent update)
_TRIES = 3


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
    def _search(self, bundle: QueryBundle, loop: asyncio.AbstractEventLoop | None = None) -> Top:
        """``k -> the k best nodes`` of one try: a ``VectorStoreIndex`` is queried once, for as many
        hits as the last round could need, and each round fetches its prefix (:class:`Ranking`); any
        other retriever is asked once (a factory for that many) and sliced. With ``loop``, the
        searches run on it (async retrieval; this is then called from another thread)."""
        widest = self.first_k << (self.max_rounds - 1)
        if isinstance(self.index, VectorStoreIndex):
            ranking = Ranking(self.index, bundle, widest, self.retriever_kwargs, first=self.first_k)
            if loop is None:
                return ranking.top
            return lambda k: asyncio.run_coroutine_threadsafe(ranking.atop(k), loop).result()
        retriever = self.index if isinstance(self.index, BaseRetriever) else self.index(widest)
        if loop is None:
            return searched_once(lambda _: retriever.retrieve(bundle), widest)
        return searched_once(
            lambda _: asyncio.run_coroutine_threadsafe(retriever.aretrieve(bundle), loop).result(), widest
        )

    def _passages(self, nodes: Sequence[NodeWithScore], call: _Call) -> list[PassageHit]:
        """The passage hits of ``nodes`` (a round's prefix of the ranking) whose pages hold them."""
        documents = call.documents or _Pinned(self.sources)
        if len(call.ranked) > len(nodes) or not all(map(operator.is_, call.ranked, nodes)):
            call.ranked, call.found = [], []  # not the prefix converted so far (the query was run again)
        found = call.found  # an earlier round's prefix is converted once: its pages are pinned for the try
        for n in nodes[len(call.ranked) :]:
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
        call.ranked = list(nodes)
        call.hits = max(call.hits, len(nodes))
        return found

    def _aggregate(self, search: Callable[[], Top], call: _Call) -> list[Subdocument]:
        """Aggregate the hits of a fresh ``search()`` (``k -> nodes``), tried again (up to :data:`_TRIES`
        times) while a page was replaced or removed during the try (:meth:`_Call.again`)."""
        for _ in range(_TRIES - 1):
            results = self._aggregate_once(search(), call)
            if not call.again():
                return results
            log.debug("SpireRetriever: pages changed during the query, searching again: %s", call.stale or call.missing)
            call.documents, call.hits = None, 0
            call.missing, call.stale, call.valid = set(), set(), set()
        return self._aggregate_once(search(), call)

    def _aggregate_once(self, top: Top, call: _Call) -> list[Subdocument]:
        documents = call.documents = _Pinned(self.sources)
        call.ranked, call.found = [], []  # this try's conversions (its pages pinned anew)
        # a passage's hit is one per member sentence, the best first: citations stay sentences
        hits = sentence_search(
            lambda n: self._passages(top(n), call), query=call.query, documents=documents, order="overlap"
        )
        results = aggregate(
            hits,
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
            source, source_hash = self.sources.source(sub.doc_id)
            out.append(result_node(sub, source, source_hash=source_hash))
        return out

    # -- BaseRetriever -----------------------------------------------------------------
    def retrieve_subdocuments(self, query: str | QueryBundle) -> list[Subdocument]:
        """The SPIRE results themselves (:class:`spire_core.Subdocument`), best first."""
        bundle = QueryBundle(query) if isinstance(query, str) else query
        call = _Call(bundle.query_str)
        results = self._aggregate(lambda: self._search(bundle), call)
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
        call = _Call(bundle.query_str)
        results = await loop.run_in_executor(
            aggregation_pool(), self._aggregate, lambda: self._search(bundle, loop), call
        )
        self._report(call, results)
        return results

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.retrieve_subdocuments(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        results = await self.aretrieve_subdocuments(query_bundle)
        return await asyncio.to_thread(self._nodes, results)
