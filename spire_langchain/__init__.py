"""LangChain adapters for SPIRE: a document transformer, a retriever and an evidence compressor.

SpireLoader           HTML/Markdown files -> one Document per page, markup kept, decoded as declared
SpireTransformer      HTML Documents -> one Document per sentence seed (a text-splitter drop-in)
SpireRetriever        sentence search + document-aware aggregation under a token budget
SpireEvidenceFilter   a document compressor: an LLM keeps only the evidence sentences

The result schema (metadata keys, ids) is :mod:`spire_core.results.schema`, shared with ``spire_llamaindex``.
"""

from spire_core import MissingSourceError

from ._source import citations_of, source_id
from .compressor import SpireEvidenceFilter
from .embeddings import default_embeddings
from .format import numbered_citations
from .loader import SpireLoader
from .retriever import SpireRetriever
from .transformer import SpireTransformer

__all__ = [
    "MissingSourceError",
    "SpireEvidenceFilter",
    "SpireLoader",
    "SpireRetriever",
    "SpireTransformer",
    "citations_of",
    "default_embeddings",
    "numbered_citations",
    "source_id",
]
