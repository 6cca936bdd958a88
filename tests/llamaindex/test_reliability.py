"""Reliability of the LlamaIndex adapter (issue 12): async retrieval under a saturated
default executor, and bulk indexing that skips a failing page."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.storage.docstore import SimpleDocumentStore

from spire_llamaindex import SpireNodeParser, SpireRetriever
from spire_llamaindex.index import build_index, store_sources, update_index

PAGE = "<title>Reliability</title><p>Alpha is first. Beta is second. Gamma is third.</p>"


class ThreadedSearch(BaseRetriever):
    """A search whose async variant runs on the default executor (as ``asyncio.to_thread`` stores do)."""

    def __init__(self, nodes: list[Any]) -> None:
        super().__init__()
        self.nodes = nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=n, score=1.0 - k / 100) for k, n in enumerate(self.nodes)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)


def test_concurrent_aretrieve_does_not_deadlock_on_the_default_executor() -> None:
    source = Document(text=PAGE, id_="r.html")
    nodes = SpireNodeParser().get_nodes_from_documents([source])
    docstore = SimpleDocumentStore()
    store_sources(docstore, [source])
    retriever = SpireRetriever(ThreadedSearch(nodes), docstore, budget=200)

    async def many() -> list[list[NodeWithScore]]:
        # more calls than the default executor has threads (min(32, cpus + 4))
        calls = [retriever.aretrieve("Which is second?") for _ in range(40)]
        return await asyncio.wait_for(asyncio.gather(*calls), timeout=60)

    results = asyncio.run(many())
    assert len(results) == 40 and all(r and "Beta is second." in r[0].node.get_content() for r in results)


def test_update_index_skips_a_page_whose_parse_fails_and_finishes_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    real = SpireNodeParser.parse_node

    def flaky(self: SpireNodeParser, source: Any) -> Any:
        if source.node_id == "bad.html":
            raise KeyError("a bug, not a SpireError")
        return real(self, source)

    monkeypatch.setattr(SpireNodeParser, "parse_node", flaky)
    parser = SpireNodeParser()
    index = build_index([], parser=parser, embed_model=MockEmbedding(embed_dim=8))
    pages = [Document(text=PAGE, id_=name) for name in ("a.html", "bad.html", "c.html")]
    report = update_index(index, pages, parser=parser, errors="skip")
    assert report.added == ["a.html", "c.html"]
    assert list(report.failed) == ["bad.html"] and "KeyError" in report.failed["bad.html"]
    with pytest.raises(KeyError):
        update_index(index, [Document(text=PAGE + " ", id_="bad.html")], parser=parser)
