"""A store's JSON files written and read entry by entry, and a key-value store that holds its
values packed: the same bytes as LlamaIndex writes, a fraction of the memory.

``SimpleKVStore`` (the docstore's) holds every node and source page as Python dicts, about
twice its file in memory (100 MB at 140 pages), builds the whole file as one string to
persist it, and parses the whole file into dicts to load it. :class:`PackedKVStore` holds each
value as its JSON text, compressed (:class:`PackedMapping`: about a ninth of the dicts),
writes its file with :func:`dump` and reads it one entry at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import IO, Any, cast

import fsspec
from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore
from llama_index.core.storage.kvstore.types import DEFAULT_COLLECTION, MutableMappingKVStore

from .compat import kv_collection, kv_collections

#: What a key-value store holds under each key.
JSONObject = dict[str, Any]
#: zlib's fastest level: source pages shrink 6x, nodes 3x, at about 100 MB/s.
PACK_LEVEL = 1


class PackedMapping(MutableMapping[str, JSONObject]):
    """A ``dict`` of JSON objects, each kept as its JSON text, compressed, and decoded
    anew on every read (so a value read is a fresh copy, and one stored must be JSON)."""

    def __init__(self) -> None:
        self._packed: dict[str, bytes] = {}

    def __getitem__(self, key: str) -> JSONObject:
        value: JSONObject = json.loads(zlib.decompress(self._packed[key]))
        return value

    def __setitem__(self, key: str, value: JSONObject) -> None:
        self.set_json(key, json.dumps(value))

    def __delitem__(self, key: str) -> None:
        del self._packed[key]

    def __contains__(self, key: object) -> bool:  # Mapping's own would decode the value
        return key in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def set_json(self, key: str, text: str) -> None:
        """Store the value whose JSON text is ``text`` (``json.dumps``'s, for files LlamaIndex's own)."""
        self._packed[key] = zlib.compress(text.encode(), PACK_LEVEL)

    def json_items(self) -> Iterator[tuple[str, str]]:
        """Each key with its value's JSON text, in insertion order."""
        for key, packed in self._packed.items():
            yield key, zlib.decompress(packed).decode()


def dump(obj: Any, out: IO[str], *, depth: int, default: Callable[[Any], Any] | None = None) -> None:
    """Write ``json.dumps(obj, default=default)`` to ``out``, the dicts of the top ``depth``
    levels one entry at a time (their keys must be strings), a :class:`PackedMapping` at any
    level from its texts."""
    if isinstance(obj, PackedMapping):
        out.write("{")
        for n, (key, text) in enumerate(obj.json_items()):
            out.write(f"{', ' if n else ''}{json.dumps(key)}: {text}")
        out.write("}")
        return
    if depth <= 0 or not isinstance(obj, dict) or not obj:
        out.write(json.dumps(obj, default=default))
        return
    out.write("{")
    for n, (key, value) in enumerate(obj.items()):
        out.write(f"{', ' if n else ''}{json.dumps(key)}: ")
        dump(value, out, depth=depth - 1, default=default)
    out.write("}")


def dump_file(
    persist_path: str,
    obj: Any,
    *,
    depth: int,
    fs: fsspec.AbstractFileSystem | None = None,
    default: Callable[[Any], Any] | None = None,
) -> None:
    """:func:`dump` ``obj`` into the file at ``persist_path``, its folder made if missing (as LlamaIndex does).

    On the local file system the file is replaced atomically (:func:`write_atomic`): a crash
    leaves the previous file or the new one, never a part of either. Other file systems are
    written as LlamaIndex writes them.
    """
    fs = fs or fsspec.filesystem("file")
    folder = os.path.dirname(persist_path)
    if not fs.exists(folder):
        fs.makedirs(folder)
    if _is_local(fs):
        write_atomic(persist_path, lambda f: dump(obj, f, depth=depth, default=default))
        return
    with fs.open(persist_path, "w", encoding="utf-8") as f:
        dump(obj, f, depth=depth, default=default)


def _is_local(fs: fsspec.AbstractFileSystem) -> bool:
    protocol = fs.protocol
    return "file" in (protocol if isinstance(protocol, tuple | list) else (protocol,))


