"""Fixtures of the scale tests: one real Postgres + pgvector server per session (pgserver), stopped at the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.scale import PgvectorUnusable, postgres

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

EXAMPLE_PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"
#: The example pages the scale tests index: the two manual pages (the Wikipedia table alone
#: holds three times their units, and the tests stay within their time on 2 cores without it)
MANUAL_PAGES = ("postgresql-wal.html", "python-json.html")


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """A ``postgresql://`` URI of a fresh server with the ``vector`` extension, deleted after the session."""
    try:
        with postgres() as uri:
            yield uri
    except PgvectorUnusable as err:  # raised before the yield: no test has run on it
        pytest.skip(str(err))


class Memo:
    """The packaged model's vectors by text, each computed once per session: both adapters' tests
    embed the same renderings, and an updated page only brings a few new ones."""

    def __init__(self) -> None:
        from spire_llamaindex import default_embeddings

        self.model = default_embeddings()
        self.vectors: dict[str, list[float]] = {}

    def texts(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            self.vectors.update(zip(missing, self.model.get_text_embedding_batch(missing), strict=True))
        return [self.vectors[t] for t in texts]

    def query(self, text: str) -> list[float]:
        return self.model.get_query_embedding(text)


@pytest.fixture(scope="session")
def memo() -> Memo:
    return Memo()
