"""A local OpenAI-compatible HTTP server for tests (127.0.0.1 only, real HTTP).

    with OpenAIStub(lambda prompt: '["E1"]') as stub:
        llm = OpenAILike(api_base=stub.base_url, model="stub", api_key="x", is_chat_model=True)

``responder`` gets the prompt text (chat messages joined by newlines) and returns the
completion text; ``delay`` (seconds) makes each answer late, to test time-outs. Every
request body is kept in ``stub.requests``.
"""

from __future__ import annotations

import json
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
