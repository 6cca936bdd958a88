"""``SpireEvidenceFilter``: an LLM picks the evidence sentences of retrieved pages (a document compressor)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document as LCDocument
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.stores import BaseStore
from pydantic import ConfigDict, PrivateAttr, model_validator

from spire_core import (
    HTML,
    Citation,
    DocumentCache,
    Evidence,
    PathFormatError,
    Policy,
    Subdocument,
    approx_tokens,
    aselect_evidence,
    decode_paths,
    encode_paths,
    global_context,
    render,
    select_evidence,
)
from spire_core import Document as SpireDocument

from ._source import citations_of, user_metadata
from .retriever import SpireRetriever

log = logging.getLogger(__name__)


class SpireEvidenceFilter(BaseDocumentCompressor):
    """Keep only the sentences a language model needs to answer the query (SPIRE Section 3.2).

    Plugs into ``ContextualCompressionRetriever`` after a :class:`SpireRetriever`. Each
    retrieved page is grown with local context toward ``target``, its sentences are
    labelled, and ``llm`` (any chat model, LLM or runnable taking a prompt string) answers
    with the labels it needs, via :func:`spire_core.select_evidence`. The result is one
    ``Document`` per page that keeps a chosen sentence: the chosen sentences rendered with
    their global context, ``metadata["citations"]`` holding exactly them.

    When the model fails or its answer holds no labels, ``on_error="keep"`` logs a warning
    and returns the input documents unchanged (marked ``metadata["spire_filtered"] = False``);
    ``on_error="raise"`` raises :class:`spire_core.EvidenceFilterError`. Documents that
    did not come from a SPIRE retriever pass through unchanged.

    The parsed pages come from ``documents`` (share :attr:`SpireRetriever.documents`, see
    :meth:`from_retriever`) or are loaded from ``docstore``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Runnable[Any, Any]
    documents: Callable[[str], SpireDocument] | None = None
    docstore: BaseStore[str, LCDocument] | None = None
    target: int = 400
    size: Callable[[str], int] = approx_tokens
    policy: Policy = HTML
    fmt: Literal["markdown", "text"] = "markdown"
    on_error: Literal["keep", "raise"] = "keep"

    _pages: Callable[[str], SpireDocument] = PrivateAttr()

    @model_validator(mode="after")
    def _needs_pages(self) -> SpireEvidenceFilter:
        if self.documents is not None:
            self._pages = self.documents
        elif self.docstore is not None:
            store = self.docstore

            def load(source: str) -> str:
                found = store.mget([source])[0]
                if found is None:
                    raise KeyError(f"source {source!r} is not in the docstore")
                return found.page_content

            self._pages = DocumentCache(load)
        else:
            raise ValueError("SpireEvidenceFilter needs documents (e.g. retriever.documents) or a docstore")
        return self

    @classmethod
    def from_retriever(cls, retriever: SpireRetriever, llm: Runnable[Any, Any], **kwargs: Any) -> SpireEvidenceFilter:
        """A filter sharing ``retriever``'s parsed pages, size function and policy."""
        options: dict[str, Any] = {"size": retriever.size, "policy": retriever.policy, "fmt": retriever.fmt}
        return cls(llm=llm, documents=retriever.documents, **{**options, **kwargs})

    # -- LangChain Documents <-> SPIRE results ----------------------------------------------
    def _results(self, documents: Sequence[LCDocument]) -> tuple[list[LCDocument], list[Subdocument], list[LCDocument]]:
        spire: list[LCDocument] = []
        results: list[Subdocument] = []
        other: list[LCDocument] = []
        for doc in documents:
            meta = doc.metadata
            source, encoded = meta.get("spire_source"), meta.get("spire_paths")
            if not isinstance(source, str) or not isinstance(encoded, str):
                log.warning("evidence filter: a document without SPIRE metadata passes through unfiltered")
                other.append(doc)
                continue
            try:
                paths = decode_paths(encoded)
                seeds = decode_paths(meta.get("spire_seeds") or encoded)
            except PathFormatError as err:
                log.warning("evidence filter: %s: the document passes through unfiltered", err)
                other.append(doc)
                continue
            cost = meta.get("spire_cost")
            score = meta.get("score")
            results.append(
                Subdocument(
                    doc_id=source,
                    seeds=seeds,
                    paths=paths,
                    text=doc.page_content,
                    cost=cost if isinstance(cost, int) else self.size(doc.page_content),
                    score=float(score) if isinstance(score, int | float) else 0.0,
                    citations=citations_of(doc),
                )
            )
            spire.append(doc)
        return spire, results, other

    def _documents(self, inputs: list[LCDocument], evidence: Evidence) -> list[LCDocument]:
        if not evidence.selection.ok:
            return [
                LCDocument(page_content=d.page_content, metadata={**d.metadata, "spire_filtered": False})
                for d in inputs
            ]
        chosen: dict[str, list[Citation]] = {}
        for citation in evidence.citations:
            chosen.setdefault(citation.doc_id, []).append(citation)
        out: list[LCDocument] = []
        for doc in inputs:
            source = doc.metadata["spire_source"]
            citations = chosen.pop(source, None)
            if not citations:
                continue
            page = self._pages(source)
            seeds = frozenset(p for c in citations for p in c.paths)
            paths = global_context(page, seeds, self.policy)
            text = render(page, paths, fmt=self.fmt)
            out.append(
                LCDocument(
                    page_content=text,
                    metadata={
                        **user_metadata(doc.metadata),
                        "spire_source": source,
                        "spire_paths": encode_paths(paths),
                        "spire_seeds": encode_paths(seeds),
                        "spire_cost": self.size(text),
                        "citations": [c.to_dict() for c in citations],
                        "spire_filtered": True,
                    },
                )
            )
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
        return [*self._documents(spire, evidence), *other]

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
        return [*self._documents(spire, evidence), *other]


def _text(answer: Any) -> str:
    """The text of a model's answer: a message's text, or the string itself."""
    if isinstance(answer, BaseMessage):
        text = answer.text
        return text if isinstance(text, str) else text()
    return answer if isinstance(answer, str) else str(answer)
