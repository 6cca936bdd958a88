"""Database URIs for the adapters' Postgres helpers: one check and one driver rewrite (stdlib only)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from spire_core.errors import DatabaseURIError

_SCHEMES = ("postgresql", "postgres")


def postgres_url(uri: str, driver: str) -> str:
    """``uri`` (``postgresql://user:password@host:port/database``, any ``?host=/socket/folder`` kept)
    as an SQLAlchemy URL with ``driver`` (``psycopg2``, ``asyncpg``, ``psycopg``).

    Raises :class:`DatabaseURIError` for any other URI.
    """
    parts = urlsplit(uri)
    if parts.scheme.split("+", 1)[0] not in _SCHEMES:
        raise DatabaseURIError(
            f"not a Postgres URI: {uri.split('@')[-1]!r} (expected postgresql://user:password@host:port/database)"
        )
    return urlunsplit(parts._replace(scheme=f"postgresql+{driver}"))
