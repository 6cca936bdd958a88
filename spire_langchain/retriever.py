"""``SpireRetriever``: sentence-level vector search, document-aware aggregation under a token budget."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from langchain_core.stores import BaseStore
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from pydantic import Field, PrivateAttr, model_validator

from spire_core import HTML, DocumentCache, Policy, Subdocument, to_metadata
from spire_core import Document as SpireDocument
from spire_core.options import (
    DEFAULT_BUDGET,
    DEFAULT_FILL,
    DEFAULT_FIRST_K,
    DEFAULT_MAX_CITATIONS,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_MIN_SCORE,
    DEFAULT_RELATIVE_SCORE,
    DEFAULT_RESOLVE_REFS,
    DEFAULT_SIZE,
    OPTION_NAMES,
    Fmt,
    QueryOptions,
    check_options,
)
from spire_core.pipeline import (
    Bridge,
    LexicalSearch,
    StoreHit,
    StoreSearch,
    aretrieve,
    post_filtered,
    retrieve,
    searched_once,
    store_search,
)
from spire_core.query.lexical import Lexicon
from spire_core.results.schema import result_id, user_metadata

from ._source import page_loader
from .compat import gives_relevance_scores
from .format import cited_sources
from .indexing import PageIndexing, _namespaced
from .transformer import SpireTransformer

log = logging.getLogger(__name__)

Scored = list[tuple[LCDocument, float]]


class SpireRetriever(PageIndexing, BaseRetriever):
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
    (e.g. ``filter``) go to the vector store's search, after ``search_kwargs``, as
    ``vectorstore.as_retriever`` sends them: ``fetch_k`` reaches a store whose search names it
    (FAISS; an MMR search) and is dropped for the others, a filtered search of a store that
    filters after searching (FAISS) looks at more candidates until the filter's best are found,
    and ``score_threshold`` (with ``search_type="similarity_score_threshold"`` or on its own)
    keeps the hits whose relevance score (``similarity_search_with_relevance_scores``, 0 to 1)
    reaches it.
    ``scores`` says how to read the store's scores (``"auto"``: from their order, which
    is best first; ``"distance"``: lower is closer, reported as ``1 / (1 + d)``;
    ``"similarity"``; ``"relevance"``: the store's normalised relevance scores). Ranks
    always follow the store's order. ``search_type="mmr"`` searches with the store's
    maximal-marginal-relevance search (diverse hits; scored by rank). With ``tables`` (the
    default) the best-ranked tables are delivered as views that answer positional,
    neighbour and extreme questions (:func:`spire_core.query.table_views.table_views`).
    With ``resolve_refs``, the references of each cited sentence are followed one hop into the
    stored pages and what they name (a definition, a section head) is delivered as a citation of
    its own under the same budget; a reference to a page not stored, or to an anchor gone from
    its page, is reported on the citing citation (:mod:`spire_core.query.references`).

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
    search_type: Literal["similarity", "mmr", "similarity_score_threshold"] = "similarity"
    #: fuse a BM25 index over every sentence of the stored pages with the vector ranking (a result's
    #: score is its strongest citation's strength in [0, 1] either way: ``spire_core.query.strength``)
    lexical: bool = True
    #: follow the references of cited sentences one hop into the stored pages and deliver what they
    #: name as citations of their own, under the same budget (``spire_core.query.references``)
    resolve_refs: bool = DEFAULT_RESOLVE_REFS
    #: the citation cut (``spire_core.options.Cut``): at most this many citations named as evidence
    max_citations: int | None = Field(default=DEFAULT_MAX_CITATIONS, gt=0)
    #: ... each at least this strong (strengths are in [0, 1])
    min_score: float = Field(default=DEFAULT_MIN_SCORE, ge=0, le=1)
    #: ... and at least this share of the strongest citation's strength
    relative_score: float = Field(default=DEFAULT_RELATIVE_SCORE, ge=0, le=1)

    _documents: DocumentCache = PrivateAttr()
    _lexicon: Lexicon = PrivateAttr()
    _distance: bool | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        """``options=QueryOptions(...)`` sets the option fields not given by name (its ``max_pages``
        is ``k``); a field no retriever has (a typo such as ``budgt=``) raises ``TypeError``, as a
        misspelt keyword does, instead of being ignored."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        base = data.pop("options", None)
        check_options(cls.__name__, data, cls.model_fields)
        if base is None:
            return data
        if not isinstance(base, QueryOptions):
            raise TypeError(f"{cls.__name__}: options must be a QueryOptions, not {type(base).__name__}")
        given = {("k" if name == "max_pages" else name): getattr(base, name) for name in OPTION_NAMES}
        return {**given, **data}

    def model_post_init(self, context: Any, /) -> None:
        self._documents = DocumentCache(page_loader(self.docstore), maxsize=self.cache_size)
        self._lexicon = Lexicon(lambda: dict.fromkeys(self.docstore.yield_keys()), self._documents, policy=self.policy)
        if self.id_namespace is None:
            self.id_namespace = self.transformer.id_namespace or str(getattr(self.vectorstore, "collection_name", ""))
        self.transformer = _namespaced(self.transformer, self.id_namespace)

    @property
    def sources(self) -> DocumentCache:
        """The source pages by id, parsed once (a bounded LRU; share it with
        :class:`~spire_langchain.SpireEvidenceFilter`), as the LlamaIndex retriever's ``sources``."""
        return self._documents

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

    # -- search ----------------------------------------------------------------------------
    @property
    def options(self) -> QueryOptions:
        """The query options of this retriever (:class:`spire_core.options.QueryOptions`)."""
        return QueryOptions(
            budget=self.budget,
            size=self.size,
            policy=self.policy,
            fmt=self.fmt,
            first_k=self.first_k,
            max_rounds=self.max_rounds,
            fill=self.fill,
            tables=self.tables,
            max_pages=self.k,
            resolve_refs=self.resolve_refs,
            max_citations=self.max_citations,
            min_score=self.min_score,
            relative_score=self.relative_score,
        )

    def _raw(self, query: str, n: int, kwargs: dict[str, Any]) -> Scored:
        if self.search_type == "mmr":
            try:
                return _ranked(self.vectorstore.max_marginal_relevance_search(query, **_mmr_k(n, kwargs)))
            except NotImplementedError as err:
                raise self._no_mmr() from err
        if self._relevance(kwargs):
            return self.vectorstore.similarity_search_with_relevance_scores(query, n, **kwargs)
        return self.vectorstore.similarity_search_with_score(query, n, **_unthresholded(kwargs))

    async def _araw(self, query: str, n: int, kwargs: dict[str, Any]) -> Scored:
        if self.search_type == "mmr":
            try:
                return _ranked(await self.vectorstore.amax_marginal_relevance_search(query, **_mmr_k(n, kwargs)))
            except NotImplementedError as err:
                raise self._no_mmr() from err
        if self._relevance(kwargs):
            return await self.vectorstore.asimilarity_search_with_relevance_scores(query, n, **kwargs)
        return await self.vectorstore.asimilarity_search_with_score(query, n, **_unthresholded(kwargs))

    def _relevance(self, kwargs: dict[str, Any]) -> bool:
        """Whether a (non-MMR) search asks for the store's relevance scores: asked, or a ``score_threshold``
        applies and the store has them (else the threshold holds SPIRE's reading of its scores)."""
        return self.scores == "relevance" or ("score_threshold" in kwargs and gives_relevance_scores(self.vectorstore))

    def _takes_fetch_k(self) -> bool:
        """Whether the store's similarity search names ``fetch_k`` (candidates looked at before its filter)."""
        try:
            params = inspect.signature(self.vectorstore.similarity_search_with_score).parameters
        except (TypeError, ValueError):
            return False
        return "fetch_k" in params

    def _no_mmr(self) -> ValueError:
        return ValueError(f"search_type='mmr': {type(self.vectorstore).__name__} has no max-marginal-relevance search")

    def _learn_direction(self, pairs: Scored) -> None:
        """With ``scores="auto"``, whether the store's scores are distances, from their order (best first)."""
        if self.scores == "auto" and self._distance is None and len(pairs) > 1 and pairs[0][1] != pairs[-1][1]:
            self._distance = bool(pairs[0][1] < pairs[-1][1])

    def _store_hit(self, pair: tuple[LCDocument, float], relevance: bool = False) -> StoreHit:
        doc, raw = pair
        score = float(raw)
        if not relevance and (self.scores == "distance" or (self.scores == "auto" and self._distance)):
            score = 1.0 / (1.0 + max(score, 0.0))
        return StoreHit(doc.metadata, score)

    def _store_search(self, raw: Callable[[int, dict[str, Any]], Scored], kwargs: dict[str, Any]) -> StoreSearch:
        """A try's store search (``raw(n, extra keyword arguments)``): asked once per question (a search
        embeds the query anew) and sliced per round; an MMR search, whose picks depend on the number
        asked for, per round. A filtered search of a store that filters after searching looks at more
        candidates while the filter leaves fewer than asked (:func:`spire_core.pipeline.post_filtered`)."""
        relevance = self.search_type != "mmr" and self._relevance(kwargs)
        sized: Callable[[int], Scored] = lambda n: raw(n, {})  # noqa: E731
        if self.search_type != "mmr" and kwargs.get("filter") is not None and self._takes_fetch_k():
            floor = int(kwargs.get("fetch_k") or 0)  # the caller's fetch_k: where the search starts
            widened = post_filtered(lambda n, fetch: raw(n, {"fetch_k": fetch}), _size(self.vectorstore), floor)
            sized = lambda n: list(widened(n))  # noqa: E731

        threshold = kwargs.get("score_threshold")

        def scored(n: int) -> Scored:
            pairs = sized(n)
            if not relevance:
                self._learn_direction(pairs)
                if threshold is not None:  # a store without relevance scores: the similarity SPIRE reports
                    pairs = [p for p in pairs if self._store_hit(p).score >= threshold]
            return pairs

        top = scored if self.search_type == "mmr" else searched_once(scored, self.options.widest)
        return store_search(top, lambda pair: self._store_hit(pair, relevance))

    def _call(self, k: int | None, budget: int | None, kwargs: dict[str, Any]) -> tuple[QueryOptions, dict[str, Any]]:
        """This call's options and store keyword arguments. ``k`` (also as ``search_kwargs["k"]``, the
        LangChain idiom) caps the pages returned; the other keyword arguments go to the store's search
        (``fetch_k`` only to a store that takes it: an MMR search, a store that filters after searching)."""
        kwargs.pop("verbose", None)  # passed along by BaseRetriever.invoke
        search_kwargs = {**self.search_kwargs, **kwargs}
        k = search_kwargs.pop("k", None) if k is None else k
        search_kwargs.pop("k", None)
        threshold = search_kwargs.get("score_threshold")
        if self.search_type == "similarity_score_threshold" and threshold is None:
            raise ValueError("search_type='similarity_score_threshold' needs search_kwargs={'score_threshold': 0 to 1}")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)):
            raise ValueError(f"score_threshold must be a number between 0 and 1, not {threshold!r}")
        if threshold is not None and self.search_type == "mmr":  # its picks come without scores to hold
            raise ValueError("score_threshold needs a similarity search: search_type='mmr' gives no scores")
        if self.search_type != "mmr" and "fetch_k" in search_kwargs and not self._takes_fetch_k():
            search_kwargs.pop("fetch_k")  # what LangChain's MMR and FAISS's filter read; others refuse it
        if isinstance(self.vectorstore, InMemoryVectorStore) and isinstance(search_kwargs.get("filter"), Mapping):
            search_kwargs["filter"] = _metadata_filter(search_kwargs["filter"])  # it calls the filter on Documents
        return self.options.but(budget=budget, max_pages=k), search_kwargs

    def retrieve_subdocuments(
        self, query: str, *, k: int | None = None, budget: int | None = None, **kwargs: Any
    ) -> list[Subdocument]:
        """The SPIRE results themselves (:class:`spire_core.Subdocument`), best first."""
        options, search_kwargs = self._call(k, budget, kwargs)

        def searches() -> StoreSearch:
            return self._store_search(lambda n, extra: self._raw(query, n, {**search_kwargs, **extra}), search_kwargs)

        return retrieve(query, searches, self._pages, options, self._lexical(search_kwargs)).results

    async def aretrieve_subdocuments(
        self, query: str, *, k: int | None = None, budget: int | None = None, **kwargs: Any
    ) -> list[Subdocument]:
        """Async :meth:`retrieve_subdocuments`: the store is searched on the event loop, pages are parsed off it."""
        options, search_kwargs = self._call(k, budget, kwargs)

        def searches(run: Bridge) -> StoreSearch:
            return self._store_search(
                lambda n, extra: run(self._araw(query, n, {**search_kwargs, **extra})), search_kwargs
            )

        return (await aretrieve(query, searches, self._pages, options, self._lexical(search_kwargs))).results

    def _lexical(self, search_kwargs: dict[str, Any]) -> LexicalSearch | None:
        """The lexical index's search, unless off or the store's search is filtered or thresholded
        (which it cannot apply)."""
        held = search_kwargs.get("filter") is not None or search_kwargs.get("score_threshold") is not None
        return self._lexicon.hits if self.lexical and not held else None

    def _pages(self, doc_id: str, expected_hash: str | None = None) -> SpireDocument:
        return self._documents(doc_id)

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
        results = self.retrieve_subdocuments(query, k=k, budget=budget, **kwargs)
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
        results = await self.aretrieve_subdocuments(query, k=k, budget=budget, **kwargs)
        await run_manager.on_text(_summary(results, self.budget if budget is None else budget))
        return self._to_documents(results, await self.docstore.amget([r.doc_id for r in results]))


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


