"""Fixtures of the product's tests (``spire``, its store, ``spire serve``). The packaged model and the
example store are shared with the adapter's tests (:mod:`tests.support.example_store`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from spire_app.serve import QueryService, SpireServer


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