_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: str | os.PathLike[str], write: Callable[[IO[str]], object]) -> None:
    """Replace the file at ``path`` with what ``write`` writes, atomically: into a temporary
    file of the same folder, flushed and fsynced, renamed over ``path`` (``os.replace``), and
    the folder fsynced so that the rename itself survives a power cut. A failure removes the
    temporary file and leaves ``path`` as it was."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would make it, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush a written file's data to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (created, renamed, removed files) to the disk."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, at: int) -> int:
    """Where the JSON blanks from ``text[at]`` on end (a run of none matches too)."""
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


def read_object(text: str, pos: int, read_value: Callable[[str, int], int]) -> int:
    """Walk the JSON object at ``text[pos:]`` (after any blanks): for each member,
    ``read_value(key, start)`` reads the value that starts at ``start`` and returns where it
    ends. Returns where the object ends; raises ``ValueError`` where the text is not an object."""

    def skip(at: int) -> int:
        return _skip(text, at)

    def expect(at: int, char: str) -> int:
        if text[at : at + 1] != char:
            raise ValueError(f"expected {char!r} at character {at}")
        return at + 1

    pos = skip(expect(skip(pos), "{"))
    if text[pos : pos + 1] == "}":
        return pos + 1
    while True:
        if text[pos : pos + 1] != '"':
            raise ValueError(f"expected a key at character {pos}")
        key, pos = _DECODER.raw_decode(text, pos)
        pos = skip(read_value(key, skip(expect(skip(pos), ":"))))
        if text[pos : pos + 1] == "}":
            return pos + 1
        pos = skip(expect(pos, ","))


class PackedKVStore(SimpleKVStore):
    """A ``SimpleKVStore`` whose values are held as :class:`PackedMapping` objects; its file is
    byte for byte what ``SimpleKVStore`` writes, written and read entry by entry (an entry read
    is written back as it was read)."""

    def __init__(self, data: dict[str, dict[str, JSONObject]] | None = None) -> None:
        MutableMappingKVStore.__init__(self, mapping_factory=PackedMapping)  # type: ignore[arg-type]
        for collection, values in (data or {}).items():
            self._packed(collection).update(values)

    def _packed(self, collection: str) -> PackedMapping:
        return cast(PackedMapping, kv_collection(self, collection))

    def get(self, key: str, collection: str = DEFAULT_COLLECTION) -> JSONObject | None:
        """The value at ``key`` (a fresh copy), or None, in one read: ``SimpleKVStore``'s test for
        the key, then its read, raised ``KeyError`` when a concurrent delete came between them."""
        return self._packed(collection).get(key)

    def keys(self, collection: str = DEFAULT_COLLECTION) -> frozenset[str]:
        """The keys of ``collection`` (none decoded)."""
        return frozenset(self._packed(collection))

    def persist(self, persist_path: str, fs: fsspec.AbstractFileSystem | None = None) -> None:
        dump_file(persist_path, kv_collections(self), depth=1, fs=fs)  # collection -> packed values

    @classmethod
    def from_persist_path(cls, persist_path: str, fs: fsspec.AbstractFileSystem | None = None) -> PackedKVStore:
        """Read a ``SimpleKVStore`` file, packing each value as it is parsed (the file's dicts
        never all exist at once)."""
        fs = fs or fsspec.filesystem("file")
        with fs.open(persist_path, "r", encoding="utf-8") as f:
            text = f.read()
        store = cls()

        def read_collection(name: str, start: int) -> int:
            mapping = store._packed(name)

            def read_entry(key: str, at: int) -> int:
                value, end = _DECODER.raw_decode(text, at)
                if not isinstance(value, dict):
                    raise ValueError(f"entry {key!r} of {name!r} is not an object")
                mapping.set_json(key, text[at:end])  # as written: json.dumps's text in LlamaIndex's files
                return end

            return read_object(text, start, read_entry)

        end = read_object(text, 0, read_collection)
        if _skip(text, end) != len(text):  # json.load's blanks only
            raise ValueError(f"extra data after character {end}")
        return store

    def to_dict(self) -> dict[str, dict[str, JSONObject]]:
        return {name: dict(values) for name, values in kv_collections(self).items()}
