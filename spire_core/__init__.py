"""SPIRE core: structure-preserving retrieval of evidence from HTML (no framework imports)."""

from .aggregate import Hit, Search, Subdocument, aggregate
from .citation import Citation
from .context import HEADERS, HTML, LISTS, NONE, TABLES, TITLE, Policy, Rule, compose, global_context, local_context
from .document import Document, Node, Path, parse_html, parse_text, text_to_html
from .errors import (
    BudgetError,
    DocumentTooLargeError,
    EmptyDocumentError,
    EvidenceFilterError,
    NotHTMLError,
    PathFormatError,
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
from .paths import decode_paths, down, encode_paths, link, prune, subdoc, up
from .render import render
from .sentences import Sentence, sentences
from .size import approx_tokens, model_tokens
from .surface import DocumentCache, Seed, is_html, parse_page, seeds

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
    "Node",
    "NotHTMLError",
    "Path",
    "PathFormatError",
    "Policy",
    "Rule",
    "Search",
    "Seed",
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
    "decode_paths",
    "down",
    "encode_paths",
    "global_context",
    "highlight",
    "is_html",
    "link",
    "local_context",
    "model_tokens",
    "parse_html",
    "parse_labels",
    "parse_page",
    "parse_text",
    "prune",
    "render",
    "seeds",
    "select_evidence",
    "sentences",
    "subdoc",
    "text_to_html",
    "up",
]
