"""SpireRetriever: the core query pipeline (:mod:`spire_core.pipeline`) over a LlamaIndex vector index."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
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
from llama_index.core.vector_stores.types import MetadataFilters

from spire_core import Citation, SpireError, Subdocument, from_metadata, to_metadata
from spire_core.errors import NotSpireIndexError
from spire_core.options import OPTION_NAMES, OnPageError, QueryOptions, check_options
from spire_core.pipeline import (
    Bridge,
    StoreHit,
    StoreSearch,
    aretrieve,
    retrieve,
    searched_once,
    store_search,
)
from spire_core.results.schema import DOC_ID, SPIRE_KEYS, citations_from, result_id, user_metadata

from ._search import NodeCache, Ranking, SearchOptions
from ._source import QueryPages, SourceDocuments, log
from .format import cited_sources
from .index import as_page, build_index, update_index
from .parser import SpireNodeParser

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import LLM
    from llama_index.core.query_engine import RetrieverQueryEngine
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


class SpireRetriever(BaseRetriever):
    """Vector search over SPIRE units, aggregated per page under a token budget.

    ``index`` holds the nodes of :class:`~spire_llamaindex.SpireNodeParser`: a
    ``VectorStoreIndex`` (searched with ``first_k`` hits first, doubled while the result stays
    under the budget), a factory ``k -> retriever``, or any retriever (its results are one
    ranked list). ``docstore`` holds the source pages under their ids; by default the index's
    own docstore. Each result is one node per page: its text the merged rendering (charged
    against ``options.budget`` with ``options.size``), its score its strongest citation's
    strength in [0, 1] (:mod:`spire_core.query.strength`), its metadata
    :func:`spire_core.to_metadata` (``spire_citations``: the citations, strongest first),
    hidden from the LLM-visible text. With ``lexical`` (the default), a BM25 index over every
    sentence of the stored pages (:class:`spire_core.query.lexical.Lexicon`: built by
    ``from_documents``, read from a ``spire index`` store or from Postgres at the first query
    (:func:`spire_llamaindex.postgres.save_lexicon`), else built at the first query; kept
    in step with the docstore) is fused with the vector ranking, so a sentence
    naming the question's rare words is found even when its passage's vector averages it away;
    it is off with ``filters``, which it cannot apply. With ``resolve_refs``, the references of
    each cited sentence are followed one hop into the stored
    pages and what they name (a definition, a section head) is delivered as a citation of its own
    under the same budget; a reference to a page not stored, or to an anchor gone from its page,
    is reported on the citing citation (:mod:`spire_core.query.references`).
    ``filters`` (``MetadataFilters``) and ``search_kwargs``
    (``VectorIndexRetriever``'s other options) go to the vector store query. The query itself is
    :func:`spire_core.pipeline.retrieve`: hits whose page is missing are skipped with an ERROR
    log, and :class:`MissingSourceError` is raised when no hit has its page.
    """

    def __init__(
        self,
        index: SentenceSearch,
        docstore: BaseDocumentStore | SourceDocuments | None = None,
        *,
        options: QueryOptions | None = None,
        filters: MetadataFilters | None = None,
        search_kwargs: dict[str, Any] | None = None,
        lexical: bool = True,
        cache_size: int = 64,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **overrides: Any,
    ) -> None:
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        search_kwargs = dict(search_kwargs or {})
        top_k = search_kwargs.pop("similarity_top_k", None)
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0):
            raise ValueError(f"similarity_top_k must be a positive integer, not {top_k!r}")
        if top_k is not None:
            overrides = {"max_pages": top_k, **overrides}
        #: what each query delivers (:class:`spire_core.options.QueryOptions`): ``options`` with the
        #: keyword ``overrides`` (``budget=``, ``max_citations=``, ...: every field by its name)
        self.options = (options or QueryOptions()).overridden("SpireRetriever", overrides)
        if docstore is None:
            if not isinstance(index, VectorStoreIndex):
                raise TypeError("give the docstore that holds the source pages")
            docstore = index.docstore
        _check_searchable(index)
        #: whether the index's nodes were seen to be SpireNodeParser's (else the first query's hits are checked)
        self._spire_nodes = _check_spire_nodes(index)
        self.index = index
        self.sources = (
            docstore if isinstance(docstore, SourceDocuments) else SourceDocuments(docstore, maxsize=cache_size)
        )
        self.search_kwargs = search_kwargs
        if filters is not None:
            self.search_kwargs["filters"] = filters
        if isinstance(index, VectorStoreIndex):
            SearchOptions.of(self.search_kwargs)  # a misspelt key fails here, not at the first question
        #: the unit nodes of the store hits, kept between questions (an in-memory docstore's: :class:`NodeCache`)
        self.node_cache = NodeCache()
        #: BM25 over every sentence of the stored pages, fused with the vector ranking (``lexical=False``: off)
        self.lexicon = self.sources.lexicon(self.options.policy) if lexical and not filters else None

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_documents(
        cls,
        documents: Iterable[BaseNode | str | os.PathLike[str]],
        *,
        embed_model: BaseEmbedding | None = None,
        storage_context: StorageContext | None = None,
        parser: SpireNodeParser | None = None,
        show_progress: bool = False,
        errors: OnPageError = "skip",
        **options: Any,
    ) -> SpireRetriever:
        """Parse ``documents`` (HTML or Markdown pages), embed their units (the packaged model by
        default), store the pages; ``options`` are the retriever's (``options=QueryOptions(...)``
        and keyword overrides; ``policy`` and ``fmt`` default to the parser's). A page that
        cannot be read (a binary file named ``.html``, a page over the size limit) is logged
        with its id and reason and left out (``errors="raise"`` raises).
        ``documents`` are nodes (``Document``), file paths or page texts, as ``spire_langchain``'s
        (:func:`spire_llamaindex.index.as_page`). An unknown option raises ``TypeError`` before
        anything is read or embedded."""
        _check_options(options)
        pages = [as_page(d) for d in documents]
        parser = parser or SpireNodeParser()
        index = build_index([], parser=parser, embed_model=embed_model, storage_context=storage_context)
        report = update_index(index, pages, parser=parser, show_progress=show_progress, errors=errors)
        for page, reason in report.failed.items():
            source = next((d for d in pages if d.node_id == page), None)
            where = source.metadata.get("file_path") if source is not None else None
            log.error("page %r%s left out: %s", page, f" ({where})" if where else "", reason)
        base = options.pop("options", None) or QueryOptions(policy=parser.policy, fmt=parser.fmt)
        retriever = cls(index, options=base, **options)
        if retriever.lexicon is not None:
            retriever.lexicon.refresh()  # built now, not at the first question
        return retriever

    def as_query_engine(self, llm: LLM | None = None, **kwargs: Any) -> RetrieverQueryEngine:
        """A ``RetrieverQueryEngine`` answering from this retriever's evidence (``kwargs`` go to
        ``RetrieverQueryEngine.from_args``: ``response_mode``, ``node_postprocessors``, ...)."""
        from llama_index.core.query_engine import RetrieverQueryEngine

        return RetrieverQueryEngine.from_args(self, llm=llm, **kwargs)

    def format_citations(self, nodes: Sequence[NodeWithScore | BaseNode]) -> str:
        """The sources block of a prompt for this retriever's results: each page once, ``[n]`` markers inside.

        ``[n]`` after a sentence is ``numbered_citations(nodes)[n - 1]``; the text (markers and
        ``Source:`` lines included) costs at most ``budget`` under ``size``, so what is sent is what
        the budget paid for (the weakest citations are left out when the markers would not fit).
        The same as ``spire_langchain``'s ``format_citations`` and what ``spire query`` prints.
        """
        return cited_sources(
            nodes,
            self.sources,
            budget=self.options.budget,
            size=self.options.size,
            policy=self.options.policy,
            fmt=self.options.fmt,
        ).text

    # -- the store search ----------------------------------------------------------------
    def _store_search(self, bundle: QueryBundle, run: Bridge | None = None) -> StoreSearch:
        """``n -> the n best store hits`` of one try: a ``VectorStoreIndex`` is queried once, for as
        many hits as the last round could need, and each round fetches its prefix (:class:`Ranking`);
        any other retriever is asked once (a factory for that many) and sliced. With ``run``, the
        store queries run on the event loop (async retrieval)."""
        widest = self.options.widest
        top: Callable[[int], Sequence[NodeWithScore]]
        if isinstance(self.index, VectorStoreIndex):
            ranking = Ranking(
                self.index,
                bundle,
                widest,
                self._index_kwargs(widest),
                first=self.options.first_k,
                nodes=self.node_cache,
            )
            top = ranking.top if run is None else (lambda k: run(ranking.atop(k)))
        else:
            retriever = self.index if isinstance(self.index, BaseRetriever) else self.index(widest)
            once = (
                (lambda _: retriever.retrieve(bundle)) if run is None else (lambda _: run(retriever.aretrieve(bundle)))
            )
            top = searched_once(once, widest)
        return store_search(top, _store_hit)

    def _index_kwargs(self, widest: int) -> dict[str, Any]:
        """``VectorIndexRetriever`` options: ``search_kwargs``, and for a store searched through an
        HNSW index with a bounded scan (pgvector's ``hnsw.ef_search``), a scan as wide as this
        query's widest round."""
        kwargs = dict(self.search_kwargs)
        hnsw = getattr(getattr(self.index, "vector_store", None), "hnsw_kwargs", None)
        if isinstance(hnsw, dict) and int(hnsw.get("hnsw_ef_search") or 0) < widest:
            kwargs["vector_store_kwargs"] = {"hnsw_ef_search": widest, **kwargs.get("vector_store_kwargs", {})}
        return kwargs

    # -- BaseRetriever -----------------------------------------------------------------
    def retrieve_subdocuments(self, query: str | QueryBundle) -> list[Subdocument]:
        """The SPIRE results themselves (:class:`spire_core.Subdocument`), best first."""
        bundle = QueryBundle(query) if isinstance(query, str) else query
        pages = QueryPages(self.sources)
        lexical = pages.lexical(self.lexicon.hits) if self.lexicon is not None else None

        def searches() -> StoreSearch:
            pages.fresh()
            return self._checked(self._store_search(bundle))

        found = retrieve(bundle.query_str, searches, pages, self.options, lexical)
        return found.results

    async def aretrieve_subdocuments(self, query: str | QueryBundle) -> list[Subdocument]:
        """Async :meth:`retrieve_subdocuments`: searches run on the event loop, pages are parsed off it."""
        bundle = QueryBundle(query) if isinstance(query, str) else query
        pages = QueryPages(self.sources)
        lexical = pages.lexical(self.lexicon.hits) if self.lexicon is not None else None

        def checked(run: Bridge) -> StoreSearch:
            pages.fresh()
            return self._checked(self._store_search(bundle, run))

        found = await aretrieve(bundle.query_str, checked, pages, self.options, lexical)
        return found.results

    def _checked(self, search: StoreSearch) -> StoreSearch:
        """``search``, raising :class:`NotSpireIndexError` when the first hits it finds carry no SPIRE
        metadata (an index that was empty at construction, or whose store keeps the node text)."""
        if self._spire_nodes:
            return search

        def checked(n: int) -> Sequence[StoreHit]:
            hits = search(n)
            if hits and not self._spire_nodes:
                if not any(DOC_ID in h.metadata for h in hits):
                    raise _not_spire(f"none of the {len(hits)} hits of the index's vector store")
                self._spire_nodes = True
            return hits

        return checked

    def _nodes(self, results: list[Subdocument]) -> list[NodeWithScore]:
        out = []
        for sub in results:
            source, source_hash = self.sources.source(sub.doc_id)
            out.append(result_node(sub, source, source_hash=source_hash))
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.retrieve_subdocuments(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        results = await self.aretrieve_subdocuments(query_bundle)
        return await asyncio.to_thread(self._nodes, results)


def _store_hit(node: NodeWithScore) -> StoreHit:
    source = node.node.source_node
    return StoreHit(node.node.metadata, float(node.score or 0.0), source.hash if source is not None else None)


def _check_options(options: dict[str, Any]) -> None:
    """Raise ``TypeError`` naming the options :meth:`SpireRetriever.from_documents` does not know (a
    typo such as ``budgt=``) and the ones it does, before any page is read or embedded."""
    own = [p for p in inspect.signature(SpireRetriever.from_documents).parameters if p not in ("documents", "options")]
    init = inspect.signature(SpireRetriever.__init__).parameters
    known = [p for p in init if p not in ("self", "index", "docstore", "overrides")]
    check_options("SpireRetriever.from_documents", options, [*known, *own, *OPTION_NAMES])


def _check_spire_nodes(index: SentenceSearch, sample: int = 8) -> bool:
    """Whether ``index``'s nodes were seen to carry SPIRE metadata (False: not known yet, the index
    is empty or its store keeps the node text; the first query's hits are checked instead). Raises
    :class:`NotSpireIndexError` when none of its first ``sample`` nodes in the docstore does."""
    if not isinstance(index, VectorStoreIndex) or index.vector_store.stores_text:
        return False
    ids = [node_id for node_id, _ in zip(index.index_struct.nodes_dict.values(), range(sample), strict=False)]
    nodes = [n for n in (index.docstore.get_node(i, raise_error=False) for i in ids) if n is not None]
    if not nodes:
        return False
    if not any(DOC_ID in n.metadata for n in nodes):
        raise _not_spire(f"none of the {len(nodes)} nodes looked at")
    return True


def _not_spire(which: str) -> NotSpireIndexError:
    return NotSpireIndexError(
        f"{which} carries SPIRE metadata ({DOC_ID}, ...): the index was built with another node parser "
        "(SentenceSplitter?), and SpireRetriever could cite nothing from it. Build it with "
        "VectorStoreIndex.from_documents(docs, transformations=[SpireNodeParser()], ...) (and "
        "store_sources(docstore, docs)), or index with SpireRetriever.from_documents(docs)"
    )


def _check_searchable(index: SentenceSearch) -> None:
    """Raise :class:`~spire_core.SpireError` when ``index`` cannot return its vector store's hits: a
    store that keeps no text (``SimpleVectorStore``) holds vectors of nodes the index never saw (an
    ``IngestionPipeline`` filled it): every hit would be dropped, and every query answer nothing."""
    if not isinstance(index, VectorStoreIndex) or index.vector_store.stores_text or index.index_struct.nodes_dict:
        return
    held = len(getattr(getattr(index.vector_store, "data", None), "embedding_dict", None) or {})
    if held:
        raise SpireError(
            f"the index knows none of the {held} vectors its {type(index.vector_store).__name__} holds: a vector "
            "store that keeps no text cannot be filled by an IngestionPipeline and then read through an index. "
            "Use a vector store that keeps text (Qdrant, Chroma, pgvector), or index with "
            "SpireRetriever.from_documents / spire_llamaindex.update_index, or build "
            "VectorStoreIndex(pipeline.run(documents=docs), embed_model=...) from a pipeline without vector_store"
        )