def _metadata_filter(spec: Mapping[str, Any]) -> Callable[[LCDocument], bool]:
    """``InMemoryVectorStore``'s filter (a callable over unit Documents) for a dict filter of metadata
    equality, as other stores take it: ``{"source": "a.html"}``; a list value is any of its values
    (``{"source": ["a.html", "b.html"]}``, as FAISS reads one). An operator (``"$in"``, ...) is refused."""
    operators = sorted(str(k) for k, value in spec.items() if str(k).startswith("$") or isinstance(value, Mapping))
    if operators:
        raise ValueError(
            f"InMemoryVectorStore takes a dict filter of metadata equality only ({{'source': 'a.html'}}, or a list "
            f"of values: any of them), not operators ({', '.join(operators)}): pass a callable filter instead, "
            "filter=lambda doc: ... (a unit Document, its page's metadata in doc.metadata)"
        )
    wanted = {key: list(value) if isinstance(value, list | tuple | set) else [value] for key, value in spec.items()}
    return lambda doc: all(key in doc.metadata and doc.metadata[key] in values for key, values in wanted.items())


def _unthresholded(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` without ``score_threshold``, which a store would hold against its raw scores (FAISS: distances)."""
    return {k: v for k, v in kwargs.items() if k != "score_threshold"}


def _size(store: VectorStore) -> int | None:
    """How many entries ``store`` holds, where it says (FAISS's index), else None."""
    total = getattr(getattr(store, "index", None), "ntotal", None)
    return total if isinstance(total, int) else None


def _mmr_k(n: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"k": n, "fetch_k": max(4 * n, 20), **kwargs}


def _ranked(documents: Sequence[LCDocument]) -> Scored:
    """Scores by rank (best first) for a search that gives none."""
    return [(doc, 1.0 - i / max(len(documents), 1)) for i, doc in enumerate(documents)]
