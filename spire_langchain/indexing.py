"""Indexing pages into a LangChain vector store and docstore: bulk, incremental, through a record manager.

:class:`PageIndexing` is the indexing half of :class:`~spire_langchain.SpireRetriever`; the
query half is :mod:`spire_langchain.retriever`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import IndexingResult, RecordManager, index
from langchain_core.stores import BaseStore, InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from spire_core import DocumentCache, Policy, SpireError
from spire_core.indexing.swap import Swap, plan_swap
from spire_core.options import (
    Fmt,
    OnPageError,
    check_options,
)
from spire_core.query.lexical import Lexicon
from spire_core.reading.files import read_page_file
from spire_core.results.schema import DOC_ID, UNIT_IDS, user_metadata
from spire_runtime.pages import page_file

from ._source import source_id
from .embeddings import default_embeddings
from .transformer import SpireTransformer

log = logging.getLogger("spire_langchain.retriever")

#: units embedded per batch when ``from_documents`` shows progress
_EMBED_BATCH = 256
#: a page given to ``from_documents``: a ``Document``, HTML/Markdown/plain text, or a file path
Page = LCDocument | str | os.PathLike[str]


class PageIndexing:
    """Adding, replacing and deleting pages of a SPIRE retriever's stores (mixed into ``SpireRetriever``)."""

    if TYPE_CHECKING:
        vectorstore: VectorStore
        docstore: BaseStore[str, LCDocument]
        transformer: SpireTransformer
        _documents: DocumentCache
        _lexicon: Lexicon
        lexical: bool
        model_fields: ClassVar[dict[str, Any]]

        def __init__(self, **data: Any) -> None: ...

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Page],
        embeddings: Embeddings | None = None,
        *,
        vectorstore_cls: type[VectorStore] = InMemoryVectorStore,
        vectorstore_kwargs: Mapping[str, Any] | None = None,
        docstore: BaseStore[str, LCDocument] | None = None,
        transformer: SpireTransformer | None = None,
        policy: Policy | None = None,
        fmt: Fmt | None = None,
        id_namespace: str | None = None,
        show_progress: bool = False,
        **options: Any,
    ) -> Self:
        """Index pages into a new ``vectorstore_cls`` and an in-memory docstore.

        ``documents`` are ``Document``\\ s, file paths (``pathlib.Path``, or a one-line string
        naming an existing file: the page id is the path as given) or page texts (HTML,
        Markdown or plain text: any other string).
        ``vectorstore_kwargs`` go to ``vectorstore_cls.from_documents`` (e.g.
        ``{"location": ":memory:", "collection_name": "docs"}`` for Qdrant, ``connection``
        and ``collection_name`` for PGVector); ``id_namespace`` defaults to their
        ``collection_name``. ``show_progress`` shows a bar while the units are embedded.
        ``embeddings`` defaults to :func:`default_embeddings`; ``policy`` and ``fmt`` to the
        transformer's (or to ``options=QueryOptions(...)``'s); ``options`` are the retriever's
        fields (``budget``, ``k``, ``search_type``, ``max_citations``, ...), ``options=`` among
        them: an unknown one raises ``TypeError`` before anything is embedded.
        """
        known = [*cls.model_fields, "options", "policy", "fmt", "id_namespace"]
        check_options(f"{cls.__name__}.from_documents", options, known)
        store_kwargs = dict(vectorstore_kwargs or {})
        namespace = id_namespace if id_namespace is not None else str(store_kwargs.get("collection_name", ""))
        transformer = _namespaced(transformer or SpireTransformer(), namespace)
        prepared = _prepare(transformer, (_as_page(d) for d in documents))
        pieces = [p for _, _, ps in prepared for p in ps]
        vectorstore = _embed(vectorstore_cls, pieces, embeddings or default_embeddings(), store_kwargs, show_progress)
        store: BaseStore[str, LCDocument] = docstore if docstore is not None else InMemoryStore()
        store.mset([(source, _record(page, ps)) for source, page, ps in prepared])
        retriever = cls(
            vectorstore=vectorstore,
            docstore=store,
            transformer=transformer,
            id_namespace=namespace,
            **{"search_kwargs": {}, **_rendering(transformer, options, policy, fmt), **options},
        )
        if retriever.lexical:
            retriever._lexicon.refresh()  # built now, not at the first question
        return retriever

    def add_documents(
        self, documents: Iterable[LCDocument], *, force: bool = False, errors: OnPageError = "raise"
    ) -> list[str]:
        """Index (or re-index) source pages; returns the ids of the sentence ``Document``\\ s added.

        A page already in the docstore under the same source id is replaced so that a
        concurrent query sees its old version or its new one, never neither, in the order
        :func:`spire_core.indexing.swap.plan_swap` plans (LlamaIndex's adapter swaps the same
        way): its new units are added (upserted) beside the old ones, its record in the docstore
        is replaced, then the old units the new version does not have are deleted, so a changed
        page leaves no stale sentences. Unchanged pages are skipped unless ``force``. A page that
        cannot be split raises (``errors="raise"``), or is logged once with its id and reason
        and left as it was while the other pages are indexed (``errors="skip"``).
        """
        added: list[str] = []
        for source, page, pieces in _prepare(self.transformer, documents, errors):
            old = self.docstore.mget([source])[0]
            if old is not None and not force and _same_page(old, page):
                continue
            ids = [str(p.id) for p in pieces]
            swap = plan_swap(self._old_ids(old) if old is not None else (), ids)
            if pieces:
                self._upsert(pieces, ids, swap)
                self._check_landed(source, ids)
            self.docstore.mset([(source, _record(page, pieces))])
            self._documents.invalidate(source)  # after the swap: a parse of the old page is not kept
            self._lexicon.forget(source)
            self._delete_ids(list(swap.delete))
            added.extend(ids)
        return added

    def _upsert(self, pieces: list[LCDocument], ids: list[str], swap: Swap) -> None:
        """Add ``pieces`` under ``ids``, replacing the units of the same ids (same paths: ``swap.replace``) in place.

        A store that refuses ids it holds (FAISS) gets the shared ones deleted first.
        """
        try:
            self.vectorstore.add_documents(pieces, ids=ids)
        except ValueError:
            if not swap.replace:
                raise
            self._delete_ids(list(swap.replace))
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
        one). ``cleanup="full"`` also removes every page not given, as :meth:`delete_sources` does (its
        units, its docstore entry, its sentences in the lexical index). The record
        manager keys units by their content hash (``key_encoder``); the source id is ``spire_doc_id``.
        """
        if cleanup not in ("incremental", "full", None):
            raise ValueError(f"cleanup must be 'incremental', 'full' or None, not {cleanup!r}")
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        start = record_manager.get_time()
        total: IndexingResult = {"num_added": 0, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
        group: list[tuple[str, LCDocument, list[LCDocument]]] = []
        given: set[str] = set()

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
                self._lexicon.forget(source)
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
            given.add(source)
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
            # the pages not given leave the retriever as delete_sources removes them: their units went
            # above (the record manager's ids), their source text leaves the docstore, the parsed-page
            # cache and the lexical index, so that no retrieval returns or cites them
            self._forget_pages([s for s in self.docstore.yield_keys() if s not in given])
        return total

    def delete_sources(self, sources: Iterable[str]) -> list[str]:
        """Remove pages (by source id) and their sentences; returns the ids that were present
        (as LlamaIndex's ``delete_sources(index, ids)``)."""
        removed = []
        for source in sources:
            old = self.docstore.mget([source])[0]
            if old is None:
                continue
            self._delete_ids(self._old_ids(old))
            self._forget_pages([source])
            removed.append(source)
        return removed

    def _forget_pages(self, sources: list[str]) -> None:
        """Remove pages' source text from the docstore, the parsed-page cache and the lexical index
        (their units are already out of the vector store)."""
        if not sources:
            return
        self.docstore.mdelete(sources)
        for source in sources:
            self._documents.invalidate(source)
            self._lexicon.forget(source)

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


def _namespaced(transformer: SpireTransformer, namespace: str) -> SpireTransformer:
    """``transformer`` making unit ids for ``namespace``."""
    if transformer.id_namespace == namespace:
        return transformer
    return SpireTransformer(
        policy=transformer.policy, unit=transformer.unit, fmt=transformer.fmt, id_namespace=namespace
    )


def _as_page(page: Page) -> LCDocument:
    """A page given to ``from_documents`` as a ``Document`` (a path is read and decoded as the page declares)."""
    if isinstance(page, LCDocument):
        return page
    path = page_file(page)
    if path is None:
        return LCDocument(page_content=str(page))
    return LCDocument(page_content=read_page_file(path).text, metadata={"source": str(path)})


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


def _rendering(
    transformer: SpireTransformer, options: Mapping[str, Any], policy: Policy | None, fmt: Fmt | None
) -> dict[str, Any]:
    """The ``policy`` and ``fmt`` a new retriever takes: those given, else an ``options=`` object's,
    else the transformer's (what its units were rendered with)."""
    out = {} if "options" in options else {"policy": transformer.policy, "fmt": transformer.fmt}
    out.update({k: v for k, v in (("policy", policy), ("fmt", fmt)) if v is not None})
    return out
