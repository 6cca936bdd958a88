"""The query path's speed-ups answer as the code they replace: the matrix vector store, the memoised decoding."""

from __future__ import annotations

import random

from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.simple import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery

from spire_core import encode_paths
from spire_core.results.schema import members_of, unit_metadata, unit_of
from spire_llamaindex.array_store import ArrayVectorStore


def _stores(n: int) -> tuple[SimpleVectorStore, ArrayVectorStore]:
    rng = random.Random(7)
    vectors = [[rng.uniform(-1, 1) for _ in range(8)] for _ in range(n)]
    vectors[5] = list(vectors[3])  # exact ties: the same vector under two ids
    vectors[9] = list(vectors[3])
    nodes = [TextNode(id_=f"n{i:03d}", text=str(i), embedding=v) for i, v in enumerate(vectors)]
    plain, fast = SimpleVectorStore(), ArrayVectorStore()
    plain.add(nodes)
    fast.add(nodes)
    return plain, fast


def _same(a: SimpleVectorStore, b: ArrayVectorStore, query: VectorStoreQuery) -> None:
    want, got = a.query(query), b.query(query)
    assert got.similarities is not None and want.similarities is not None
    assert all(abs(x - y) < 1e-12 for x, y in zip(got.similarities, want.similarities, strict=True))
    # the same ids, in the same order but among exact ties (identical vectors), which LlamaIndex's heap
    # leaves in its own arrangement and the matrix store gives larger id first
    assert set(got.ids) == set(want.ids)
    rank = {i: round(s, 9) for i, s in zip(want.ids, want.similarities, strict=True)}
    assert [rank[i] for i in got.ids] == [rank[i] for i in want.ids]


def test_array_store_answers_as_simple_vector_store() -> None:
    plain, fast = _stores(60)
    rng = random.Random(3)
    for k in (1, 2, 5, 32, 60, 100):
        q = [rng.uniform(-1, 1) for _ in range(8)]
        _same(plain, fast, VectorStoreQuery(query_embedding=q, similarity_top_k=k))
        some = [f"n{i:03d}" for i in range(0, 60, 3)]
        _same(plain, fast, VectorStoreQuery(query_embedding=q, similarity_top_k=k, node_ids=some))
    tie = plain.data.embedding_dict["n003"]
    for k in (1, 2, 3):  # three equal vectors at the top: the cut keeps the same ids
        _same(plain, fast, VectorStoreQuery(query_embedding=tie, similarity_top_k=k))


def test_array_store_follows_writes() -> None:
    plain, fast = _stores(20)
    q = [0.5] * 8
    fast.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5))  # builds the matrix
    extra = TextNode(id_="zzz", text="new", embedding=[0.5] * 8)
    for store in (plain, fast):
        store.add([extra])
        store.delete_nodes(["n001", "n002"])
        store.data.embedding_dict["n004"] = [-0.5] * 8  # a write around add(): still seen
    _same(plain, fast, VectorStoreQuery(query_embedding=q, similarity_top_k=5))
    assert fast.query(VectorStoreQuery(query_embedding=q, similarity_top_k=1)).ids == ["zzz"]
    fast.clear()
    assert fast.query(VectorStoreQuery(query_embedding=q, similarity_top_k=3)).ids == []


def test_decoded_units_are_shared_and_equal() -> None:
    members = (frozenset({(1, 0), (1, 1)}), frozenset({(1, 2)}))
    meta = unit_metadata("page", members[0] | members[1], (1, 0), members)
    first, again = unit_of(meta), unit_of(dict(meta))
    assert first == again == ("page", members[0] | members[1])
    assert first is not None and again is not None and first[1] is again[1]  # decoded once
    assert members_of(meta, first[1]) == members
    assert meta["spire_paths"] == encode_paths(first[1])
