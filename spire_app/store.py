"""A store folder: the index (a SimpleVectorStore, the sources in its docstore) and a manifest, persisted.

Layout (format 2)::

    DIR/spire.json          the manifest: settings, pages, and which data folder is current
    DIR/data-000007/        LlamaIndex's files (docstore.json, default__vector_store.json, ...)
                            and the BM25 index over the pages' sentences (lexical.json.gz, lexical-*.npy)
    DIR/spire.lock          held by the one process writing the store

A save writes a whole new data folder (each file flushed and fsynced), then replaces the
manifest atomically (temporary file, fsync, ``os.replace``, fsync of the folder): that rename
is the commit. A crash at any moment leaves the manifest naming the previous data folder or
the new one, both complete; folders no manifest names are leftovers, removed by the next save.
Readers take no lock. Format 1 stores (LlamaIndex's files beside the manifest) still open, and
are moved to format 2 by their next save.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spire_core import HTML, NONE, SpireError
from spire_core.options import QueryOptions
from spire_core.query.lexical import INDEX_FILE, LexicalIndex, Lexicon
from spire_llamaindex import DEFAULT_MODEL, default_embeddings

if TYPE_CHECKING:  # LlamaIndex loads in seconds: not before a command needs it (read_manifest does not)
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.indices.vector_store.base import VectorStoreIndex
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.vector_stores.simple import SimpleVectorStore

    from spire_llamaindex import SpireNodeParser, SpireRetriever

#: Name of the manifest a SPIRE store folder carries next to LlamaIndex's JSON files.
MANIFEST = "spire.json"
STORE_FORMAT = 2
#: formats this version opens (1: LlamaIndex's files beside the manifest, no data folder)
READABLE_FORMATS = (1, 2)
VECTOR_STORE_FILE = "default__vector_store.json"
DOCSTORE_FILE = "docstore.json"
#: the files ``StorageContext.persist`` writes (format 1 kept them beside the manifest)
LLAMAINDEX_FILES = (
    DOCSTORE_FILE,
    "index_store.json",
    VECTOR_STORE_FILE,
    "graph_store.json",
    "image__vector_store.json",
)
#: the lock file of the process writing a store (its first line says who holds it)
LOCK_FILE = "spire.lock"
DATA_PREFIX = "data-"
log = logging.getLogger("spire_app")
_DOCSTORE_DATA = "docstore/data"  # SimpleDocumentStore's collection of nodes and pages


class StoreError(SpireError):
    """A store folder is missing, incomplete or of another format."""


class StoreLockedError(StoreError):
    """Another process is writing the store; :attr:`holder` says which (pid, host, command, since when)."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


class StoreDamagedError(StoreError):
    """A file of the store cannot be read or does not match the rest; :attr:`file` names it."""

    def __init__(self, message: str, file: Path) -> None:
        super().__init__(message)
        self.file = file


def _rebuild_hint(path: Path) -> str:
    return f"rebuild it with `spire index PAGES_DIR --store {path} --rebuild`"


def _damaged(path: Path, file: Path, what: str) -> StoreDamagedError:
    return StoreDamagedError(f"the store at {str(path)!r} is damaged: {file.name}: {what}; {_rebuild_hint(path)}", file)


# -- one writer at a time ------------------------------------------------------------------
_held: dict[Path, int] = {}
_held_guard = threading.Lock()


@contextlib.contextmanager
def store_lock(store: str | Path) -> Iterator[None]:
    """Hold the store's write lock (``spire.lock``, an OS file lock: released by the kernel when
    the process ends, however it ends). Re-entrant within a process; another process (or
    another open of the same folder's lock) gets :class:`StoreLockedError` naming the holder."""
    import portalocker

    path = Path(store)
    path.mkdir(parents=True, exist_ok=True)
    key = path.resolve()
    with _held_guard:
        if key in _held:
            _held[key] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _held_guard:
                _held[key] -= 1
        return
    lock_file = path / LOCK_FILE
    handle = open(lock_file, "a+", encoding="utf-8")  # noqa: SIM115 (held open while locked)
    try:
        portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
    except portalocker.LockException:
        handle.seek(0)
        holder = handle.readline().strip() or "another process"
        handle.close()
        raise StoreLockedError(
            f"the store at {str(path)!r} is being written by {holder}: wait for it to finish "
            f"(a crashed writer releases {LOCK_FILE} with its process)",
            holder,
        ) from None
    try:
        handle.seek(0)
        handle.truncate()
        command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200] if sys.argv and sys.argv[0] else "python"
        handle.write(
            f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')} ({command})\n"
        )
        handle.flush()
        with _held_guard:
            _held[key] = 1
        try:
            yield
        finally:
            with _held_guard:
                del _held[key]
    finally:
        with contextlib.suppress(OSError):
            portalocker.unlock(handle)
        handle.close()


