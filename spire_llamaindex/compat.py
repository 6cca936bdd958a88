"""The private members of LlamaIndex that SPIRE reads, each behind one function.

Everything else in :mod:`spire_llamaindex` uses LlamaIndex's public API (the sentence search is a
``VectorStoreQuery`` sent to ``index.vector_store``, its nodes read with ``index.docstore.get_nodes``:
:mod:`spire_llamaindex._search`). What is here has no public equivalent in the versions
:data:`CHECKED_ON` names, each function's entry: the package whose member it reads and the
lowest and highest versions it was checked on (the lowest that ``pyproject.toml`` declares, CI's
``constraints-lowest.txt``, and the pinned one, ``constraints.txt``). ``tests/test_compat.py``
fails when the installed version is outside that range or the member is gone, so an upgrade is
caught by the tests, not by a user: check the function on the new version, then widen its range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore
from llama_index.core.vector_stores.simple import SimpleVectorStore

if TYPE_CHECKING:
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

#: function name -> (distribution, lowest version checked, highest version checked)
CHECKED_ON: dict[str, tuple[str, str, str]] = {
    "index_embed_model": ("llama-index-core", "0.13.0", "0.14.25"),
    "chosen_embed_model": ("llama-index-core", "0.13.0", "0.14.25"),
    "sentence_transformer": ("llama-index-embeddings-huggingface", "0.6.0", "0.8.0"),
    "kv_collections": ("llama-index-core", "0.13.0", "0.14.25"),
    "kv_collection": ("llama-index-core", "0.13.0", "0.14.25"),
    "vector_store_fs": ("llama-index-core", "0.13.0", "0.14.25"),
}


def index_embed_model(index: VectorStoreIndex) -> BaseEmbedding:
    """The embedding model ``index`` embeds its nodes with (``VectorStoreIndex._embed_model``).

    Why private: ``VectorStoreIndex`` takes ``embed_model`` at construction and keeps it only as
    ``_embed_model``, with no property; its own ``as_retriever`` reads that member too. SPIRE needs
    it to embed the question of its own vector query (:class:`~spire_llamaindex._search.Ranking`)
    and a batch of pages in :func:`~spire_llamaindex.index.update_index` (the same model, or the
    vectors would not compare). ``Settings.embed_model`` is not it: an index built with its own
    model keeps that one.
    """
    return index._embed_model


def chosen_embed_model() -> BaseEmbedding | None:
    """``Settings.embed_model`` if the application set one, else None (``Settings._embed_model``).

    Why private: reading the public ``Settings.embed_model`` while it is unset resolves LlamaIndex's
    default, OpenAI's embeddings (an API key, the network, or an ImportError); there is no public
    way to ask whether one was set. SPIRE's default (the packaged model) applies only when none was.
    """
    chosen: Any = Settings._embed_model
    return chosen if isinstance(chosen, BaseEmbedding) else None


def sentence_transformer(embed: HuggingFaceEmbedding) -> Any:
    """The ``SentenceTransformer`` that ``HuggingFaceEmbedding`` wraps (its private ``_model``).

    Why private: ``HuggingFaceEmbedding`` builds the model itself from ``model_name`` and exposes
    no accessor and takes no ready model; SPIRE sets the model's batch padding on it
    (:func:`spire_runtime.model.pad_in_buckets`), which bounds the memory of a long indexing run.
    """
    return embed._model


def kv_collections(store: SimpleKVStore) -> dict[str, Any]:
    """The collections of ``store``, name -> mapping (``SimpleKVStore._collections_mappings``).

    Why private: ``SimpleKVStore`` keeps its collections only in this member (``persist`` and
    ``to_dict`` read it); :class:`~spire_llamaindex.json_files.PackedKVStore`, its subclass, writes
    and copies them entry by entry."""
    return store._collections_mappings


def kv_collection(store: SimpleKVStore, collection: str) -> Any:
    """The mapping of ``collection`` in ``store``, made with the store's mapping factory when new
    (``SimpleKVStore._get_collection_mapping``).

    Why private: the one place ``SimpleKVStore`` creates a collection; ``PackedKVStore`` makes its
    own mapping type there, as ``SimpleKVStore`` does."""
    return store._get_collection_mapping(collection)


def vector_store_fs(store: SimpleVectorStore) -> Any:
    """The filesystem ``store`` was given (``SimpleVectorStore._fs``), where its ``persist`` writes.

    Why private: ``SimpleVectorStore`` keeps it only in this member;
    :class:`~spire_llamaindex.array_store.ArrayVectorStore` persists to the same one."""
    return store._fs
