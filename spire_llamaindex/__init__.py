"""SPIRE for LlamaIndex: a NodeParser, a Retriever and an evidence filter over HTML pages.

    from spire_llamaindex import SpireNodeParser, SpireRetriever, SpireEvidenceFilter

Adapters only: every algorithm lives in :mod:`spire_core`.
"""

from ._source import SPIRE_KEYS, MissingSourceError, SourceDocuments, node_id
from .defaults import Store, StoreError, default_embed_model, load_store, save_store
from .index import IndexUpdate, build_index, html_files, read_page, remove_documents, store_sources, update_index
from .parser import SpireNodeParser
from .postprocessor import SpireEvidenceFilter
from .retriever import SpireRetriever, citations_of, subdocument_of

__all__ = [
    "SPIRE_KEYS",
    "IndexUpdate",
    "MissingSourceError",
    "SourceDocuments",
    "SpireEvidenceFilter",
    "SpireNodeParser",
    "SpireRetriever",
    "Store",
    "StoreError",
    "build_index",
    "citations_of",
    "default_embed_model",
    "html_files",
    "load_store",
    "node_id",
    "read_page",
    "remove_documents",
    "save_store",
    "store_sources",
    "subdocument_of",
    "update_index",
]
