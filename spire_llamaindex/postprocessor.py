"""SpireEvidenceFilter: one LLM call picks the evidence among SpireRetriever's results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, field_serializer
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.storage.docstore.types import BaseDocumentStore

from spire_core import HTML, Policy, Subdocument
from spire_core.options import DEFAULT_SIZE, DEFAULT_TARGET, Fmt, OnError, QueryOptions
from spire_core.pipeline import Filtered, afilter_results, arrange, filter_results
from spire_core.results.schema import FILTER
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
            size = source.options.size if size is None else size
            policy = source.options.policy if policy is None else policy
            fmt = source.options.fmt if fmt is None else fmt
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

    @property
    def options(self) -> QueryOptions:
        return QueryOptions(size=self.size, policy=self.policy, fmt=self.fmt)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = self._query(query_bundle)
        subs = self._split(nodes)
        if not subs:
            return list(nodes)

        def ask(prompt: str) -> str:
            return self.llm.complete(prompt).text

        filtered = filter_results(
            query, subs, self.sources, ask, options=self.options, target=self.target, on_error=self.on_error
        )
        return self._apply(nodes, filtered)

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = self._query(query_bundle)
        subs = self._split(nodes)
        if not subs:
            return list(nodes)

        async def ask(prompt: str) -> str:
            return (await self.llm.acomplete(prompt)).text

        filtered = await afilter_results(
            query, subs, self.sources, ask, options=self.options, target=self.target, on_error=self.on_error
        )
        return self._apply(nodes, filtered)

    def _apply(self, nodes: Sequence[NodeWithScore], filtered: Filtered) -> list[NodeWithScore]:
        out: list[NodeWithScore] = []
        for node, chosen in arrange(nodes, subdocument_of, filtered):
            if chosen is not None:
                source, source_hash = self.sources.source(chosen.doc_id)
                out.append(result_node(chosen, source, source_hash=source_hash, extra={FILTER: filtered.report}))
            elif subdocument_of(node) is not None:  # the filter could not be used: the result stands
                out.append(_with_metadata(node, {FILTER: filtered.report}))
            else:
                out.append(node)
        return out


def _with_metadata(node: NodeWithScore, extra: dict[str, Any]) -> NodeWithScore:
    inner = node.node.model_copy(update={"metadata": {**node.node.metadata, **extra}})
    return NodeWithScore(node=inner, score=node.score)
