"""``spire serve``: the HTTP JSON API answers what ``spire query --json`` answers, from one loaded store."""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding

import spire_app.serve as serve_module
from spire_app.cli import main
from spire_app.serve import QueryService, SpireServer
from spire_app.store import load_store
from tests.llamaindex.conftest import QUESTION

from .conftest import serving

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
    yield from serving(QueryService(load_store(example_store, embed_model=embed_model)))


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


def request(
    server: SpireServer, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request on a connection of its own: the status, the headers and the body."""
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def post(server: SpireServer, payload: Any, content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    status, _, data = request(server, "POST", "/query", body, {"Content-Type": content_type})
    return status, json.loads(data)


def test_post_query_returns_what_get_returns(server: SpireServer) -> None:
    options = {"budget": 400, "max_citations": 3, "min_score": 0.1, "first_k": 20}
    status, by_post = post(server, {"q": QUESTION, **options})
    assert status == 200
    assert ask(server, QUESTION, **options) == (200, by_post)
    assert sum(c.get("evidence", True) for r in by_post["results"] for c in r["citations"]) == 3
    assert post(server, {"q": QUESTION, "budget": "400", "first_k": None})[1]["budget"] == 400  # as GET reads them

    status, outlined = post(server, {"q": QUESTION, "budget": 400, "outline": True})
    assert status == 200 and "outline" not in by_post
    page = outlined.pop("outline")["postgresql-wal.html"]
    assert outlined == post(server, {"q": QUESTION, "budget": 400})[1]
    assert page["title"] == "20.5. Write Ahead Log"
    hit = next(c for r in outlined["results"] for c in r["citations"] if PHRASE in c["text"])
    assert page["headings"][hit["id"]] == ["20.5.2. Checkpoints"]  # outermost first, the title left out
    assert get(f"{server.url}/query?{urllib.parse.urlencode({'q': QUESTION, 'outline': 1})}")[1]["outline"]


def test_post_query_errors(server: SpireServer) -> None:
    for body, status, message in (
        (b"{", 400, "not JSON"),
        (b"\xff\xfe{", 400, "not JSON"),
        (["q"], 400, "JSON object"),
        ({"q": " "}, 400, "empty"),
        ({"q": 3}, 400, "q must be a string"),
        ({"q": "x", "budget": 0}, 400, "budget must be between 1"),
        ({"q": "x", "budget": 1.5}, 400, "budget must be an integer"),
        ({"q": "x", "budget": True}, 400, "budget must be an integer"),
        ({"q": "x", "budget": [400]}, 400, "budget must be a string or a number"),
        ({"q": "x", "min_score": 2}, 400, "min_score must be between 0 and 1"),
        ({"q": "x", "outline": "yes"}, 400, "outline must be true or false"),
        ({"q": "x", "top_k": 3}, 400, "unknown parameter(s) 'top_k'"),
    ):
        got, payload = post(server, body)
        assert (got, message in payload["error"]) == (status, True), (body, payload)
    wrong = "the body must be application/json, not text/plain"
    assert post(server, {"q": "x"}, "text/plain") == (415, {"error": wrong})
    status, big = post(server, {"q": "x" * (serve_module.MAX_BODY + 1)})
    assert status == 413 and str(serve_module.MAX_BODY) in big["error"]
    # chunked: no Content-Length. The whole request is sent at once before the answer is read (with
    # http.client the last chunk could still be on its way when the server answers and closes)
    chunked = (
        b"POST /query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Transfer-Encoding: chunked\r\n\r\na\r\n{"q": "x"}\r\n0\r\n\r\n'
    )
    with socket.create_connection(server.server_address[:2], timeout=60) as sock:
        sock.sendall(chunked)
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 411 and "Content-Length" in json.loads(response.read())["error"]
    status, _, body = request(server, "POST", "/health", b"{}", {"Content-Type": "application/json"})
    assert status == 404 and "POST /query" in json.loads(body)["error"]


def test_the_viewer_is_served_with_a_content_security_policy(server: SpireServer) -> None:
    status, headers, page = request(server, "GET", "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert headers["Content-Security-Policy"] == serve_module.VIEWER_CSP
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe" not in csp
    assert b'<script src="/viewer.js"' in page and page.count(b"<script") == 1  # no inline script
    for path, kind in (("/viewer.js", "text/javascript"), ("/viewer.css", "text/css")):
        status, headers, body = request(server, "GET", path)
        assert status == 200 and headers["Content-Type"].startswith(kind) and body
        assert headers["X-Content-Type-Options"] == "nosniff"
    script = request(server, "GET", "/viewer.js")[2].decode()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "eval(" not in script
    for name in ("index.html", "viewer.js", "viewer.css"):  # nothing remote: no CDN, works offline
        text = (Path(serve_module.__file__).parent / "viewer" / name).read_text()
        assert "http:" not in text and "https:" not in text and "//" + "cdn" not in text


def source(server: SpireServer, **params: Any) -> tuple[int, dict[str, str], bytes]:
    return request(server, "GET", "/source?" + urllib.parse.urlencode(params, doseq=True))


def test_source_is_the_page_spire_show_writes(server: SpireServer, example_store: Path, tmp_path: Path) -> None:
    payload = ask(server, QUESTION, budget=400)[1]
    cits = [c for r in payload["results"] for c in r["citations"] if c["doc_id"] == "postgresql-wal.html"]
    hit = next(c for c in cits if PHRASE in c["text"])
    status, headers, body = source(server, doc="postgresql-wal.html", cite=[hit["id"]])
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Security-Policy"] == serve_module.SOURCE_CSP
    assert "script-src" not in headers["Content-Security-Policy"] and "sandbox" in headers["Content-Security-Policy"]
    out = tmp_path / "wal.html"
    assert main(["show", "--store", str(example_store), hit["id"], "--out", str(out)]) == 0
    assert body.decode() == out.read_text(encoding="utf-8")  # the same function, the same page
    assert b'id="spire-cite-1"' in body and b"<script" not in body

    # several citations of one page, under the numbers the viewer shows them by
    other = next(c for c in cits if c is not hit)
    status, _, body = source(server, doc="postgresql-wal.html", cite=[other["id"], hit["id"]], n=[2, 5])
    page = body.decode()
    assert status == 200 and 'id="spire-cite-2"' in page and 'id="spire-cite-5"' in page
    assert 'id="spire-cite-1"' not in page and "[5] " in page
    marked = re.findall(r'<mark class="spire-cite" data-citation="5"[^>]*>(.*?)</mark>', page)
    assert any("30 seconds and one day" in m for m in marked)


def test_source_errors(server: SpireServer, example_store: Path) -> None:
    good = "postgresql-wal.html#1.0.3.1.0.1.0.9"
    for params, status, message in (
        ({"doc": "../spire.json"}, 404, "no page '../spire.json' in the store"),
        ({"doc": "../../../../etc/passwd", "cite": ["../../../../etc/passwd#1.0"]}, 404, "no page"),
        ({"doc": str(example_store / "spire.json")}, 404, "no page"),
        ({"doc": "nope.html"}, 404, "no page 'nope.html'"),
        ({"doc": "postgresql-wal.html", "cite": ["postgresql-wal.html#9.9.9.9"]}, 404, "not in page"),
        ({}, 400, "no page"),
        ({"doc": "postgresql-wal.html", "cite": ["no-paths"]}, 400, "not a citation id"),
        ({"doc": "postgresql-wal.html", "cite": ["postgresql-wal.html#x.y"]}, 400, "not a citation id"),
        ({"doc": "postgresql-wal.html", "cite": ["python-json.html#1.0"]}, 400, "is not of page"),
        ({"doc": "postgresql-wal.html", "cite": [good], "n": [1, 2]}, 400, "one each"),
        ({"doc": "postgresql-wal.html", "cite": [good, good], "n": [3, 3]}, 400, "one number"),
        ({"doc": "postgresql-wal.html", "cite": [good], "n": ["0"]}, 400, "n must be between 1"),
    ):
        got, headers, body = source(server, **params)
        assert headers["Content-Type"].startswith("application/json"), params
        assert (got, message in json.loads(body)["error"]) == (status, True), (params, body)
    assert source(server, doc="postgresql-wal.html")[0] == 200  # no citation: the page, a legend of none
