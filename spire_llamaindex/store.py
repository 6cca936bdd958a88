"""A store folder: the index (a SimpleVectorStore, the sources in its docstore) and a manifest, persisted."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spire_core import HTML, NONE, SpireError
from spire_core.options import DEFAULT_BUDGET, DEFAULT_FILL, DEFAULT_FIRST_K, DEFAULT_MAX_ROUNDS, DEFAULT_SIZE
from spire_core.size import SizeFn

from .embedding import DEFAULT_MODEL, default_embeddings

if TYPE_CHECKING:  # LlamaIndex loads in seconds: not before a command needs it (read_manifest does not)
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.indices.vector_store.base import VectorStoreIndex
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.vector_stores.simple import SimpleVectorStore

    from .parser import SpireNodeParser
    from .retriever import SpireRetriever

#: Name of the manifest a SPIRE store folder carries next to LlamaIndex's JSON files.
MANIFEST = "spire.json"
STORE_FORMAT = 1
VECTOR_STORE_FILE = "default__vector_store.json"
DOCSTORE_FILE = "docstore.json"


class StoreError(SpireError):
    """A store folder is missing, incomplete or of another format."""


@dataclass
class Store:
    """A loaded store: the index (sources in its docstore), the parser it was built with, its manifest."""

    path: Path
    index: VectorStoreIndex
    parser: SpireNodeParser
    manifest: dict[str, Any]

    def retriever(
        self,
        *,
        budget: int = DEFAULT_BUDGET,
        size: SizeFn = DEFAULT_SIZE,
        first_k: int = DEFAULT_FIRST_K,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        fill: float = DEFAULT_FILL,
        cache_size: int = 64,
    ) -> SpireRetriever:
        """A :class:`~spire_llamaindex.SpireRetriever` over this store, rendering as its parser does."""
        from .retriever import SpireRetriever

        return SpireRetriever(
            self.index,
            budget=budget,
            size=size,
            policy=self.parser.policy,
            fmt=self.parser.fmt,
            first_k=first_k,
            max_rounds=max_rounds,
            fill=fill,
            cache_size=cache_size,
        )


def parser_settings(parser: SpireNodeParser) -> dict[str, Any]:
    """The parser options a store records in its manifest (and is reopened with)."""
    return {
        "unit": parser.unit,
        "policy": parser.policy.name,
        "fmt": parser.fmt,
        "boilerplate": parser.boilerplate,
        "max_bytes": parser.max_bytes,
    }


def _parser(settings: dict[str, Any]) -> SpireNodeParser:
    from .parser import SpireNodeParser

    policy = settings.get("policy", HTML.name)
    if policy not in (HTML.name, NONE.name):
        raise StoreError(f"the store was built with a custom policy {policy!r}: open it with parser=...")
    return SpireNodeParser(
        policy=NONE if policy == NONE.name else HTML,
        unit=settings.get("unit", "sentence"),
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
    from llama_index.core.vector_stores.simple import SimpleVectorStoreData

    from .array_store import ArrayVectorStore  # the same store, searched as one matrix

    file = path / VECTOR_STORE_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"the store at {str(path)!r} has no {VECTOR_STORE_FILE}: run `spire index` again") from None
    except ValueError as err:
        raise StoreError(f"{str(file)!r} is not valid JSON: {err}") from None
    return ArrayVectorStore(
        data=SimpleVectorStoreData(
            embedding_dict=data.get("embedding_dict", {}),
            text_id_to_ref_doc_id=data.get("text_id_to_ref_doc_id", {}),
            metadata_dict=data.get("metadata_dict", {}),
        )
    )


def open_docstore(store: str | Path) -> SimpleDocumentStore:
    """The docstore of a store folder, its nodes and pages held packed
    (:class:`~spire_llamaindex.json_files.PackedKVStore`); a :class:`StoreError` if it cannot be read."""
    from llama_index.core.storage.docstore import SimpleDocumentStore

    from .json_files import PackedKVStore

    try:
        return SimpleDocumentStore(PackedKVStore.from_persist_path(str(Path(store) / DOCSTORE_FILE)))
    except (OSError, ValueError) as err:
        raise StoreError(f"cannot open the store at {str(store)!r}: {DOCSTORE_FILE}: {err}") from None


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
        context = StorageContext.from_defaults(
            persist_dir=str(path), vector_store=_vector_store(path), docstore=open_docstore(path)
        )
        index = load_index_from_storage(
            context,
            index_id=manifest.get("index_id"),
            embed_model=embed_model or default_embeddings(),
            transformations=[parser],
        )
    except (OSError, ValueError) as err:
        raise StoreError(f"cannot open the store at {str(path)!r}: {err}") from None
    if not isinstance(index, VectorStoreIndex):
        raise StoreError(f"the store at {str(path)!r} does not hold a vector index")
    return Store(path, index, parser, manifest)