def is_store_leftover(name: str) -> bool:
    """Whether a file name in a store folder is one a store or an interrupted save leaves."""
    return (
        name in (MANIFEST, LOCK_FILE, MANIFEST + ".tmp", *LLAMAINDEX_FILES)
        or name.startswith(DATA_PREFIX)
        or (name.startswith(".") and name.endswith(".tmp"))
    )


@dataclass
class Store:
    """A loaded store: the index (sources in its docstore), the parser it was built with, its
    manifest, and the BM25 index saved with it (None: a store saved without one)."""

    path: Path
    index: VectorStoreIndex
    parser: SpireNodeParser
    manifest: dict[str, Any]
    lexical: LexicalIndex | None = None

    def retriever(self, **options: Any) -> SpireRetriever:
        """A :class:`~spire_llamaindex.SpireRetriever` over this store, rendering as its parser does
        (its BM25 index starts from the one saved with the store); ``options`` are the retriever's
        (``options=QueryOptions(...)``, ``budget``, ``max_citations``, ``cache_size``, ...)."""
        from spire_llamaindex import SpireRetriever

        base = options.pop("options", None) or QueryOptions(policy=self.parser.policy, fmt=self.parser.fmt)
        retriever = SpireRetriever(self.index, options=base, **options)
        if retriever.lexicon is not None and self.lexical is not None:
            retriever.lexicon.restore(self.lexical)
        return retriever


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
    from spire_llamaindex import SpireNodeParser

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
    complete: bool = True,
    lexicon: Lexicon | None = None,
) -> Path:
    """Persist ``index`` (vector store, docstore with the sources, index store) and a manifest to ``store``.

    Crash-safe: the files go to a new data folder, fsynced, and the manifest is then replaced
    atomically to name it; the previous data folder is removed after that (module docstring).
    Takes the store's write lock (:class:`StoreLockedError` if another process holds it).
    ``complete=False`` marks a store saved part-way through an indexing run (``spire index``
    commits each batch), which ``spire query`` reports. ``lexicon``: brought in step with the
    stored pages and saved with them, so the store's retrievers start from it.
    """
    from spire_llamaindex.json_files import fsync_dir, fsync_file, write_atomic

    path = Path(store)
    with store_lock(path):
        current = _current_data(path)
        number = int(current[len(DATA_PREFIX) :]) + 1 if current and current[len(DATA_PREFIX) :].isdigit() else 1
        data = path / f"{DATA_PREFIX}{number:06d}"
        if data.exists():  # a leftover of a save that crashed before its commit
            shutil.rmtree(data)
        data.mkdir()
        index.storage_context.persist(persist_dir=str(data))
        if lexicon is not None:
            lexicon.save(data)
        files: dict[str, int] = {}
        for file in sorted(data.iterdir()):
            fsync_file(file)
            files[file.name] = file.stat().st_size
        fsync_dir(data)
        fsync_dir(path)
        manifest = {
            "format": STORE_FORMAT,
            "embed_model": DEFAULT_MODEL,
            "index_id": index.index_id,
            "parser": parser_settings(parser),
            "documents": sorted(documents),
            **(extra or {}),
            "complete": complete,
            "data": data.name,
            "files": files,
        }
        text = json.dumps(manifest, indent=2, ensure_ascii=False)
        write_atomic(path / MANIFEST, lambda f: f.write(text))  # the commit
        remove_leftovers(path, keep=data.name)
    return path


