"""``spire serve``: the HTTP JSON API answers what ``spire query --json`` answers, from one loaded store."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding

import spire_llamaindex.serve as serve_module
from spire_llamaindex.cli import main
from spire_llamaindex.serve import QueryService, SpireServer
from spire_llamaindex.store import load_store

from .conftest import QUESTION

PHRASE = "30 seconds and one day"


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def ask(server: SpireServer, question: str, **params: Any) -> tuple[int, dict[str, Any]]:
    return get(f"{server.url}/query?{urllib.parse.urlencode({'q': question, **params})}")


@pytest.fixture(scope="module")
def server(example_store: Path, embed_model: BaseEmbedding) -> Iterator[SpireServer]:
    service = QueryService(load_store(example_store, embed_model=embed_model))
    service.warm()
    server = SpireServer(service, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_query_returns_the_json_of_spire_query(
    server: SpireServer, example_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, payload = ask(server, QUESTION, budget=400)
    assert status == 200
    cits = [c for r in payload["results"] for c in r["citations"]]
    hit = next(c for c in cits if PHRASE in c["text"])  # the answer sentence is cited
    assert hit["doc_id"] == "postgresql-wal.html" and "checkpoint_timeout" in hit["text"]
    assert sum(r["cost"] for r in payload["results"]) <= 400 and payload["budget"] == 400

    assert main(["query", "--store", str(example_store), QUESTION, "--json", "--budget", "400"]) == 0
    cli = json.loads(capsys.readouterr().out)

    def strip(p: dict[str, Any]) -> Any:
        return [(r["doc_id"], r["text"], r["cost"], [c["id"] for c in r["citations"]]) for r in p["results"]]

    assert strip(payload) == strip(cli) and payload.keys() == cli.keys() and payload["filter"] is None
    assert [r["score"] for r in payload["results"]] == pytest.approx([r["score"] for r in cli["results"]], abs=1e-5)


def test_concurrent_queries_and_budgets(server: SpireServer) -> None:
    answers: list[tuple[int, dict[str, Any]]] = []

    def one(budget: int) -> None:
        answers.append(ask(server, QUESTION, budget=budget))

    threads = [threading.Thread(target=one, args=(b,)) for b in (200, 400, 200, 1000, 400, 1000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(answers) == 6
    for status, payload in answers:
        assert status == 200 and sum(r["cost"] for r in payload["results"]) <= payload["budget"]
        assert any(PHRASE in c["text"] for r in payload["results"] for c in r["citations"])


def test_health_and_errors(server: SpireServer, example_store: Path) -> None:
    status, health = get(f"{server.url}/health")
    assert status == 200 and health["status"] == "ok" and health["pages"] == 4 and health["nodes"] > 100
    assert health["store"] == str(example_store)
    for params, message in (
        ({"q": " "}, "empty"),
        ({"q": "x", "budget": "0"}, "budget"),
        ({"q": "x", "budget": "a"}, "integer"),
    ):
        status, body = get(f"{server.url}/query?{urllib.parse.urlencode(params)}")
        assert status == 400 and message in body["error"]
    assert get(f"{server.url}/query")[0] == 400
    status, body = get(f"{server.url}/nope")
    assert status == 404 and "/query" in body["error"]


def test_spire_serve_command(
    example_store: Path, embed_model: BaseEmbedding, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``spire serve --port 0`` prints its address, answers, and stops on Ctrl-C (here: shutdown)."""
    started: list[SpireServer] = []
    ready = threading.Event()

    class Recorded(SpireServer):
        def serve_forever(self, poll_interval: float = 0.5) -> None:
            started.append(self)
            ready.set()
            super().serve_forever(poll_interval)

    monkeypatch.setattr(serve_module, "SpireServer", Recorded)
    codes: list[int] = []
    thread = threading.Thread(
        target=lambda: codes.append(main(["serve", "--store", str(example_store), "--port", "0"]))
    )
    thread.start()
    assert ready.wait(120)
    (server,) = started
    try:
        status, payload = ask(server, QUESTION)
        assert status == 200 and any(PHRASE in c["text"] for r in payload["results"] for c in r["citations"])
    finally:
        server.shutdown()
        thread.join(30)
    assert codes == [0]
    assert f"on {server.url} " in capsys.readouterr().out
    assert main(["serve", "--store", str(example_store), "--port", "70000"]) == 2
