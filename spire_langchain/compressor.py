"""``SpireEvidenceFilter``: an LLM picks the evidence sentences of retrieved pages (a document compressor)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document as LCDocument
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.stores import BaseStore
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from spire_core import (
    HTML,
    DocumentCache,
    Evidence,
    PathFormatError,
    Policy,
    Subdocument,
    aselect_evidence,
    from_metadata,
    select_evidence,
    subdocuments,
)
from spire_core import Document as SpireDocument
from spire_core.options import DEFAULT_SIZE, DEFAULT_TARGET, Fmt, OnError
from spire_core.results.schema import DOC_ID, FILTER, filter_report
from spire_core.size import SizeFn

from ._source import page_loader
from .retriever import SpireRetriever, result_document

log = logging.getLogger(__name__)


class SpireEvidenceFilter(BaseDocumentCompressor):
    """Keep only the sentences a language model needs to answer the query (SPIRE Section 3.2).

    Plugs into ``ContextualCompressionRetriever`` after a :class:`SpireRetriever`. Each
    retrieved page is grown with local context toward ``target``, its sentences are
    labelled, and ``llm`` (any chat model, LLM or runnable taking a prompt string) answers
    with the labels it needs, via :func:`spire_core.select_evidence`. The result is one
    ``Document`` per page that keeps a chosen sentence: the chosen sentences rendered with
    their global context, ``metadata["spire_citations"]`` holding exactly them and
    ``metadata["spire_filter"]`` what the model chose (``{"ok", "labels", "unknown", "error"}``).

    When the model fails or its answer holds no labels, ``on_error="keep"`` logs a warning
    and returns the input documents unchanged (with ``metadata["spire_filter"]["ok"] == False``);
    ``on_error="raise"`` raises :class:`spire_core.EvidenceFilterError`. Documents that
    did not come from a SPIRE retriever pass through unchanged.

    The parsed pages come from ``documents`` (share :attr:`SpireRetriever.documents`, see
    :meth:`from_retriever`) or are loaded from ``docstore``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Runnable[Any, Any]
    documents: Callable[[str], SpireDocument] | None = None
    docstore: BaseStore[str, LCDocument] | None = None
    target: int = Field(default=DEFAULT_TARGET, gt=0)
    size: Callable[[str], int] = DEFAULT_SIZE
    policy: Policy = HTML
    fmt: Fmt = "markdown"
    on_error: OnError = "keep"

    _pages: Callable[[str], SpireDocument] = PrivateAttr()

    @model_validator(mode="after")
    def _needs_pages(self) -> SpireEvidenceFilter:
        if self.documents is not None:
            self._pages = self.documents
        elif self.docstore is not None:
            self._pages = DocumentCache(page_loader(self.docstore))
        else:
            raise ValueError("SpireEvidenceFilter needs documents (e.g. retriever.documents) or a docstore")
        return self

    @classmethod
    def from_retriever(
        cls,
        retriever: SpireRetriever,
        llm: Runnable[Any, Any],
        *,
        target: int = DEFAULT_TARGET,
        size: SizeFn | None = None,
        policy: Policy | None = None,
        fmt: Fmt | None = None,
        on_error: OnError = "keep",
    ) -> SpireEvidenceFilter:
        """A filter sharing ``retriever``'s parsed pages (and, unless given, its size, policy and format)."""
        return cls(
            llm=llm,
            documents=retriever.documents,
            target=target,
            size=retriever.size if size is None else size,
            policy=retriever.policy if policy is None else policy,
            fmt=retriever.fmt if fmt is None else fmt,
            on_error=on_error,
        )

    # -- LangChain Documents <-> SPIRE results ----------------------------------------------
    def _results(self, documents: Sequence[LCDocument]) -> tuple[list[LCDocument], list[Subdocument], list[LCDocument]]:
        spire: list[LCDocument] = []
        results: list[Subdocument] = []
        other: list[LCDocument] = []
        for doc in documents:
            try:
                sub = from_metadata(doc.metadata, doc.page_content, size=self.size)
            except PathFormatError as err:
                log.warning("evidence filter: %s: the document passes through unfiltered", err)
                sub = None
            else:
                if sub is None:
                    log.warning("evidence filter: a document without SPIRE metadata passes through unfiltered")
            if sub is None:
                other.append(doc)
                continue
            results.append(sub)
            spire.append(doc)
        return spire, results, other

    def _documents(self, inputs: list[LCDocument], results: list[Subdocument], evidence: Evidence) -> list[LCDocument]:
        report = filter_report(evidence.selection)
        if not evidence.selection.ok:
            return [
                LCDocument(id=d.id, page_content=d.page_content, metadata={**d.metadata, FILTER: report})
                for d in inputs
            ]
        scores = {sub.doc_id: sub.score for sub in reversed(results)}  # the first result's score per page
        chosen = {
            sub.doc_id: sub
            for sub in subdocuments(
                evidence.citations, self._pages, policy=self.policy, fmt=self.fmt, size=self.size, scores=scores
            )
        }
        out: list[LCDocument] = []
        for doc in inputs:
            sub = chosen.pop(doc.metadata[DOC_ID], None)
            if sub is not None:
                kept = result_document(sub, doc)
                kept.metadata[FILTER] = report
                out.append(kept)
        return out

    # -- the compressor ---------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        return {"target": self.target, "size": self.size, "policy": self.policy, "on_error": self.on_error}

    def compress_documents(
        self, documents: Sequence[LCDocument], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[LCDocument]:
        """The pages restricted to the sentences the model chose (pages with none are dropped)."""
        spire, results, other = self._results(documents)
        if not results:
            return list(other)

        def ask(prompt: str) -> str:
            return _text(self.llm.invoke(prompt, config={"callbacks": callbacks}))

        evidence = select_evidence(query, results, self._pages, ask, **self._options())
        return [*self._documents(spire, results, evidence), *other]

    async def acompress_documents(
        self, documents: Sequence[LCDocument], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[LCDocument]:
        """Async :meth:`compress_documents` (the model is awaited)."""
        spire, results, other = self._results(documents)
        if not results:
            return list(other)

        async def ask(prompt: str) -> str:
            return _text(await self.llm.ainvoke(prompt, config={"callbacks": callbacks}))

        evidence = await aselect_evidence(query, results, self._pages, ask, **self._options())
        return [*self._documents(spire, results, evidence), *other]


def _text(answer: Any) -> str:
    """The text of a model's answer: a message's text, or the string itself."""
    if isinstance(answer, BaseMessage):
        text = answer.text
        return text if isinstance(text, str) else text()
    return answer if isinstance(answer, str) else str(answer)
