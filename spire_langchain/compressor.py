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

from spire_core import HTML, DocumentCache, PathFormatError, Policy, Subdocument, from_metadata
from spire_core import Document as SpireDocument
from spire_core.options import DEFAULT_SIZE, DEFAULT_TARGET, Fmt, OnError, QueryOptions
from spire_core.pipeline import Filtered, afilter_results, arrange, filter_results
from spire_core.results.schema import FILTER

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

    The parsed pages come from the retriever given as ``source`` (or ``sources``: e.g. its
    ``retriever.sources``), or are loaded from a ``docstore``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Runnable[Any, Any]
    sources: Callable[[str], SpireDocument] | None = None
    docstore: BaseStore[str, LCDocument] | None = None
    target: int = Field(default=DEFAULT_TARGET, gt=0)
    size: Callable[[str], int] = DEFAULT_SIZE
    policy: Policy = HTML
    fmt: Fmt = "markdown"
    on_error: OnError = "keep"

    _pages: Callable[[str], SpireDocument] = PrivateAttr()

    @model_validator(mode="after")
    def _needs_pages(self) -> SpireEvidenceFilter:
        if self.sources is not None:
            self._pages = self.sources
        elif self.docstore is not None:
            self._pages = DocumentCache(page_loader(self.docstore))
        else:
            raise ValueError("SpireEvidenceFilter needs sources (e.g. retriever.sources) or a docstore")
        return self

    def __init__(
        self,
        llm: Runnable[Any, Any] | None = None,
        source: SpireRetriever | BaseStore[str, LCDocument] | None = None,
        /,
        **fields: Any,
    ) -> None:
        """``SpireEvidenceFilter(llm, source)``, as in ``spire_llamaindex``: ``source`` is the retriever
        (sharing its parsed pages and, unless given, its size, policy and format) or the docstore of
        the source pages. The fields may also be given by name (``llm=``, ``sources=``, ``docstore=``)."""
        if llm is not None:
            fields["llm"] = llm
        if isinstance(source, SpireRetriever):
            fields.setdefault("sources", source.sources)
            for name in ("size", "policy", "fmt"):
                if fields.get(name) is None:
                    fields[name] = getattr(source, name)
        elif source is not None:
            fields["docstore"] = source
        super().__init__(**{k: v for k, v in fields.items() if v is not None})

    # -- LangChain Documents <-> SPIRE results ----------------------------------------------
    def _result(self, doc: LCDocument) -> Subdocument | None:
        """The SPIRE result ``doc`` stands for; None for other documents (they pass through unfiltered)."""
        try:
            return from_metadata(doc.metadata, doc.page_content, size=self.size)
        except PathFormatError:
            return None

    def _results(self, documents: Sequence[LCDocument]) -> list[Subdocument]:
        results = []
        for doc in documents:
            sub = self._result(doc)
            if sub is None:
                log.warning("evidence filter: a document without SPIRE metadata passes through unfiltered")
            else:
                results.append(sub)
        return results

    # -- the compressor ---------------------------------------------------------------------
    @property
    def options(self) -> QueryOptions:
        return QueryOptions(size=self.size, policy=self.policy, fmt=self.fmt)

    def _documents(self, documents: Sequence[LCDocument], filtered: Filtered) -> list[LCDocument]:
        out: list[LCDocument] = []
        for doc, chosen in arrange(documents, self._result, filtered):
            if chosen is not None:
                kept = result_document(chosen, doc)
                kept.metadata[FILTER] = filtered.report
                out.append(kept)
            elif self._result(doc) is not None:  # the filter could not be used: the result stands
                out.append(
                    LCDocument(
                        id=doc.id, page_content=doc.page_content, metadata={**doc.metadata, FILTER: filtered.report}
                    )
                )
            else:
                out.append(doc)
        return out

    def compress_documents(
        self, documents: Sequence[LCDocument], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[LCDocument]:
        """The pages restricted to the sentences the model chose (pages with none are dropped)."""
        results = self._results(documents)
        if not results:
            return list(documents)

        def ask(prompt: str) -> str:
            return _text(self.llm.invoke(prompt, config={"callbacks": callbacks}))

        filtered = filter_results(
            query, results, self._pages, ask, options=self.options, target=self.target, on_error=self.on_error
        )
        return self._documents(documents, filtered)

    async def acompress_documents(
        self, documents: Sequence[LCDocument], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[LCDocument]:
        """Async :meth:`compress_documents` (the model is awaited)."""
        results = self._results(documents)
        if not results:
            return list(documents)

        async def ask(prompt: str) -> str:
            return _text(await self.llm.ainvoke(prompt, config={"callbacks": callbacks}))

        filtered = await afilter_results(
            query, results, self._pages, ask, options=self.options, target=self.target, on_error=self.on_error
        )
        return self._documents(documents, filtered)


def _text(answer: Any) -> str:
    """The text of a model's answer: a message's text, or the string itself."""
    if isinstance(answer, BaseMessage):
        text = answer.text
        return text if isinstance(text, str) else text()
    return answer if isinstance(answer, str) else str(answer)
