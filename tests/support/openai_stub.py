"""A local OpenAI-compatible HTTP server for tests (127.0.0.1 only, real HTTP).

    with OpenAIStub(lambda prompt: '["E1"]') as stub:
        llm = OpenAILike(api_base=stub.base_url, model="stub", api_key="x", is_chat_model=True)

``responder`` gets the prompt text (chat messages joined by newlines) and returns the
completion text; ``delay`` (seconds) makes each answer late, to test time-outs. Every
request body is kept in ``stub.requests``.

:func:`echo_context` is a responder whose answer shows what the model was given: an evidence
filter prompt gets the label of the passage that shares most of the question's words, any other
prompt its context (the prompt without its instructions and question), so a test can check that
the retrieved evidence reached the LLM, and that a filter's labels map back to that evidence.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OpenAIStub:
    def __init__(self, responder: Callable[[str], str], *, delay: float = 0.0) -> None:
        self.responder = responder
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                stub.requests.append(body)
                if stub.delay:
                    time.sleep(stub.delay)
                if "messages" in body:
                    prompt = "\n".join(_content(m.get("content")) for m in body["messages"])
                else:
                    prompt = str(body.get("prompt", ""))
                text = stub.responder(prompt)
                if self.path.rstrip("/").endswith("chat/completions"):
                    choice: dict[str, Any] = {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                    kind = "chat.completion"
                else:
                    choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
                    kind = "text_completion"
                payload = {
                    "id": "stub-1",
                    "object": kind,
                    "created": int(time.time()),
                    "model": body.get("model", "stub"),
                    "choices": [choice],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _content(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


#: Lines of a prompt that are its instructions or question, not its context: the question lines
#: (``Question:``, ``Query:``, ``Answer:``) and the fixed lines of LlamaIndex's question-answer
#: templates (context framing, the system prompt's rules).
_NOT_CONTEXT = re.compile(
    r"^\s*(?:question|query|answer)\s*:"
    r"|^\s*-{5,}\s*$"
    r"|^context information is below\.?\s*$"
    r"|^given the context information"
    r"|^you are an expert q&a system"
    r"|^always answer the query"
    r"|^some rules to follow"
    r"|^\d+\. (?:never directly reference|avoid statements like)",
    re.I,
)
_LABELLED = re.compile(r"<(E\d+)>(.*?)</\1>", re.S)
_QUESTION = re.compile(r"^\s*question\s*:(.*)$", re.I | re.M)
_WORD = re.compile(r"\w{4,}")
_NOT_WORDS = frozenset({"what", "which", "when", "where", "does", "there", "that", "this", "with"})


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _NOT_WORDS}


def echo_context(prompt: str) -> str:
    """An evidence-filter prompt (labelled passages ``<E1>...</E1>``) gets ``["Ek"]``: the passage
    sharing most words of four letters or more with its ``Question:`` line (the first such passage
    on a tie, ``E1`` when none shares a word); any other prompt gets back its context verbatim: its
    lines less the instruction and question lines (:data:`_NOT_CONTEXT`) and a leading one-line
    instruction (``Answer from the context only.``, then a blank line)."""
    labelled = _LABELLED.findall(prompt)
    if labelled:
        question = _QUESTION.search(prompt)
        asked = _words(question.group(1)) if question else set()
        best = max(labelled, key=lambda unit: len(asked & _words(unit[1])))
        return f'["{best[0]}"]'
    lines = prompt.splitlines()
    if len(lines) > 1 and lines[1].strip() == "":  # a one-line instruction, then the context
        lines = lines[2:]
    return "\n".join(line for line in lines if not _NOT_CONTEXT.search(line)).strip()
