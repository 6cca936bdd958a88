"""SPIRE for LlamaIndex: a NodeParser, a Retriever and an evidence filter over HTML pages.

    from spire_llamaindex import SpireNodeParser, SpireRetriever, SpireEvidenceFilter

Adapters only: every algorithm lives in :mod:`spire_core`; the result schema (metadata
keys, ids) is :mod:`spire_core.results.schema`, shared with ``spire_langchain``. The ``spire``
command, its store folder and ``spire serve`` are the product, :mod:`spire_app`, built on the
names exported here.
"""

from typing import TYPE_CHECKING

from spire_core import MissingSourceError
from spire_core.results.schema import SPIRE_KEYS
from spire_runtime.lazy import lazy_attributes

if TYPE_CHECKING:
    from ._source import SourceDocuments, page_html, source_text
    from .embedding import DEFAULT_MODEL, default_embeddings, embed_texts
    from .format import numbered_citations
    from .index import (
        IndexUpdate,
        StageProgress,
        build_index,
        default_storage_context,
        delete_sources,
        html_files,
        load_index,
        page_files,
        read_page,
        store_sources,
        update_index,
    )
    from .parser import SpireFileReader, SpireNodeParser, spire_file_extractor
    from .postprocessor import SpireEvidenceFilter
    from .retriever import SpireRetriever, citations_of, subdocument_of

#: where each public name lives: imported on first use, so ``spire --help`` starts without LlamaIndex
_LAZY = {
    **dict.fromkeys(["SourceDocuments", "page_html", "source_text"], "._source"),
    **dict.fromkeys(["DEFAULT_MODEL", "default_embeddings", "embed_texts"], ".embedding"),
    "numbered_citations": ".format",
    **dict.fromkeys(
        [
            "IndexUpdate",
            "StageProgress",
            "build_index",
            "default_storage_context",
            "delete_sources",
            "html_files",
            "load_index",
            "page_files",
            "read_page",
            "store_sources",
            "update_index",
        ],
        ".index",
    ),
    **dict.fromkeys(["SpireFileReader", "SpireNodeParser", "spire_file_extractor"], ".parser"),
    "SpireEvidenceFilter": ".postprocessor",
    **dict.fromkeys(["SpireRetriever", "citations_of", "subdocument_of"], ".retriever"),
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "DEFAULT_MODEL",
    "SPIRE_KEYS",
    "IndexUpdate",
    "MissingSourceError",
    "SourceDocuments",
    "SpireEvidenceFilter",
    "SpireFileReader",
    "SpireNodeParser",
    "SpireRetriever",
    "StageProgress",
    "build_index",
    "citations_of",
    "default_embeddings",
    "default_storage_context",
    "delete_sources",
    "embed_texts",
    "html_files",
    "load_index",
    "numbered_citations",
    "page_files",
    "page_html",
    "read_page",
    "source_text",
    "spire_file_extractor",
    "store_sources",
    "subdocument_of",
    "update_index",
]
