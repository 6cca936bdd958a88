"""SpireEvidenceFilter: one LLM call picks the evidence among SpireRetriever's results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, field_serializer
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore

from spire_core import HTML, Evidence, Policy, Subdocument, aselect_evidence, select_evidence, subdocuments
from spire_core.options import DEFAULT_SIZE, DEFAULT_TARGET, Fmt, OnError
from spire_core.results.schema import FILTER, filter_report
from spire_core.size import SizeFn

from ._source import SourceDocuments, log
from .retriever import SpireRetriever, as_sources, result_node, subdocument_of


class SpireEvidenceFilter(BaseNodePostprocessor):
    """Keep only the evidence an LLM selects from :class:`~spire_llamaindex.SpireRetriever` results.

    Each result is expanded with local context toward ``target`` tokens, its sentences are
    labelled, and one ``llm`` call (any LlamaIndex LLM: ``complete``/``acomplete``) returns the
    labels needed to answer the query (:func:`spire_core.select_evidence`). The output has one
    node per document that kept evidence: the selected units rendered with their global
    context, ``metadata["spire_citations"]`` the selected citations, and ``metadata["spire_filter"]``
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
    target: int = Field(default=DEFAULT_TARGET, gt=0, description="Size each result is expanded toward.")
    size: Callable[[str], int] = Field(default=DEFAULT_SIZE, exclude=True, description="Size function.")
    policy: Policy = Field(default=HTML, description="Global-context policy of the citations.")
    fmt: Fmt = Field(default="markdown", description="Rendering of the kept evidence.")
    on_error: OnError = Field(default="keep", description="LLM failure: keep the input, or raise.")

    def __init__(
        self,
        llm: LLM,
        source: SpireRetriever | BaseDocumentStore | SourceDocuments,
        *,
        target: int = DEFAULT_TARGET,
        size: SizeFn | None = None,
        policy: Policy | None = None,
        fmt: Fmt | None = None,
        on_error: OnError = "keep",
    ) -> None:
        """``size``, ``policy`` and ``fmt`` default to the retriever's when ``source`` is one."""
        if isinstance(source, SpireRetriever):
            size = source.size if size is None else size
            policy = source.policy if policy is None else policy
            fmt = source.fmt if fmt is None else fmt
        fields: dict[str, Any] = {
            "llm": llm,
            "sources": as_sources(source),
            "target": target,
            "size": DEFAULT_SIZE if size is None else size,
            "policy": HTML if policy is None else policy,
            "fmt": "markdown" if fmt is None else fmt,
            "on_error": on_error,
        }
        super().__init__(**fields)

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
        report = filter_report(evidence.selection)
        if not evidence.selection.ok:  # degraded: select_evidence logged why; keep everything
            return [_with_metadata(n, {FILTER: report}) if subdocument_of(n) else n for n in nodes]
        retrieved = [sub for n in nodes if (sub := subdocument_of(n)) is not None]
        scores = {sub.doc_id: sub.score for sub in reversed(retrieved)}  # the first result's score per page
        kept = {
            sub.doc_id: sub
            for sub in subdocuments(
                evidence.citations, self.sources, policy=self.policy, fmt=self.fmt, size=self.size, scores=scores
            )
        }
        out: list[NodeWithScore] = []
        for n in nodes:
            sub = subdocument_of(n)
            if sub is None:
                out.append(n)
            elif sub.doc_id in kept:
                out.append(self._node(kept.pop(sub.doc_id), report))
        if not any(subdocument_of(n) for n in out):
            log.info("SpireEvidenceFilter: the model selected no evidence (%r)", evidence.selection.raw[:200])
        return out

    def _node(self, sub: Subdocument, report: dict[str, Any]) -> NodeWithScore:
        source, source_hash = self.sources.source(sub.doc_id)
        return result_node(sub, source, source_hash=source_hash, extra={FILTER: report})


def _with_metadata(node: NodeWithScore, extra: dict[str, Any]) -> NodeWithScore:
    inner = node.node.model_copy(update={"metadata": {**node.node.metadata, **extra}})
    return NodeWithScore(node=inner, score=node.score)