def _current_data(path: Path) -> str | None:
    """The data folder the manifest names, if the manifest can be read (else None)."""
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    data = manifest.get("data") if isinstance(manifest, dict) else None
    return data if isinstance(data, str) else None


def remove_leftovers(store: str | Path, *, keep: str | None = None) -> None:
    """Remove what interrupted saves and format 1 left in a store folder: data folders other
    than ``keep``, LlamaIndex files beside the manifest, temporary files. Call it holding the lock."""
    from spire_llamaindex.json_files import fsync_dir

    path = Path(store)
    for entry in path.iterdir():
        name = entry.name
        if name == keep or name in (MANIFEST, LOCK_FILE) or not is_store_leftover(name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
    fsync_dir(path)


def read_manifest(store: str | Path) -> dict[str, Any]:
    """The manifest of a store folder; raises :class:`StoreError` when there is no SPIRE store there."""
    path = Path(store)
    manifest_file = path / MANIFEST
    if not path.is_dir():
        raise StoreError(f"no store at {str(path)!r}: run `spire index PAGES_DIR --store {path}` first")
    if not manifest_file.is_file():
        if any(is_store_leftover(p.name) for p in path.iterdir()):
            raise StoreError(
                f"the store at {str(path)!r} was never completely written (an interrupted first run): "
                f"run `spire index PAGES_DIR --store {path}` again"
            )
        raise StoreError(f"{str(path)!r} is not a SPIRE store (no {MANIFEST}): run `spire index` into it first")
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    except ValueError as err:
        raise _damaged(path, manifest_file, f"not valid JSON ({err})") from None
    if not isinstance(manifest, dict):
        raise _damaged(path, manifest_file, "not a JSON object")
    if manifest.get("format") not in READABLE_FORMATS:
        raise StoreError(
            f"{str(path)!r} has store format {manifest.get('format')!r}, expected one of {list(READABLE_FORMATS)}"
        )
    if manifest["format"] >= 2 and not isinstance(manifest.get("data"), str):
        raise _damaged(path, manifest_file, "names no data folder")
    return manifest


def data_folder(store: str | Path, manifest: dict[str, Any]) -> Path:
    """The folder holding LlamaIndex's files of a store (the store itself in format 1)."""
    path = Path(store)
    return path / manifest["data"] if manifest.get("format", 1) >= 2 else path


def _check_files(path: Path, manifest: dict[str, Any]) -> Path:
    """The data folder, after checking each file the manifest lists is there with its size."""
    data = data_folder(path, manifest)
    for name, size in (manifest.get("files") or {}).items():
        file = data / name
        try:
            actual = file.stat().st_size
        except FileNotFoundError:
            raise _damaged(path, file, "missing") from None
        if actual != size:
            raise _damaged(path, file, f"{actual} bytes where the store wrote {size}")
    return data


def _vector_store(path: Path, data: Path) -> SimpleVectorStore:
    """The persisted SimpleVectorStore, read with plain ``json`` (LlamaIndex's own loader decodes
    every float through ``dataclasses_json``: ~10 s for a few thousand vectors)."""
    from llama_index.core.vector_stores.simple import SimpleVectorStoreData

    from spire_llamaindex.array_store import ArrayVectorStore  # the same store, searched as one matrix

    file = data / VECTOR_STORE_FILE
    try:
        loaded = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _damaged(path, file, "missing") from None
    except ValueError as err:
        raise _damaged(path, file, f"not valid JSON ({err})") from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("embedding_dict", {}), dict):
        raise _damaged(path, file, "not a vector store")
    return ArrayVectorStore(
        data=SimpleVectorStoreData(
            embedding_dict=loaded.get("embedding_dict", {}),
            text_id_to_ref_doc_id=loaded.get("text_id_to_ref_doc_id", {}),
            metadata_dict=loaded.get("metadata_dict", {}),
        )
    )


def _packed_docstore(path: Path, data: Path) -> Any:
    from spire_llamaindex.json_files import PackedKVStore

    file = data / DOCSTORE_FILE
    try:
        return PackedKVStore.from_persist_path(str(file))
    except FileNotFoundError:
        raise _damaged(path, file, "missing") from None
    except (OSError, ValueError) as err:
        raise _damaged(path, file, str(err)) from None


