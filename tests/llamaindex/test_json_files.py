"""The lighter simple stores hold less, write LlamaIndex's own files byte for byte, and read them back."""

from __future__ import annotations

import gc
import io
import json
import random
import shutil
import tracemalloc
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.schema import Document, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore
from llama_index.core.vector_stores.simple import SimpleVectorStore

from spire_app.store import Store, StoreError, data_folder, load_store, open_docstore, read_manifest
from spire_llamaindex import default_storage_context, json_files
from spire_llamaindex.array_store import ArrayVectorStore
from spire_llamaindex.json_files import PackedKVStore, PackedMapping, dump

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(min_value=0, max_value=3))
def test_dump_writes_what_json_dumps_gives(obj: Any, depth: int) -> None:
    out = io.StringIO()
    dump(obj, out, depth=depth)
    assert out.getvalue() == json.dumps(obj)


OBJECT = st.dictionaries(st.text(max_size=8), JSON, max_size=4)
STORE = st.dictionaries(st.text(max_size=8), st.dictionaries(st.text(max_size=8), OBJECT, max_size=4), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"), st.none() | OBJECT), max_size=30))
def test_packed_mapping_acts_as_a_dict_of_copies(ops: list[tuple[str, dict[str, Any] | None]]) -> None:
    packed: PackedMapping = PackedMapping()
    plain: dict[str, Any] = {}
    for key, value in ops:  # None: delete the key
        if value is None:
            assert (packed.pop(key, None) is None) == (plain.pop(key, None) is None)
        else:
            packed[key] = value
            plain[key] = json.loads(json.dumps(value))
        assert dict(packed) == plain and list(packed) == list(plain) and len(packed) == len(plain)
        assert all((k in packed) == (k in plain) for k in "abcde")
    for key in plain:
        packed[key]["new"] = 1  # a value read is a copy
        assert packed[key] == plain[key]


@settings(max_examples=200, deadline=None)
@given(data=STORE, indent=st.sampled_from([None, 0, 2, "\t"]))
def test_packed_kvstore_reads_any_simple_kvstore_file(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any], indent: int | str | None
) -> None:
    path = tmp_path_factory.mktemp("kv") / "store.json"
    path.write_text(json.dumps(data, indent=indent), encoding="utf-8")
    store = PackedKVStore.from_persist_path(str(path))
    assert store.to_dict() == data
    store.persist(str(path))
    written = path.read_text(encoding="utf-8")
    assert json.loads(written) == data
    if indent is None:  # LlamaIndex's own form comes back byte for byte
        assert written == json.dumps(data)


@pytest.mark.parametrize(
    "text",
    ["", "[]", '{"c": []}', '{"c": {"k": 1}}', '{"c": {"k": {}}', '{"c": {"k": {}}} x', '{"c" {"k": {}}}', "{c: {}}"],
)
def test_packed_kvstore_refuses_what_is_not_a_kvstore_file(text: str, tmp_path: Path) -> None:
    (tmp_path / "store.json").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError):
        PackedKVStore.from_persist_path(str(tmp_path / "store.json"))


