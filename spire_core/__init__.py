"""SPIRE core: structure-preserving retrieval of evidence from HTML (no framework imports)."""

from spire_core.context import (
    HEADERS,
    HTML,
    LISTS,
    NONE,
    TABLES,
    TITLE,
    Policy,
    Rule,
    compose,
    global_context,
    policy_named,
)
from spire_core.document.paths import decode_paths, down, encode_paths, link, prune, subdoc, up
from spire_core.document.render import render
from spire_core.document.tree import Document, Node, Path
from spire_core.errors import (
    BudgetError,
    DatabaseURIError,
    DocumentTooLargeError,
    EmptyDocumentError,
    EvidenceFilterError,
    MissingSourceError,
    NotHTMLError,
    NotSpireIndexError,
    PathFormatError,
    SchemaVersionError,
    SegmentationError,
    SpireError,
    UndecodableError,
    UnknownPathError,
)
from spire_core.indexing.passages import Passage, passages
from spire_core.indexing.units import DocumentCache, Seed, seeds
from spire_core.options import Cut, QueryOptions
from spire_core.pipeline import aretrieve, retrieve, run_query
from spire_core.query.aggregate import aggregate, own_paths
from spire_core.query.evidence import DEFAULT_DEADLINE, Evidence, aselect_evidence, select_evidence
from spire_core.query.lexical import LexicalIndex
from spire_core.query.local import local_context
from spire_core.query.passages import PassageHit
from spire_core.query.strength import rank_evidence, ranked_evidence
from spire_core.reading.markdown import is_markdown, markdown_to_html
from spire_core.reading.parse import (
    declared_kind,
    is_html,
    parse_html,
    parse_markdown,
    parse_page,
    parse_text,
    text_to_html,
)
from spire_core.reading.sentences import Sentence, sentences
from spire_core.results.highlight import highlight
from spire_core.results.schema import from_metadata, subdocuments, to_metadata, unit_id
from spire_core.size import approx_tokens, model_tokens
from spire_core.values import Citation, Hit, Search, Subdocument

__all__ = [
    "DEFAULT_DEADLINE",
    "HEADERS",
    "HTML",
    "LISTS",
    "NONE",
    "TABLES",
    "TITLE",
    "BudgetError",
    "Citation",
    "Cut",
    "DatabaseURIError",
    "Document",
    "DocumentCache",
    "DocumentTooLargeError",
    "EmptyDocumentError",
    "Evidence",
    "EvidenceFilterError",
    "Hit",
    "LexicalIndex",
    "MissingSourceError",
    "Node",
    "NotHTMLError",
    "NotSpireIndexError",
    "Passage",
    "PassageHit",
    "Path",
    "PathFormatError",
    "Policy",
    "QueryOptions",
    "Rule",
    "SchemaVersionError",
    "Search",
    "Seed",
    "SegmentationError",
    "Sentence",
    "SpireError",
    "Subdocument",
    "UndecodableError",
    "UnknownPathError",
    "aggregate",
    "approx_tokens",
    "aretrieve",
    "aselect_evidence",
    "compose",
    "declared_kind",
    "decode_paths",
    "down",
    "encode_paths",
    "from_metadata",
    "global_context",
    "highlight",
    "is_html",
    "is_markdown",
    "link",
    "local_context",
    "markdown_to_html",
    "model_tokens",
    "own_paths",
    "parse_html",
    "parse_markdown",
    "parse_page",
    "parse_text",
    "passages",
    "policy_named",
    "prune",
    "rank_evidence",
    "ranked_evidence",
    "render",
    "retrieve",
    "run_query",
    "seeds",
    "select_evidence",
    "sentences",
    "subdoc",
    "subdocuments",
    "text_to_html",
    "to_metadata",
    "unit_id",
    "up",
]
