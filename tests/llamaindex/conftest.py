"""Helpers of the LlamaIndex adapter tests. The packaged model and the example store (``embed_model``,
``example_store``, ``example``) are session fixtures of :mod:`tests.support.example_store`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from tests.support.example_store import EXAMPLE_PAGES as EXAMPLE_PAGES

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


def label_of(prompt: str, phrase: str) -> str:
    """The label (``E7``) wrapping ``phrase`` in an evidence-filter prompt."""
    import re

    for m in re.finditer(r"<(E\d+)>(.*?)</\1>", prompt, re.S):
        if phrase in m.group(2):
            return m.group(1)
    raise AssertionError(f"{phrase!r} is not in a labelled unit of the prompt")


def texts(nodes: Sequence[Any]) -> str:
    return "\n".join(n.node.get_content() for n in nodes)
