"""SPIRE the product: the ``spire`` command, its crash-safe store folder, ``spire serve`` (with the
evidence viewer) and Ray ingestion into Postgres.

    from spire_app import load_store

    store = load_store(".spire-store")
    nodes = store.retriever(budget=300).retrieve("What is the valid range of checkpoint_timeout?")

Built on the LlamaIndex adapter's public names (:mod:`spire_llamaindex`) and nothing of its
insides: what the command does is the adapter's retrieval plus the store.

    spire_app.cli           the ``spire`` command (``main``)
    spire_app.store         the store folder: ``Store``, ``load_store``, ``save_store``, its lock
    spire_app.serve         ``spire serve``: ``QueryService``, ``SpireServer``, the viewer's files
    spire_app.ray_ingest    ``ray_index`` (the ``[ray]`` extra): pages ingested on Ray into Postgres
"""

from typing import TYPE_CHECKING

from spire_runtime.lazy import lazy_attributes

if TYPE_CHECKING:
    from .cli import main
    from .serve import QueryService, SpireServer
    from .store import Store, StoreDamagedError, StoreError, StoreLockedError, load_store, save_store

#: where each public name lives: imported on first use, so ``spire --help`` starts without LlamaIndex
_LAZY = {
    "main": ".cli",
    **dict.fromkeys(["QueryService", "SpireServer"], ".serve"),
    **dict.fromkeys(
        ["Store", "StoreDamagedError", "StoreError", "StoreLockedError", "load_store", "save_store"], ".store"
    ),
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "QueryService",
    "SpireServer",
    "Store",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "load_store",
    "main",
    "save_store",
]
