"""Shared fixtures: paths to the example pages, the bench data and the packaged model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_PAGES = ROOT / "examples" / "pages"
BENCH = ROOT.parent / "shared" / "bench"

#: the packaged model and the example store, shared by the adapter's and the product's tests
pytest_plugins = ("tests.support.example_store",)


#: Test folders whose session fixtures build an index with the real model, by the worker group
#: they run in: under ``pytest -n`` (``make test``) each group runs on one worker, so that each
#: index is built once (the product's tests, ``app``, use the LlamaIndex tests' example store),
#: and the scale tests share one Postgres server.
GROUPED = {"langchain": "langchain", "llamaindex": "llamaindex", "app": "llamaindex", "scale": "scale"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.nodeid.split("/")
        if len(parts) > 2 and parts[1] in GROUPED:
            item.add_marker(pytest.mark.xdist_group(GROUPED[parts[1]]))


@pytest.fixture(scope="session")
def example_pages() -> Path:
    return EXAMPLE_PAGES


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    if not BENCH.is_dir():
        pytest.skip("../shared/bench is not present")
    return BENCH
