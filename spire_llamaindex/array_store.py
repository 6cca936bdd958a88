"""SimpleVectorStore with the same answers, searched as one matrix instead of row by row.

LlamaIndex's ``SimpleVectorStore.query`` turns every stored vector (Python lists) into a new
NumPy array and scores it row by row in Python on every query: ~170 ms for 5.6k vectors here,
and SPIRE's growing prefix searches up to four times per question. :class:`ArrayVectorStore`
keeps the vectors as one float64 matrix with their norms (built on first search, rebuilt when the
stored vectors change) and scores them with one matrix-vector product: the same cosine
similarities (up to the last bit of rounding), the same top ``k`` (ties at the cut kept by
larger id, as LlamaIndex's heap does; exact ties, i.e. identical vectors, listed larger id first,
where LlamaIndex leaves them in its heap's arrangement), the same persisted JSON; ``node_ids`` restrict the rows as
there. Metadata filters and the learner/MMR modes are left to ``SimpleVectorStore`` itself.

Each vector is kept as an ``array``: of float32 when every value is one (as a model's output is:
an eighth of the memory of a list of Python floats), else of float64 (a quarter); the same
values either way (``get`` still returns a list), and the file is written entry by entry
(:mod:`~spire_llamaindex.json_files`).
"""

from __future__ import annotations

import dataclasses
import operator
import os
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

import fsspec
import numpy as np
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.simple import SimpleVectorStore, SimpleVectorStoreData
from llama_index.core.vector_stores.types import (
    DEFAULT_PERSIST_DIR,
    DEFAULT_PERSIST_FNAME,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from .compat import vector_store_fs
from .json_files import dump_file


class _Matrix:
    """A snapshot of an ``embedding_dict``: its ids, the vectors stacked, their norms."""

    __slots__ = ("ids", "norms", "rows", "values")

    def __init__(self, embeddings: Mapping[str, Sequence[float]]) -> None:
        items = list(embeddings.items())  # one snapshot (a concurrent write raises, and the caller retries)
        self.ids = [k for k, _ in items]
        self.values = [v for _, v in items]
        self.rows = np.array(self.values, dtype=np.float64) if items else np.zeros((0, 0))
        self.norms = np.linalg.norm(self.rows, axis=1)

    def current(self, embeddings: Mapping[str, Sequence[float]]) -> bool:
        """Whether ``embeddings`` still holds exactly these ids and vector objects (C-speed identity checks)."""
        if len(embeddings) != len(self.ids):
            return False
        return all(map(operator.is_, embeddings.keys(), self.ids)) and all(
            map(operator.is_, embeddings.values(), self.values)
        )


def _held(vector: Sequence[float]) -> array[float]:
    """``vector`` as an array of float32 when that keeps every value exactly, else of float64."""
    narrow = array("f", vector)
    return narrow if narrow.tolist() == list(vector) else array("d", vector)


class ArrayVectorStore(SimpleVectorStore):
    """A ``SimpleVectorStore`` (same data, same persisted file) whose default queries are one matrix product."""

    _matrix: _Matrix | None = PrivateAttr(default=None)

    def __init__(
        self, data: SimpleVectorStoreData | None = None, fs: fsspec.AbstractFileSystem | None = None, **kwargs: Any
    ) -> None:
        super().__init__(data=data, fs=fs, **kwargs)
        vectors = self.data.embedding_dict
        for key, vector in vectors.items():
            vectors[key] = _held(vector)  # type: ignore[assignment]

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        ids = super().add(nodes, **kwargs)
        vectors = self.data.embedding_dict
        for node in nodes:
            vectors[node.node_id] = _held(vectors[node.node_id])  # type: ignore[assignment]
        return ids

    def get(self, text_id: str) -> list[float]:
        return list(self.data.embedding_dict[text_id])

    def persist(
        self,
        persist_path: str = os.path.join(DEFAULT_PERSIST_DIR, DEFAULT_PERSIST_FNAME),
        fs: fsspec.AbstractFileSystem | None = None,
    ) -> None:
        fields = {f.name: getattr(self.data, f.name) for f in dataclasses.fields(self.data)}
        dump_file(persist_path, fields, depth=2, fs=fs or vector_store_fs(self), default=list)  # field -> id -> value

    def _rows(self) -> _Matrix:
        embeddings = self.data.embedding_dict
        matrix = self._matrix
        if matrix is None or not matrix.current(embeddings):
            matrix = self._matrix = _Matrix(embeddings)
        return matrix

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        if query.filters is not None or query.mode != VectorStoreQueryMode.DEFAULT or query.query_embedding is None:
            return super().query(query, **kwargs)
        matrix = self._rows()
        if not matrix.ids:
            return VectorStoreQueryResult(similarities=[], ids=[])
        q = np.asarray(query.query_embedding, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            # einsum, not BLAS: a threaded gemv is ten times slower on a busy machine
            scores = np.einsum("ij,j->i", matrix.rows, q) / (matrix.norms * np.linalg.norm(q))
        if query.node_ids is not None:  # VectorStoreIndex.as_retriever passes every node id of the index
            allowed = set(query.node_ids)
            rows = np.fromiter((i in allowed for i in matrix.ids), dtype=bool, count=len(matrix.ids))
            scores = np.where(rows, scores, -np.inf)
            n = int(rows.sum())
        else:
            n = len(matrix.ids)
        if n == 0:
            return VectorStoreQueryResult(similarities=[], ids=[])
        k = query.similarity_top_k
        total = len(matrix.ids)
        if k and k < n:
            # the k best, then every other row with the k-th score (a tie at the cut is settled by id, below)
            cut = np.partition(scores, total - k)[total - k]
            chosen = np.flatnonzero(scores >= cut)
        else:
            chosen = np.flatnonzero(scores > -np.inf) if n < total else np.arange(total)
        ranked = sorted(((float(scores[i]), matrix.ids[i]) for i in chosen), reverse=True)[: k or None]
        return VectorStoreQueryResult(similarities=[s for s, _ in ranked], ids=[i for _, i in ranked])
