"""Session fixtures of the LlamaIndex adapter's tests and the product's (``tests/llamaindex``,
``tests/app``): the packaged model and the example store, each made once per worker. A plugin of
``tests/conftest.py``, so that both folders share them; ``tests/conftest.py`` runs both folders on
one worker, so that the store is built once. Nothing here is imported before a test asks for it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from spire_app import Store

EXAMPLE_PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"


@pytest.fixture(scope="session")
def embed_model() -> BaseEmbedding:
    """The packaged all-MiniLM-L6-v2, loaded once."""
    from spire_llamaindex import default_embeddings

    return default_embeddings()


@pytest.fixture(scope="session")
def example_store(tmp_path_factory: pytest.TempPathFactory, embed_model: BaseEmbedding) -> Path:
    """``spire index examples/pages --store DIR`` run once per session (the slow part: embedding)."""
    from spire_app.cli import main

    store = tmp_path_factory.mktemp("store") / "examples"
    assert main(["index", str(EXAMPLE_PAGES), "--store", str(store), "--quiet"]) == 0
    return store


@pytest.fixture(scope="session")
def example(example_store: Path, embed_model: BaseEmbedding) -> Store:
    """The example store, opened."""
    from spire_app import load_store

    return load_store(example_store, embed_model=embed_model)
