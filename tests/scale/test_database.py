"""Postgres URIs: the driver rewrite keeps every part (a socket folder too) and refuses other databases."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from spire_core.errors import DatabaseURIError
from spire_runtime.database import postgres_url


@pytest.mark.parametrize("driver", ["psycopg2", "asyncpg", "psycopg"])
def test_postgres_url_sets_the_driver_and_keeps_the_rest(driver: str) -> None:
    url = make_url(postgres_url("postgresql://me:s3cret@/docs?host=/run/pg", driver))
    assert url.drivername == f"postgresql+{driver}"
    assert (url.username, url.password, url.database, url.query["host"]) == ("me", "s3cret", "docs", "/run/pg")
    tcp = make_url(postgres_url("postgres://me@db.example:6543/docs", driver))
    assert (tcp.host, tcp.port, tcp.database) == ("db.example", 6543, "docs")


def test_other_databases_are_refused_without_their_password() -> None:
    with pytest.raises(DatabaseURIError, match="not a Postgres URI") as err:
        postgres_url("mysql://me:s3cret@db/docs", "psycopg2")
    assert "s3cret" not in str(err.value)
