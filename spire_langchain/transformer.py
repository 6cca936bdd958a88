"""``SpireTransformer``: HTML pages in, one LangChain ``Document`` per passage (or sentence) seed out."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from langchain_core.documents import BaseDocumentTransformer
from langchain_core.documents import Document as LCDocument
from langchain_core.runnables.config import RunnableConfig, run_in_executor

from spire_core import HTML, Policy, parse_page, seeds, unit_id
from spire_core import Document as SpireDocument
from spire_core.options import DEFAULT_UNIT, Fmt, Unit
from spire_core.results.schema import seed_metadata, unit_namespace, user_metadata
from spire_runtime.pages import declared_kind_of

from ._source import source_id

log = logging.getLogger(__name__)


class SpireTransformer(BaseDocumentTransformer):
    """Split HTML ``Document``\\ s into SPIRE seeds: a drop-in for a text splitter.

    Each output ``Document`` holds one seed, by default a passage (consecutive sentences of
    one section, ``unit="passage"``; ``"sentence"`` and ``"block"`` index finer):
    ``page_content`` is the seed rendered with its global context (title, headings, list
    and table labels), ``metadata`` is the source's metadata plus ``spire_doc_id`` (the
    source id: ``Document.id``, else ``metadata["source"]``), ``spire_paths`` (the seed's
    encoded path set), ``spire_begin`` and, for a passage, ``spire_members`` (its sentences,
    which the retriever cites) (:mod:`spire_core.results.schema`, the keys ``spire_llamaindex`` writes too);
    ``id`` is :func:`spire_core.unit_id` of the source id and the seed's path set, so
    re-indexing a page upserts instead of duplicating. ``policy=NONE`` embeds bare units.
    Plain text is read with
    :func:`spire_core.parse_text`; binary input raises :class:`spire_core.NotHTMLError`.
    """

    def __init__(
        self,
        *,
        policy: Policy = HTML,
        unit: Unit = DEFAULT_UNIT,
        fmt: Fmt = "markdown",
        id_namespace: str = "",
    ) -> None:
        if unit not in get_args(Unit):
            raise ValueError(f"unit must be one of {get_args(Unit)}, not {unit!r}")
        if fmt not in get_args(Fmt):
            raise ValueError(f"fmt must be one of {get_args(Fmt)}, not {fmt!r}")
        self.policy = policy
        self.unit = unit
        self.fmt = fmt
        #: the collection the units' ids are made for (:func:`spire_core.results.unit_namespace`)
        self.id_namespace = id_namespace

    def __repr__(self) -> str:
        return (
            f"SpireTransformer(policy={self.policy!r}, unit={self.unit!r}, fmt={self.fmt!r}, "
            f"id_namespace={self.id_namespace!r})"
        )

    def parse(self, document: LCDocument) -> SpireDocument:
        """The parsed SPIRE document of a source ``Document``."""
        declared = declared_kind_of(document.metadata)
        return parse_page(document.page_content, doc_id=source_id(document), declared=declared)

    def split(self, document: LCDocument, parsed: SpireDocument | None = None) -> list[LCDocument]:
        """The sentence (or block) ``Document``\\ s of one source ``Document``."""
        source = source_id(document)
        doc = parsed if parsed is not None else self.parse(document)
        for warning in doc.warnings:
            log.warning("document %r: %s", source, warning)
        units = seeds(doc, policy=self.policy, fmt=self.fmt, unit=self.unit)
        if not units:
            log.warning("source %r has no readable text: it yields no seeds", source)
        base = user_metadata(document.metadata)
        namespace = unit_namespace(self.id_namespace)
        return [
            LCDocument(
                id=unit_id(source, seed.paths, namespace=namespace),
                page_content=seed.text,
                metadata={**base, **seed_metadata(source, seed)},
            )
            for seed in units
        ]

    # -- the TextSplitter surface ------------------------------------------------------------
    def split_documents(self, documents: Iterable[LCDocument]) -> list[LCDocument]:
        """One ``Document`` per seed of every page, in input and document order."""
        return [piece for document in documents for piece in self.split(document)]

    def create_documents(
        self, texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]] | None = None
    ) -> list[LCDocument]:
        """:meth:`split_documents` of pages given as text (HTML, Markdown or plain) with their metadata."""
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(metadatas)} metadatas")
        metas = metadatas if metadatas is not None else [{}] * len(texts)
        pages = (LCDocument(page_content=t, metadata=dict(m)) for t, m in zip(texts, metas, strict=True))
        return self.split_documents(pages)

    def split_text(self, text: str) -> list[str]:
        """The texts (with their context) of the seeds of one page."""
        return [piece.page_content for piece in self.split(LCDocument(page_content=text))]

    def transform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """:meth:`split_documents` (the ``BaseDocumentTransformer`` method)."""
        return self.split_documents(documents)

    async def atransform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """:meth:`split_documents` off the event loop (parsing is CPU work)."""
        return await run_in_executor(None, self.split_documents, documents)

    def invoke(
        self, input: Sequence[LCDocument], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[LCDocument]:
        """:meth:`split_documents`, for code that calls its splitter as a runnable."""
        return self.split_documents(input)

    async def ainvoke(
        self, input: Sequence[LCDocument], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[LCDocument]:
        """:meth:`atransform_documents`."""
        return list(await self.atransform_documents(input))
