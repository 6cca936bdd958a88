"""``spire serve``: a store and the embedding model loaded once, questions answered over HTTP.

    spire serve --store DIR [--host 127.0.0.1] [--port 8765]

    GET /query?q=QUESTION[&budget=N][&max_citations=N][&min_score=S][&first_k=K]   the JSON of ``spire query --json``
    GET /health                                  {"status": "ok", "store": ..., "pages": N, "nodes": N}

Errors are JSON too: ``{"error": "..."}`` with status 400 (a bad parameter), 404 (another path)
or 500. The server (the standard library's ``ThreadingHTTPServer``) answers each request in its
own thread; the retrievers (one per set of options asked) share the parsed pages. It
serves the store as it was when started: restart it after ``spire index`` has updated the store.
It has no authentication: keep it on 127.0.0.1 unless a proxy in front of it adds some.
"""

from __future__ import annotations

import json
import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from spire_core import SpireError

if TYPE_CHECKING:
    from llama_index.core.llms import LLM
    from llama_index.core.schema import NodeWithScore

    from spire_core.pipeline import QueryOptions

    from .retriever import SpireRetriever
    from .store import Store

log = logging.getLogger("spire_llamaindex")

#: the largest budget a request may ask for (a larger one is refused with status 400)
MAX_BUDGET = 100_000
#: retrievers kept, one per set of query options asked; beyond this the oldest is dropped
MAX_RETRIEVERS = 32


def query_nodes(
    retriever: SpireRetriever, question: str, *, llm: LLM | None = None
) -> tuple[list[NodeWithScore], dict[str, Any] | None]:
    """The results of ``question`` (filtered by ``llm`` when given) and the filter's report (None without an LLM)."""
    from spire_core.results.schema import FILTER

    nodes = retriever.retrieve(question)
    if llm is None:
        return nodes, None
    from .postprocessor import SpireEvidenceFilter

    nodes = SpireEvidenceFilter(llm, retriever).postprocess_nodes(nodes, query_str=question)
    reports = [n.node.metadata.get(FILTER) for n in nodes]
    # a failed filter is logged (once) by SpireEvidenceFilter; the report says so
    return nodes, next((r for r in reports if r), {"ok": True, "labels": [], "unknown": [], "error": None})


def payload_of(question: str, budget: int, nodes: list[NodeWithScore], report: dict[str, Any] | None) -> dict[str, Any]:
    """What ``spire query --json`` prints: the question, the budget, one result per page (its
    text, cost, score, paths and citations) and the evidence filter's report."""
    from spire_core.results.schema import COST, DOC_ID, PATHS, citation_records

    results = []
    for n in nodes:
        meta = n.node.metadata
        results.append(
            {
                "doc_id": meta.get(DOC_ID),
                "score": n.score,
                "cost": meta.get(COST),
                "paths": meta.get(PATHS),
                "text": n.node.get_content(),
                "citations": citation_records(meta),
            }
        )
    return {"query": question, "budget": budget, "results": results, "filter": report}


def query_payload(retriever: SpireRetriever, question: str, *, llm: LLM | None = None) -> dict[str, Any]:
    """:func:`payload_of` the answer to ``question``: the JSON of ``spire query --json``."""
    nodes, report = query_nodes(retriever, question, llm=llm)
    return payload_of(question, retriever.budget, nodes, report)


