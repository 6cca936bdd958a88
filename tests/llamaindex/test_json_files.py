"""The lighter simple stores write LlamaIndex's own files, byte for byte, and read them back."""

from __future__ import annotations

import io
import json
import random
from array import array
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.schema import Document, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore
from llama_index.core.vector_stores.simple import SimpleVectorStore

from spire_llamaindex import default_storage_context
from spire_llamaindex.array_store import ArrayVectorStore
from spire_llamaindex.json_files import StreamedKVStore, dump
from spire_llamaindex.store import Store

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


def _nodes(n: int) -> list[TextNode]:
    rng = random.Random(5)
    return [
        TextNode(id_=f"n{i}", text=f"text {i}", metadata={"k": i}, embedding=[rng.uniform(-1, 1) for _ in range(6)])
        for i in range(n)
    ]


def test_array_store_holds_arrays_and_writes_the_simple_stores_file(tmp_path: Path) -> None:
    plain, light = SimpleVectorStore(), ArrayVectorStore()
    nodes = _nodes(12)
    plain.add(nodes)
    light.add(nodes)
    assert all(type(v) is array for v in light.data.embedding_dict.values())
    assert light.get("n3") == plain.get("n3") == nodes[3].embedding
    plain.persist(str(tmp_path / "plain.json"))
    light.persist(str(tmp_path / "light.json"))
    assert (tmp_path / "light.json").read_bytes() == (tmp_path / "plain.json").read_bytes()
    again = ArrayVectorStore.from_persist_path(str(tmp_path / "plain.json"))
    assert all(type(v) is array for v in again.data.embedding_dict.values())
    assert {k: list(v) for k, v in again.data.embedding_dict.items()} == plain.data.embedding_dict


def test_streamed_kvstore_writes_the_simple_kvstores_file(tmp_path: Path) -> None:
    docs = [Document(id_=f"page{i}", text="<p>é “quoted” \u2028 line</p>" * (i + 1)) for i in range(5)]
    for kind, name in ((SimpleKVStore, "plain.json"), (StreamedKVStore, "streamed.json")):
        store = SimpleDocumentStore(kind())
        store.add_documents(docs + _nodes(4))
        store.persist(str(tmp_path / name))
    assert (tmp_path / "streamed.json").read_bytes() == (tmp_path / "plain.json").read_bytes()
    back = SimpleDocumentStore(StreamedKVStore.from_persist_path(str(tmp_path / "streamed.json")))
    assert back.get_document("page3").get_content() == docs[3].get_content()


def test_new_indexes_use_the_lighter_stores() -> None:
    context = default_storage_context()
    assert isinstance(context.vector_store, ArrayVectorStore)
    docstore = context.docstore
    assert isinstance(docstore, SimpleDocumentStore)
    assert isinstance(docstore._kvstore, StreamedKVStore)


def test_store_folders_open_with_the_lighter_stores_and_write_the_same_files(example: Store, tmp_path: Path) -> None:
    assert isinstance(example.index.vector_store, ArrayVectorStore)
    assert isinstance(example.index.docstore, SimpleDocumentStore)
    assert isinstance(example.index.docstore._kvstore, StreamedKVStore)
    example.index.storage_context.persist(persist_dir=str(tmp_path))
    for name in ("docstore.json", "default__vector_store.json"):
        assert (tmp_path / name).read_bytes() == (example.path / name).read_bytes()
