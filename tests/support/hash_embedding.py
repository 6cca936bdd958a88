"""A deterministic stand-in for the embedding model, for tests about storage rather than retrieval:
each text's vector is derived from its SHA-256 (no model to load, the same vector in every process)."""

from __future__ import annotations

import hashlib

from llama_index.core.base.embeddings.base import BaseEmbedding

DIM = 32


def hash_vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 127.5) / 127.5 for b in digest[:DIM]]


class HashEmbedding(BaseEmbedding):
    """Vectors from the text's hash: equal texts, equal vectors; nothing semantic."""

    def _get_text_embedding(self, text: str) -> list[float]:
        return hash_vector(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query)
