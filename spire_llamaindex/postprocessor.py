"""SpireEvidenceFilter: one LLM call picks the evidence among SpireRetriever's results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from llama_index.core.bridge.pydantic import Field, field_serializer
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore

from spire_core import (
    HTML,
    Citation,
    Evidence,
    Policy,
    SpireError,
    Subdocument,
    aselect_evidence,
    global_context,
    render,
    select_evidence,
)
from spire_core.size import default_size

from ._source import FILTER, SourceDocuments, log
from .retriever import SpireRetriever, as_sources, result_node, subdocument_of


class SpireEvidenceFilter(BaseNodePostprocessor):
    """Keep only the evidence an LLM selects from :class:`~spire_llamaindex.SpireRetriever` results.

    Each result is expanded with local context toward ``target`` tokens, its sentences are
    labelled, and one ``llm`` call (any LlamaIndex LLM: ``complete``/``acomplete``) returns the
    labels needed to answer the query (:func:`spire_core.select_evidence`). The output has one
    node per document that kept evidence: the selected units rendered with their global
    context, ``metadata["citations"]`` the selected citations, and ``metadata["spire_filter"]``
    what the model chose.

    ``source`` is the retriever (sharing its parsed-page cache), a docstore holding the
    source pages, or :class:`SourceDocuments`. When the LLM call fails or its answer holds no
    labels, a warning is logged and the input nodes come back unchanged with
    ``metadata["spire_filter"]["ok"] == False`` (``on_error="raise"`` raises
    :class:`spire_core.EvidenceFilterError` instead). Nodes that are not SPIRE results pass
    through untouched.
    """

    llm: LLM = Field(description="The LLM that picks the labels.")
    sources: SourceDocuments = Field(exclude=True, description="Source pages by document id.")
    target: int = Field(default=400, description="Size each result is expanded toward (size units).")
    size: Callable[[str], int] = Field(default_factory=default_size, exclude=True, description="Size function.")
    policy: Policy = Field(default=HTML, description="Global-context policy of the citations.")
    fmt: str = Field(default="markdown", description="Rendering of the kept evidence.")
    on_error: Literal["keep", "raise"] = Field(default="keep", description="LLM failure: keep the input, or raise.")

    def __init__(
        self,
        llm: LLM,
        source: SpireRetriever | BaseDocumentStore | SourceDocuments,
        **kwargs: Any,
    ) -> None:
        if isinstance(source, SpireRetriever):
            kwargs.setdefault("policy", source.policy)
            kwargs.setdefault("size", source.size)
            kwargs.setdefault("fmt", source.fmt)
        kwargs.update(llm=llm, sources=as_sources(source))
        super().__init__(**kwargs)

    @field_serializer("policy")
    def _policy_name(self, policy: Policy) -> str:
        return policy.name

    @classmethod
    def class_name(cls) -> str:
        return "SpireEvidenceFilter"

    # -- the filter --------------------------------------------------------------------
    def _split(self, nodes: Sequence[NodeWithScore]) -> list[Subdocument]:
        subs = []
        foreign = 0
        for n in nodes:
            sub = subdocument_of(n)
            if sub is None:
                foreign += 1
            else:
                subs.append(sub)
        if foreign:
            log.warning("SpireEvidenceFilter: %d node(s) are not SpireRetriever results: passed through", foreign)
        return subs

    def _query(self, query_bundle: QueryBundle | None) -> str:
        if query_bundle is None:
            raise ValueError("SpireEvidenceFilter needs the query: postprocess_nodes(nodes, query_str=...)")
        return query_bundle.query_str

    def _options(self) -> dict[str, Any]:
        return {"target": self.target, "size": self.size, "policy": self.policy, "on_error": self.on_error}

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = self._query(query_bundle)
        subs = self._split(nodes)
        if not subs:
            return list(nodes)

        def ask(prompt: str) -> str:
            return self.llm.complete(prompt).text

        return self._apply(nodes, select_evidence(query, subs, self.sources, ask, **self._options()))

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = self._query(query_bundle)
        subs = self._split(nodes)
        if not subs:
            return list(nodes)

        async def ask(prompt: str) -> str:
            return (await self.llm.acomplete(prompt)).text

        return self._apply(nodes, await aselect_evidence(query, subs, self.sources, ask, **self._options()))

    def _apply(self, nodes: Sequence[NodeWithScore], evidence: Evidence) -> list[NodeWithScore]:
        selection = evidence.selection
        report = {
            "ok": selection.ok,
            "labels": list(selection.labels),
            "unknown": list(selection.unknown),
            "error": selection.error,
        }
        if not selection.ok:  # degraded: select_evidence logged why; keep everything
            return [_with_metadata(n, {FILTER: report}) if subdocument_of(n) else n for n in nodes]
        by_doc: dict[str, list[Citation]] = {}
        for cit in evidence.citations:
            by_doc.setdefault(cit.doc_id, []).append(cit)
        out: list[NodeWithScore] = []
        for n in nodes:
            sub = subdocument_of(n)
            if sub is None:
                out.append(n)
                continue
            kept = by_doc.get(sub.doc_id)
            if kept:
                out.append(self._node(sub, kept, report))
        if not any(subdocument_of(n) for n in out):
            log.info("SpireEvidenceFilter: the model selected no evidence (%r)", selection.raw[:200])
        return out

    def _node(self, sub: Subdocument, kept: list[Citation], report: dict[str, Any]) -> NodeWithScore:
        doc = self.sources(sub.doc_id)
        seeds = frozenset(p for c in kept for p in c.paths)
        paths = global_context(doc, seeds, self.policy)
        text = render(doc, paths, fmt=self.fmt)
        narrowed = Subdocument(sub.doc_id, seeds, paths, text, self.size(text), sub.score, list(kept))
        try:
            source: BaseNode | None = self.sources.node(sub.doc_id)
        except SpireError:
            source = None
        return result_node(
            narrowed,
            source,
            source_hash=self.sources.docstore.get_document_hash(sub.doc_id),
            extra={FILTER: report},
        )


def _with_metadata(node: NodeWithScore, extra: dict[str, Any]) -> NodeWithScore:
    inner = node.node.model_copy(update={"metadata": {**node.node.metadata, **extra}})
    return NodeWithScore(node=inner, score=node.score)