def test_a_store_folder_with_a_broken_docstore_is_a_store_error(example: Store, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(example.path, store)
    file = data_folder(store, read_manifest(store)) / "docstore.json"
    broken = '{"docstore/data": {"x": '
    file.write_text(broken + " " * (file.stat().st_size - len(broken)), encoding="utf-8")  # the size it had
    with pytest.raises(StoreError, match=r"is damaged: docstore\.json: .*--rebuild"):
        load_store(store)
    with pytest.raises(StoreError, match=r"docstore\.json: "):
        open_docstore(store)


def _traced(build: Any) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        held = build()
        gc.collect()
        return tracemalloc.get_traced_memory()[0], held
    finally:
        tracemalloc.stop()


def test_packed_kvstore_holds_pages_in_a_fraction_of_the_memory() -> None:
    words = ["<p>", "</p>", "<td>", "table", "row", "column", "the", "value", "é", "\u2028", "1999", "PostgreSQL"]

    def pages() -> list[Document]:  # made anew inside each measurement: no text is shared
        rng = random.Random(3)
        return [Document(id_=f"page{i}", text=" ".join(rng.choice(words) for _ in range(20_000))) for i in range(10)]

    sizes = {}
    for kind in (SimpleKVStore, PackedKVStore):

        def build(kind: Any = kind) -> SimpleDocumentStore:
            store = SimpleDocumentStore(kind())
            store.add_documents(pages())
            return store

        sizes[kind], store = _traced(build)
        assert store.get_document("page7").get_content() == pages()[7].get_content()
    assert sizes[PackedKVStore] * 3 < sizes[SimpleKVStore]


def _nodes(n: int) -> list[TextNode]:
    """``n`` nodes, the even ones' vectors float32 values (as a model gives), the odd ones' not."""
    rng = random.Random(5)
    nodes = []
    for i in range(n):
        vector = [rng.uniform(-1, 1) for _ in range(6)]
        if i % 2 == 0:
            vector = array("f", vector).tolist()
        nodes.append(TextNode(id_=f"n{i}", text=f"text {i}", metadata={"k": i}, embedding=vector))
    return nodes


def test_array_store_holds_arrays_and_writes_the_simple_stores_file(tmp_path: Path) -> None:
    plain, light = SimpleVectorStore(), ArrayVectorStore()
    nodes = _nodes(12)
    plain.add(nodes)
    light.add(nodes)
    assert [v.typecode for v in light.data.embedding_dict.values()] == ["f", "d"] * 6  # type: ignore[attr-defined]
    assert light.get("n3") == plain.get("n3") == nodes[3].embedding
    assert light.get("n4") == plain.get("n4") == nodes[4].embedding
    plain.persist(str(tmp_path / "plain.json"))
    light.persist(str(tmp_path / "light.json"))
    assert (tmp_path / "light.json").read_bytes() == (tmp_path / "plain.json").read_bytes()
    again = ArrayVectorStore.from_persist_path(str(tmp_path / "plain.json"))
    assert [v.typecode for v in again.data.embedding_dict.values()] == ["f", "d"] * 6  # type: ignore[attr-defined]
    assert {k: list(v) for k, v in again.data.embedding_dict.items()} == plain.data.embedding_dict


def test_streamed_kvstore_writes_the_simple_kvstores_file(tmp_path: Path) -> None:
    docs = [Document(id_=f"page{i}", text="<p>é “quoted” \u2028 line</p>" * (i + 1)) for i in range(5)]
    for kind, name in ((SimpleKVStore, "plain.json"), (PackedKVStore, "streamed.json")):
        store = SimpleDocumentStore(kind())
        store.add_documents(docs + _nodes(4))
        store.persist(str(tmp_path / name))
    assert (tmp_path / "streamed.json").read_bytes() == (tmp_path / "plain.json").read_bytes()
    back = SimpleDocumentStore(PackedKVStore.from_persist_path(str(tmp_path / "streamed.json")))
    assert back.get_document("page3").get_content() == docs[3].get_content()


def test_new_indexes_use_the_lighter_stores() -> None:
    context = default_storage_context()
    assert isinstance(context.vector_store, ArrayVectorStore)
    docstore = context.docstore
    assert isinstance(docstore, SimpleDocumentStore)
    assert isinstance(docstore._kvstore, PackedKVStore)


def test_store_folders_open_with_the_lighter_stores_and_write_the_same_files(example: Store, tmp_path: Path) -> None:
    assert isinstance(example.index.vector_store, ArrayVectorStore)
    assert isinstance(example.index.docstore, SimpleDocumentStore)
    assert isinstance(example.index.docstore._kvstore, PackedKVStore)
    example.index.storage_context.persist(persist_dir=str(tmp_path))
    data = data_folder(example.path, example.manifest)
    for name in ("docstore.json", "default__vector_store.json"):
        assert (tmp_path / name).read_bytes() == (data / name).read_bytes()


def test_store_files_are_replaced_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half-way leaves the previous file whole (and no temporary file)."""
    store = PackedKVStore({"c": {"k": {"v": 1}}})
    path = tmp_path / "kv.json"
    store.persist(str(path))
    before = path.read_bytes()
    store.put("k2", {"v": 2}, collection="c")

    def broken_dump(obj: Any, out: Any, **kwargs: Any) -> None:
        out.write('{"c": {"k": ')
        raise OSError("disk full")

    monkeypatch.setattr(json_files, "dump", broken_dump)
    with pytest.raises(OSError, match="disk full"):
        store.persist(str(path))
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["kv.json"]
    monkeypatch.undo()
    store.persist(str(path))
    assert json.loads(path.read_text())["c"]["k2"] == {"v": 2}


def test_a_read_that_a_delete_races_finds_the_value_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SimpleKVStore.get`` tests for the key, then reads it: a delete landing in between raised
    ``KeyError`` in a query beside ``update_index``. Here every membership test is such a delete."""
    store = PackedKVStore()
    store.put("unit", {"text": "a sentence"})

    def deleted_meanwhile(self: PackedMapping, key: object) -> bool:
        found = key in self._packed
        self._packed.pop(key, None)  # type: ignore[call-overload]
        return found

    monkeypatch.setattr(PackedMapping, "__contains__", deleted_meanwhile)
    assert store.get("unit") == {"text": "a sentence"}  # one read: the delete comes after it
    assert store.get("gone") is None
    store.delete("unit")
    assert store.get("unit") is None
