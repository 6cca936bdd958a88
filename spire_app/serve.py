"""``spire serve``: a store and the embedding model loaded once, questions answered over HTTP.

    spire serve --store DIR [--host 127.0.0.1] [--port 8765]

    GET /                                        the evidence viewer (a page: ask, read the ranked evidence)
    GET /query?q=QUESTION[&budget=N][&max_citations=N][&min_score=S][&first_k=K][&outline=1]
                                                 the JSON of ``spire query --json``
    POST /query  {"q": QUESTION, "budget": N, "max_citations": N, "min_score": S, "first_k": K}
                                                 the same, the question and options as a JSON object
    GET /source?doc=DOC_ID&cite=CITATION_ID[&cite=...][&n=N&n=...]
                                                 the page with those citations highlighted, as ``spire show`` writes it
    GET /health                                  {"status": "ok", "store": ..., "pages": N, "nodes": N}

Errors are JSON too: ``{"error": "..."}`` with status 400 (a bad parameter or body), 404 (another
path, a page or citation not in the store), 411 (a POST without Content-Length), 413 (a body over
:data:`MAX_BODY` bytes), 415 (a body that is not ``application/json``) or 500. ``outline`` adds
``"outline": {DOC_ID: {"title": ..., "headings": {CITATION_ID: [heading, ...]}}}``: each result
page's title and the heading chain (outermost first) each citation sits under, what the viewer shows.

The viewer (``spire_app/viewer/``: one HTML page, a script and a style sheet, served from
the package; nothing is fetched from elsewhere) builds its page with ``textContent`` only, so
what a question or a page holds is shown as text. HTML responses carry a Content-Security-Policy:
the viewer's allows its own script, style and requests and nothing else; a source page (no
script at all) allows its inline style only and is sandboxed. A source page is a page of the
store (its manifest's ids; never a file path) highlighted by :func:`highlighted_page`, the
function ``spire show`` writes with.

The server (the standard library's ``ThreadingHTTPServer``) answers each request in its
own thread; the retrievers (one per set of options asked) share the parsed pages. It
serves the store as it was when started: restart it after ``spire index`` has updated the store.
It has no authentication: keep it on 127.0.0.1 unless a proxy in front of it adds some.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from spire_core import SpireError

if TYPE_CHECKING:
    from llama_index.core.llms import LLM
    from llama_index.core.schema import NodeWithScore

    from spire_core import Citation
    from spire_core.options import QueryOptions
    from spire_llamaindex import SourceDocuments, SpireRetriever

    from .store import Store

log = logging.getLogger("spire_app")

#: the largest budget a request may ask for (a larger one is refused with status 400)
MAX_BUDGET = 100_000
#: retrievers kept, one per set of query options asked; beyond this the oldest is dropped
MAX_RETRIEVERS = 32
#: the largest body ``POST /query`` reads (a larger one is refused with status 413)
MAX_BODY = 64 * 1024
#: a body too large but up to this size is read (and dropped) before the 413; a larger one is not
_DRAINED = 16 * MAX_BODY
#: the most citations one ``/source`` request highlights
MAX_SOURCE_CITATIONS = 500
#: heading chains in an outline: characters kept of each heading
_HEADING_CHARS = 160

#: the viewer's page: its own script, style sheet and requests, nothing else (no inline script)
VIEWER_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: a highlighted source page: no script, nothing loaded but its inline style, sandboxed (an origin of its own)
SOURCE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'; sandbox"
#: the viewer's files (``spire_app/viewer/``) by path, with their content types
_VIEWER_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/viewer.js": ("viewer.js", "text/javascript; charset=utf-8"),
    "/viewer.css": ("viewer.css", "text/css; charset=utf-8"),
}
_PATHS = "/ (the viewer), /query?q=..., POST /query, /source?doc=...&cite=..., /health"


def query_nodes(
    retriever: SpireRetriever, question: str, *, llm: LLM | None = None
) -> tuple[list[NodeWithScore], dict[str, Any] | None]:
    """The results of ``question`` (filtered by ``llm`` when given) and the filter's report (None without an LLM)."""
    from spire_core.results.schema import FILTER

    nodes = retriever.retrieve(question)
    if llm is None:
        return nodes, None
    from spire_llamaindex import SpireEvidenceFilter

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
    return payload_of(question, retriever.options.budget, nodes, report)


def citation_of(key: str) -> Citation:
    """The citation an id names (``DOC_ID#PATHS``, as ``spire query`` prints it and the JSON's ``id``);
    raises ``ValueError`` saying what is wrong."""
    from spire_core import Citation, PathFormatError, decode_paths

    doc_id, sep, encoded = key.rpartition("#")
    if not sep or not doc_id or not encoded:
        raise ValueError(f"not a citation id: {key!r} (expected DOC_ID#PATHS as printed by `spire query`)")
    try:
        return Citation(doc_id, decode_paths(encoded), "")
    except PathFormatError as err:
        raise ValueError(f"not a citation id: {key!r} ({err})") from None


