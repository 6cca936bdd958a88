"""``SpireTransformer``: HTML pages in, one LangChain ``Document`` per sentence seed out."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any, get_args

from langchain_core.documents import BaseDocumentTransformer
from langchain_core.documents import Document as LCDocument
from langchain_core.runnables.config import run_in_executor

from spire_core import HTML, NONE, Policy, parse_page, seeds, unit_id
from spire_core import Document as SpireDocument
from spire_core.options import Fmt, Unit
from spire_core.results import unit_metadata, user_metadata

from ._source import source_id

log = logging.getLogger(__name__)


class SpireTransformer(BaseDocumentTransformer):
    """Split HTML ``Document``\\ s into sentence seeds: a drop-in for a text splitter.

    Each output ``Document`` holds one seed: ``page_content`` is the sentence rendered with
    its global context (title, headings, list and table labels), ``metadata`` is the
    source's metadata plus ``spire_doc_id`` (the source id: ``Document.id``, else
    ``metadata["source"]``), ``spire_paths`` (the seed's encoded path set) and
    ``spire_begin`` (:mod:`spire_core.results`, the keys ``spire_llamaindex`` writes too);
    ``id`` is :func:`spire_core.unit_id` of the source id and the seed's path set, so
    re-indexing a page upserts instead of duplicating. ``policy=NONE`` embeds bare units
    (``include_global_context=False`` is its deprecated spelling). Plain text is read with
    :func:`spire_core.parse_text`; binary input raises :class:`spire_core.NotHTMLError`.
    """

    def __init__(
        self,
        *,
        policy: Policy = HTML,
        unit: Unit = "sentence",
        fmt: Fmt = "markdown",
        include_global_context: bool | None = None,
    ) -> None:
        if unit not in get_args(Unit):
            raise ValueError(f"unit must be one of {get_args(Unit)}, not {unit!r}")
        if fmt not in get_args(Fmt):
            raise ValueError(f"fmt must be one of {get_args(Fmt)}, not {fmt!r}")
        if include_global_context is not None:
            warnings.warn(
                "include_global_context is deprecated: pass policy=spire_core.NONE for bare units",
                DeprecationWarning,
                stacklevel=2,
            )
            if not include_global_context:
                policy = NONE
        self.policy = policy
        self.unit = unit
        self.fmt = fmt

    def __repr__(self) -> str:
        return f"SpireTransformer(policy={self.policy!r}, unit={self.unit!r}, fmt={self.fmt!r})"

    def parse(self, document: LCDocument) -> SpireDocument:
        """The parsed SPIRE document of a source ``Document``."""
        return parse_page(document.page_content, doc_id=source_id(document))

    def split(self, document: LCDocument, parsed: SpireDocument | None = None) -> list[LCDocument]:
        """The sentence (or block) ``Document``\\ s of one source ``Document``."""
        source = source_id(document)
        doc = parsed if parsed is not None else parse_page(document.page_content, doc_id=source)
        units = seeds(doc, policy=self.policy, fmt=self.fmt, unit=self.unit)
        if not units:
            log.warning("source %r has no readable text: it yields no seeds", source)
        base = user_metadata(document.metadata)
        return [
            LCDocument(
                id=unit_id(source, seed.paths),
                page_content=seed.text,
                metadata={**base, **unit_metadata(source, seed.paths, seed.begin)},
            )
            for seed in units
        ]

    def transform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """One ``Document`` per seed of every input, in input and document order."""
        return [piece for document in documents for piece in self.split(document)]

    async def atransform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """:meth:`transform_documents` off the event loop (parsing is CPU work)."""
        return await run_in_executor(None, self.transform_documents, documents, **kwargs)
