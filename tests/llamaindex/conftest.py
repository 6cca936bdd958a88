"""Fixtures of the LlamaIndex adapter tests: the packaged model once per session, the example store."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from spire_llamaindex import Store, default_embeddings, load_store
from spire_llamaindex.cli import main
from spire_llamaindex.serve import QueryService, SpireServer

EXAMPLE_PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"
QUESTION = "What is the valid range of checkpoint_timeout?"


class FixedLLM(CustomLLM):
    """An LLM that always answers ``answer`` (or raises ``error``); records the prompts it got."""

    answer: str = ""
    error: str | None = None
    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        if self.error:
            raise RuntimeError(self.error)
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield self.complete(prompt)


@pytest.fixture(scope="session")
def embed_model() -> BaseEmbedding:
    """The packaged all-MiniLM-L6-v2, loaded once."""
    return default_embeddings()


@pytest.fixture(scope="session")
def example_store(tmp_path_factory: pytest.TempPathFactory, embed_model: BaseEmbedding) -> Path:
    """``spire index examples/pages --store DIR`` run once per session (the slow part: embedding)."""
    store = tmp_path_factory.mktemp("store") / "examples"
    assert main(["index", str(EXAMPLE_PAGES), "--store", str(store), "--quiet"]) == 0
    return store


@pytest.fixture(scope="session")
def example(example_store: Path, embed_model: BaseEmbedding) -> Store:
    """The example store, opened."""
    return load_store(example_store, embed_model=embed_model)


def label_of(prompt: str, phrase: str) -> str:
    """The label (``E7``) wrapping ``phrase`` in an evidence-filter prompt."""
    import re

    for m in re.finditer(r"<(E\d+)>(.*?)</\1>", prompt, re.S):
        if phrase in m.group(2):
            return m.group(1)
    raise AssertionError(f"{phrase!r} is not in a labelled unit of the prompt")


def texts(nodes: Sequence[Any]) -> str:
    return "\n".join(n.node.get_content() for n in nodes)


def serving(service: QueryService) -> Iterator[SpireServer]:
    """``service`` warmed and served over HTTP on a free port of 127.0.0.1 while the caller holds it."""
    service.warm()
    server = SpireServer(service, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)
