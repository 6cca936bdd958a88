"""The LangChain quickstart: offline with the fake chat model, and against an OpenAI-compatible server."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from spire_langchain import SpireRetriever
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "langchain_quickstart.py"


def _quickstart() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langchain_quickstart", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_offline_answer_cites_the_right_sentence(
    example_index: SpireRetriever, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _quickstart().main([], retriever=example_index) == 0
    out = capsys.readouterr().out
    assert "A: checkpoint_timeout can be set between 30 seconds and one day" in out
    # the canned answer cites [1]: it must really be the sentence that says so
    source = out.split("[1] ", 1)[1]
    assert source.startswith("postgresql-wal.html paths=")
    assert "30 seconds and one day" in source and "checkpoint_timeout" in source
    assert "[2]" not in source  # only cited sources are listed


def test_openai_compatible_server(example_index: SpireRetriever, capsys: pytest.CaptureFixture[str]) -> None:
    def answer(prompt: str) -> str:
        hit = re.findall(r"30 seconds and one day\.[^\[\n]*\[(\d+)\]", prompt)  # the marker ending its block
        return f"Between 30 seconds and one day [{hit[0]}]." if hit else "I do not know."

    with OpenAIStub(answer) as stub:
        assert _quickstart().main(["--base-url", stub.base_url, "--model", "stub"], retriever=example_index) == 0
    prompt = "\n".join(m["content"] for m in stub.requests[0]["messages"])
    assert "Question: What is the valid range of checkpoint_timeout?" in prompt
    assert "Source: postgresql-wal.html" in prompt
    out = capsys.readouterr().out
    cited = re.search(r"A: Between 30 seconds and one day \[(\d+)\]\.", out)
    assert cited, out
    assert f"[{cited.group(1)}] postgresql-wal.html paths=" in out