def highlighted_page(
    sources: SourceDocuments, doc_id: str, citations: Sequence[Citation], numbers: Sequence[int] | None = None
) -> str:
    """Page ``doc_id`` of ``sources`` as ``spire show`` writes it: inert HTML with ``citations``
    highlighted (:func:`spire_core.highlight`), numbered ``numbers`` (default 1, 2, ...)."""
    from spire_core import highlight
    from spire_llamaindex import page_html, source_text

    node = sources.node(doc_id)
    return highlight(page_html(source_text(node), node.metadata), citations, doc_id=doc_id, numbers=numbers)


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
        self.pages = frozenset(store.manifest.get("documents", ()))

    def retriever(self, **overrides: Any) -> SpireRetriever:
        """The retriever answering with the base options but ``overrides`` (``QueryOptions`` fields,
        None: the base's), made once per set of options and sharing the parsed pages and the BM25 index."""
        from spire_llamaindex import SpireRetriever

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

    def outline(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Each result page's title and each citation's heading chain (outermost first, the title
        left out): ``{DOC_ID: {"title": str | None, "headings": {CITATION_ID: [str, ...]}}}``."""
        from spire_core import decode_paths
        from spire_core.context.headers import headings

        out: dict[str, Any] = {}
        for result in payload["results"]:
            doc_id = result["doc_id"]
            try:
                doc = self._base.sources(doc_id)
            except SpireError:
                continue
            page = out.setdefault(doc_id, {"title": doc.title, "headings": {}})
            chains, title = headings(doc), doc.title_index
            for cit in result["citations"]:
                try:
                    nodes = doc.indices(decode_paths(cit["paths"]))
                except SpireError:
                    continue
                if nodes:
                    chain = [h for h in reversed(chains.chain(min(nodes))) if h != title]
                    page["headings"][cit["id"]] = [_short(doc.subtree_text(h)) for h in chain]
        return out

    def source_page(self, doc_id: str, citations: Sequence[Citation], numbers: Sequence[int] | None = None) -> str:
        """:func:`highlighted_page` of a page of the store (``doc_id`` one of :attr:`pages`)."""
        if doc_id not in self.pages:
            raise KeyError(doc_id)
        return highlighted_page(self._base.sources, doc_id, citations, numbers)

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


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _HEADING_CHARS else text[: _HEADING_CHARS - 1].rstrip() + "\u2026"


@functools.cache
def _viewer_file(name: str) -> bytes:
    return (resources.files("spire_app") / "viewer" / name).read_bytes()


def _positive(params: dict[str, list[str]], name: str, most: int) -> int | None:
    """The integer parameter ``name`` (its last value), from 1 to ``most``; None when absent."""
    return _number(params, name, int, 1, most, "an integer")


def _unit(params: dict[str, list[str]], name: str) -> float | None:
    """The number parameter ``name`` (its last value), from 0 to 1; None when absent."""
    return _number(params, name, float, 0.0, 1.0, "a number")


N = TypeVar("N", int, float)


def _number(params: dict[str, list[str]], name: str, kind: type[N], low: N, high: N, what: str) -> N | None:
    values = params.get(name)
    if not values:
        return None
    try:
        value = kind(values[-1])
    except ValueError:
        raise ValueError(f"{name} must be {what}, not {values[-1]!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low:g} and {high:g}, not {value:g}")
    return value


def _flag(params: dict[str, list[str]], name: str) -> bool:
    values = params.get(name)
    if not values:
        return False
    value = values[-1].strip().lower()
    if value not in ("1", "true", "0", "false"):
        raise ValueError(f"{name} must be true or false (1 or 0), not {values[-1]!r}")
    return value in ("1", "true")


#: what a ``POST /query`` body may hold: the parameters of ``GET /query``
_QUERY_KEYS = ("q", "budget", "max_citations", "min_score", "first_k", "outline")


def _params_of_body(body: bytes) -> dict[str, list[str]]:
    """A ``POST /query`` JSON body as the query parameters of ``GET /query`` (so both are checked
    alike): numbers and strings as their text, ``true``/``false`` as such, ``null`` as absent."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"the body is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f'the body must be a JSON object, {{"q": QUESTION, ...}}, not {type(data).__name__}')
    unknown = sorted(set(data) - set(_QUERY_KEYS))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))}: use {', '.join(_QUERY_KEYS)}")
    params: dict[str, list[str]] = {}
    for name, value in data.items():
        if value is None:
            continue
        if isinstance(value, bool):
            params[name] = ["true" if value else "false"]
        elif isinstance(value, str | int | float):
            params[name] = [str(value)]
        else:
            raise ValueError(f"{name} must be a string or a number, not {type(value).__name__}")
    if "q" in params and not isinstance(data["q"], str):
        raise ValueError(f"q must be a string, not {type(data['q']).__name__}")
    return params


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
        elif url.path == "/query":
            self._query(parse_qs(url.query))
        elif url.path == "/source":
            self._source(parse_qs(url.query))
        elif url.path in _VIEWER_FILES:
            name, content_type = _VIEWER_FILES[url.path]
            self._send_bytes(HTTPStatus.OK, _viewer_file(name), content_type, csp=VIEWER_CSP)
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such path {url.path!r}: use {_PATHS}"})

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        length = self.headers.get("Content-Length")
        known = length is not None and length.strip().isdigit()
        if url.path != "/query":
            dropped = known and self._dropped(int(length or 0))
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no POST to {url.path!r}: POST /query"}, close=not dropped)
            return
        if length is None or not known:
            self._send(HTTPStatus.LENGTH_REQUIRED, {"error": "POST /query needs a Content-Length"}, close=True)
            return
        if int(length) > MAX_BODY:
            error = f"the body is {int(length)} bytes: at most {MAX_BODY}"
            self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": error}, close=not self._dropped(int(length)))
            return
        body = self.rfile.read(int(length))
        content_type = self.headers.get_content_type()
        if content_type != "application/json":
            error = f"the body must be application/json, not {content_type}"
            self._send(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": error})
            return
        try:
            params = _params_of_body(body)
        except ValueError as err:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            return
        self._query(params)

    def _query(self, params: dict[str, list[str]]) -> None:
        """Answer ``GET /query``'s parameters (or ``POST /query``'s body read as them)."""
        question = (params.get("q") or [""])[-1]
        service = self.server.service
        try:
            if not question.strip():
                raise ValueError("the question is empty: /query?q=QUESTION")
            overrides = {
                "budget": _positive(params, "budget", MAX_BUDGET),
                "first_k": _positive(params, "first_k", 10_000),
                "max_citations": _positive(params, "max_citations", 10_000),
                "min_score": _unit(params, "min_score"),
            }
            outline = _flag(params, "outline")
            service.retriever(**overrides)  # options checked: a bad value is the client's
        except ValueError as err:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            return

        def answer() -> None:
            payload = service.answer(question, **overrides)
            if outline:
                payload["outline"] = service.outline(payload)
            self._send(HTTPStatus.OK, payload)

        self._guarded(f"query {question!r}", answer)

    def _source(self, params: dict[str, list[str]]) -> None:
        """``/source?doc=DOC_ID&cite=CITATION_ID...[&n=N...]``: the page, its citations highlighted."""
        service = self.server.service
        doc_id = (params.get("doc") or [""])[-1]
        keys = params.get("cite", [])
        try:
            if not doc_id:
                raise ValueError("no page: /source?doc=DOC_ID&cite=CITATION_ID")
            if len(keys) > MAX_SOURCE_CITATIONS:
                raise ValueError(f"{len(keys)} citations: at most {MAX_SOURCE_CITATIONS}")
            citations = [citation_of(key) for key in keys]
            numbers = [_positive({"n": [n]}, "n", 10_000) or 0 for n in params.get("n", [])]
            if numbers and len(numbers) != len(citations):
                raise ValueError(f"{len(numbers)} numbers (n) for {len(citations)} citations: one each, or none")
            if len(set(numbers)) != len(numbers):
                raise ValueError("two citations with one number (n)")
            other = next((c for c in citations if c.doc_id != doc_id), None)
            if other is not None:
                raise ValueError(f"citation {other.key()!r} is not of page {doc_id!r}")
        except ValueError as err:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            return
        if doc_id not in service.pages:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no page {doc_id!r} in the store"})
            return
        from spire_core import UnknownPathError

        def show() -> None:
            doc = service.retriever().sources(doc_id)
            for cit in citations:
                try:
                    doc.indices(cit.paths)
                except UnknownPathError:
                    error = f"citation {cit.key()!r} is not in page {doc_id!r} (re-indexed since?)"
                    self._send(HTTPStatus.NOT_FOUND, {"error": error})
                    return
            page = service.source_page(doc_id, citations, numbers or None)
            self._send_bytes(HTTPStatus.OK, page.encode("utf-8"), "text/html; charset=utf-8", csp=SOURCE_CSP)

        self._guarded(f"source {doc_id!r}", show)

    def _dropped(self, length: int) -> bool:
        """Read and drop a body refused unread (at most :data:`_DRAINED` bytes), so that the client,
        still sending it, reads the answer: whether it was (else the connection is to be closed)."""
        left = length if length <= _DRAINED else 0
        while left > 0:
            chunk = self.rfile.read(min(left, MAX_BODY))
            left = 0 if not chunk else left - len(chunk)
        return length <= _DRAINED

    def _guarded(self, what: str, run: Callable[[], None]) -> None:
        """``run()``, answering a failure with status 500 and its message (the server outlives it;
        the log has the trace of anything not a :class:`SpireError`)."""
        try:
            run()
        except SpireError as err:
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": str(err)})
        except Exception as err:
            log.exception("%s failed", what)
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(err).__name__}: {err}"})

    def _send(self, status: HTTPStatus, payload: dict[str, Any], *, close: bool = False) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self._send_bytes(status, body, "application/json; charset=utf-8", close=close)

    def _send_bytes(
        self, status: HTTPStatus, body: bytes, content_type: str, *, csp: str | None = None, close: bool = False
    ) -> None:
        """Send ``body``; ``close``: and close the connection (a request body left unread)."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        if csp is not None:
            self.send_header("Content-Security-Policy", csp)
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-cache")
        if close:
            self.send_header("Connection", "close")  # sets close_connection
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
