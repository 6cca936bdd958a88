"""``SpireTransformer``: HTML pages in, one LangChain ``Document`` per sentence seed out."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.documents import BaseDocumentTransformer
from langchain_core.documents import Document as LCDocument
from langchain_core.runnables.config import run_in_executor

from spire_core import HTML, NONE, Policy, encode_paths, parse_page, seeds
from spire_core import Document as SpireDocument

from ._source import sentence_id, source_id, user_metadata

log = logging.getLogger(__name__)


class SpireTransformer(BaseDocumentTransformer):
    """Split HTML ``Document``\\ s into sentence seeds: a drop-in for a text splitter.

    Each output ``Document`` holds one seed: ``page_content`` is the sentence rendered with
    its global context (title, headings, list and table labels), ``metadata`` is the
    source's metadata plus ``spire_source`` (the source id: ``Document.id``, else
    ``metadata["source"]``), ``spire_paths`` (the seed's encoded path set) and
    ``spire_begin``; ``id`` is deterministic (source id + begin path), so re-indexing a
    page upserts instead of duplicating. Plain text is read with
    :func:`spire_core.parse_text`; binary input raises :class:`spire_core.NotHTMLError`.
    """

    def __init__(
        self,
        *,
        policy: Policy = HTML,
        unit: Literal["sentence", "block"] = "sentence",
        include_global_context: bool = True,
        fmt: Literal["markdown", "text"] = "markdown",
    ) -> None:
        if unit not in ("sentence", "block"):
            raise ValueError(f"unit must be 'sentence' or 'block', not {unit!r}")
        if fmt not in ("markdown", "text"):
            raise ValueError(f"fmt must be 'markdown' or 'text', not {fmt!r}")
        self.policy = policy
        self.unit = unit
        self.include_global_context = include_global_context
        self.fmt = fmt

    def __repr__(self) -> str:
        return (
            f"SpireTransformer(policy={self.policy!r}, unit={self.unit!r}, "
            f"include_global_context={self.include_global_context}, fmt={self.fmt!r})"
        )

    def parse(self, document: LCDocument) -> SpireDocument:
        """The parsed SPIRE document of a source ``Document``."""
        return parse_page(document.page_content, doc_id=source_id(document))

    def split(self, document: LCDocument, parsed: SpireDocument | None = None) -> list[LCDocument]:
        """The sentence (or block) ``Document``\\ s of one source ``Document``."""
        source = source_id(document)
        doc = parsed if parsed is not None else parse_page(document.page_content, doc_id=source)
        policy = self.policy if self.include_global_context else NONE
        units = seeds(doc, policy=policy, fmt=self.fmt, unit=self.unit)
        if not units:
            log.warning("source %r has no readable text: it yields no seeds", source)
        base = user_metadata(document.metadata)
        return [
            LCDocument(
                id=sentence_id(source, seed.begin),
                page_content=seed.text,
                metadata={
                    **base,
                    "spire_source": source,
                    "spire_paths": encode_paths(seed.paths),
                    "spire_begin": encode_paths([seed.begin]),
                },
            )
            for seed in units
        ]

    def transform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """One ``Document`` per seed of every input, in input and document order."""
        return [piece for document in documents for piece in self.split(document)]

    async def atransform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """:meth:`transform_documents` off the event loop (parsing is CPU work)."""
        return await run_in_executor(None, self.transform_documents, documents, **kwargs)