def open_docstore(store: str | Path) -> SimpleDocumentStore:
    """The docstore of a store folder, its nodes and pages held packed
    (:class:`~spire_llamaindex.json_files.PackedKVStore`); a :class:`StoreError` (naming the
    file) if it cannot be read."""
    from llama_index.core.storage.docstore import SimpleDocumentStore

    path = Path(store)
    for attempt in range(3):
        manifest = read_manifest(path)
        try:
            return SimpleDocumentStore(_packed_docstore(path, _check_files(path, manifest)))
        except StoreDamagedError:
            if attempt == 2 or _current_data(path) == manifest.get("data"):
                raise  # not a save that replaced the data folder while it was read
    raise AssertionError("unreachable")


def load_store(
    store: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    parser: SpireNodeParser | None = None,
) -> Store:
    """Open a store folder written by :func:`save_store` (``spire index``).

    Raises :class:`StoreDamagedError` naming the file when a file is missing, truncated, not
    JSON, or when the docstore lacks units the vector store indexes (e.g. a docstore of ``{}``).
    A save that completes while this reads is read again (readers take no lock).
    """
    path = Path(store)
    for attempt in range(3):
        manifest = read_manifest(path)
        try:
            return _load(path, manifest, embed_model=embed_model, parser=parser)
        except StoreDamagedError:
            if attempt == 2 or _current_data(path) == manifest.get("data"):
                raise
    raise AssertionError("unreachable")


def _load(
    path: Path, manifest: dict[str, Any], *, embed_model: BaseEmbedding | None, parser: SpireNodeParser | None
) -> Store:
    from llama_index.core import StorageContext, load_index_from_storage
    from llama_index.core.indices.vector_store.base import VectorStoreIndex
    from llama_index.core.storage.docstore import SimpleDocumentStore

    parser = parser or _parser(manifest.get("parser", {}))
    data = _check_files(path, manifest)
    vectors = _vector_store(path, data)
    kv = _packed_docstore(path, data)
    stored = kv.keys(_DOCSTORE_DATA)
    ids = vectors.data.embedding_dict.keys()
    expected = manifest.get("nodes")
    if isinstance(expected, int) and len(ids) != expected:
        raise _damaged(path, data / VECTOR_STORE_FILE, f"{len(ids)} vectors where the store wrote {expected}")
    missing = sum(1 for i in ids if i not in stored)
    if missing:
        what = f"lacks {missing} of the {len(ids)} units {VECTOR_STORE_FILE} indexes"
        raise _damaged(path, data / DOCSTORE_FILE, what)
    for file in sorted(data.glob("*.json")):  # the small files LlamaIndex reads itself
        if file.name not in (DOCSTORE_FILE, VECTOR_STORE_FILE, MANIFEST):
            try:
                json.loads(file.read_text(encoding="utf-8"))
            except ValueError as err:
                raise _damaged(path, file, f"not valid JSON ({err})") from None
    try:
        context = StorageContext.from_defaults(
            persist_dir=str(data), vector_store=vectors, docstore=SimpleDocumentStore(kv)
        )
        index = load_index_from_storage(
            context,
            index_id=manifest.get("index_id"),
            embed_model=embed_model or default_embeddings(),
            transformations=[parser],
        )
    except FileNotFoundError as err:
        raise _damaged(path, Path(err.filename or data / "index_store.json"), "missing") from None
    except (OSError, ValueError) as err:
        raise StoreError(f"cannot open the store at {str(path)!r}: {err}; {_rebuild_hint(path)}") from None
    if not isinstance(index, VectorStoreIndex):
        raise StoreError(f"the store at {str(path)!r} does not hold a vector index")
    return Store(path, index, parser, manifest, _lexical(path, data))


def _lexical(path: Path, data: Path) -> LexicalIndex | None:
    """The BM25 index saved in ``data``; None when there is none or it cannot be read (logged:
    the retriever then builds it from the stored pages, nothing is lost)."""
    if not (data / INDEX_FILE).is_file():
        return None
    try:
        return LexicalIndex.load(data)
    except (OSError, ValueError) as err:
        log.warning("store %s: the saved BM25 index cannot be read (%s); it is built from the pages", path, err)
        return None
