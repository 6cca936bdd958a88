"""SPIRE core: structure-preserving retrieval of evidence from HTML (no framework imports)."""

from .aggregate import Hit, Search, Subdocument, aggregate
from .citation import Citation
from .context import HEADERS, HTML, LISTS, NONE, TABLES, TITLE, Policy, Rule, compose, global_context, policy_named
from .document import Document, Node, Path
from .errors import (
    BudgetError,
    DocumentTooLargeError,
    EmptyDocumentError,
    EvidenceFilterError,
    MissingSourceError,
    NotHTMLError,
    PathFormatError,
    SegmentationError,
    SpireError,
    UnknownPathError,
)
from .evidence import (
    Evidence,
    Selection,
    View,
    aselect_evidence,
    build_prompt,
    build_views,
    parse_labels,
    select_evidence,
)
from .highlight import highlight
from .local import local_context
from .markdown import is_markdown, markdown_to_html
from .parse import declared_kind, is_html, parse_html, parse_markdown, parse_page, parse_text, text_to_html
from .passages import Passage, PassageHit, passages
from .paths import decode_paths, down, encode_paths, link, prune, subdoc, up
from .render import render
from .results import from_metadata, subdocuments, to_metadata, unit_id
from .sentences import Sentence, sentences
from .size import approx_tokens, model_tokens
from .surface import DocumentCache, Seed, seeds

__all__ = [
    "HEADERS",
    "HTML",
    "LISTS",
    "NONE",
    "TABLES",
    "TITLE",
    "BudgetError",
    "Citation",
    "Document",
    "DocumentCache",
    "DocumentTooLargeError",
    "EmptyDocumentError",
    "Evidence",
    "EvidenceFilterError",
    "Hit",
    "MissingSourceError",
    "Node",
    "NotHTMLError",
    "Passage",
    "PassageHit",
    "Path",
    "PathFormatError",
    "Policy",
    "Rule",
    "Search",
    "Seed",
    "SegmentationError",
    "Selection",
    "Sentence",
    "SpireError",
    "Subdocument",
    "UnknownPathError",
    "View",
    "aggregate",
    "approx_tokens",
    "aselect_evidence",
    "build_prompt",
    "build_views",
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
    "parse_html",
    "parse_labels",
    "parse_markdown",
    "parse_page",
    "parse_text",
    "passages",
    "policy_named",
    "prune",
    "render",
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