class QueryService:
    """A loaded store answering questions: one retriever per set of query options asked (``options``:
    the base ``QueryOptions`` fields, as the ``SpireRetriever``'s), all sharing the store's parsed
    pages (``cache_size`` of them, default every page of the store)."""

    def __init__(
        self,
        store: Store,
        *,
        llm: LLM | None = None,
        cache_size: int | None = None,
        **options: Any,
    ) -> None:
        self.store = store
        self.llm = llm
        self._cache_size = cache_size or max(64, len(store.manifest.get("documents", ())))
        self._base = store.retriever(cache_size=self._cache_size, **options)
        self._retrievers: dict[QueryOptions, SpireRetriever] = {self._base.options: self._base}
        self._lock = threading.Lock()

    def retriever(self, **overrides: Any) -> SpireRetriever:
        """The retriever answering with the base options but ``overrides`` (``QueryOptions`` fields,
        None: the base's), made once per set of options and sharing the parsed pages and the BM25 index."""
        from .retriever import SpireRetriever

        options = self._base.options.but(**overrides)
        with self._lock:
            found = self._retrievers.get(options)
            if found is None:
                found = SpireRetriever(self.store.index, self._base.sources)  # parsed pages shared
                found.options = options
                found.lexicon = self._base.lexicon  # one BM25 index, kept in step once
                if len(self._retrievers) >= MAX_RETRIEVERS:
                    oldest = next(k for k in self._retrievers if k != self._base.options)
                    del self._retrievers[oldest]
                self._retrievers[options] = found
            return found

    def answer(self, question: str, **overrides: Any) -> dict[str, Any]:
        """The JSON payload of ``spire query --json`` for ``question`` (``overrides``: ``QueryOptions``
        fields for this question, e.g. ``budget``, ``max_citations``)."""
        return query_payload(self.retriever(**overrides), question, llm=self.llm)

    def warm(self) -> None:
        """Parse the store's pages (up to the cache's size) and embed a first question, so that
        the first request costs what any other does."""
        sources = self._base.sources
        for doc_id in self.store.manifest.get("documents", ())[: self._cache_size]:
            try:
                sources(doc_id)
            except SpireError as err:  # reported when a query reaches the page
                log.debug("warm-up: page %r not parsed: %s", doc_id, err)
        self._base.retrieve("warm-up")

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "store": str(self.store.path),
            "pages": len(self.store.manifest.get("documents", ())),
            "nodes": len(self.store.index.index_struct.nodes_dict),
            "complete": self.store.manifest.get("complete", True),
        }


def _positive(params: dict[str, list[str]], name: str, most: int) -> int | None:
    values = params.get(name)
    if not values:
        return None
    try:
        value = int(values[-1])
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {values[-1]!r}") from None
    if not 0 < value <= most:
        raise ValueError(f"{name} must be between 1 and {most}, not {value}")
    return value


def _unit(params: dict[str, list[str]], name: str) -> float | None:
    values = params.get(name)
    if not values:
        return None
    try:
        value = float(values[-1])
    except ValueError:
        raise ValueError(f"{name} must be a number, not {values[-1]!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, not {value}")
    return value


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client's next request skips the connection set-up
    # TCP_NODELAY: with keep-alive, Nagle's algorithm held each reply's body back until the client's
    # delayed ACK of its headers (~40 ms a request on Linux)
    disable_nagle_algorithm = True
    server: SpireServer

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/health":
            self._send(HTTPStatus.OK, self.server.service.health())
            return
        if url.path != "/query":
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such path {url.path!r}: use /query?q=... or /health"})
            return
        params = parse_qs(url.query)
        question = (params.get("q") or [""])[-1]
        try:
            if not question.strip():
                raise ValueError("the question is empty: /query?q=QUESTION")
            overrides = {
                "budget": _positive(params, "budget", MAX_BUDGET),
                "first_k": _positive(params, "first_k", 10_000),
                "max_citations": _positive(params, "max_citations", 10_000),
                "min_score": _unit(params, "min_score"),
            }
            self.server.service.retriever(**overrides)  # options checked: a bad value is the client's
        except ValueError as err:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            return
        try:
            payload = self.server.service.answer(question, **overrides)
        except SpireError as err:
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": str(err)})
            return
        except Exception as err:  # the server outlives a failed request; the log has the trace
            log.exception("query %r failed", question)
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(err).__name__}: {err}"})
            return
        self._send(HTTPStatus.OK, payload)

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)


class SpireServer(ThreadingHTTPServer):
    """The HTTP server of a :class:`QueryService`; ``server_address`` holds the port bound (``port=0``: a free one)."""

    daemon_threads = True

    def __init__(self, service: QueryService, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.service = service

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"
