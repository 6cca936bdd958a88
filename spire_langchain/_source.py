"""Source identity and parsing shared by the transformer, the retriever and the compressor."""

from __future__ import annotations

import hashlib
import html as html_lib
import re
import uuid
from typing import Any

from langchain_core.documents import Document as LCDocument

from spire_core import Citation, NotHTMLError, Path, SpireError, encode_paths, parse_html, parse_text
from spire_core import Document as SpireDocument
from spire_core.decoding import decode

#: Namespace of the deterministic sentence ids (``uuid5(SPIRE_NAMESPACE, f"{source}#{begin}")``).
SPIRE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/spire-retrieval/spire/langchain")

#: Metadata keys SPIRE writes; stripped from source metadata before it is copied to results.
SPIRE_KEYS = ("spire_source", "spire_paths", "spire_begin", "spire_seeds", "spire_cost", "spire_ids", "citations")

_TAGS = (
    "html|head|body|title|div|p|span|a|ul|ol|li|dl|dt|dd|table|thead|tbody|tr|td|th|caption|h[1-6]|br|hr|pre|code"
    "|section|article|main|header|footer|nav|aside|em|strong|b|i|img|meta|link|script|style|blockquote|figure"
)
_HTML = re.compile(rf"<!doctype\s+html|<(?:{_TAGS})(?:\s[^<>]*)?/?>|</(?:{_TAGS})\s*>", re.I)


def source_id(document: LCDocument) -> str:
    """The id of a source page: ``Document.id``, else ``metadata["source"]``, else a content hash.

    Give pages a stable id (or ``source``) to make re-indexing replace a changed page.
    """
    if document.id:
        return str(document.id)
    source = document.metadata.get("source")
    if source not in (None, ""):
        return str(source)
    return "sha256:" + hashlib.sha256(document.page_content.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def sentence_id(source: str, begin: Path) -> str:
    """Deterministic id of the seed of ``source`` that begins at ``begin``."""
    return str(uuid.uuid5(SPIRE_NAMESPACE, f"{source}#{encode_paths([begin])}"))


def is_html(text: str) -> bool:
    """Whether ``text`` looks like HTML (a doctype or a known HTML tag)."""
    return _HTML.search(text) is not None


def parse_source(content: str, source: str) -> SpireDocument:
    """Parse a page: HTML with :func:`spire_core.parse_html`, other text with :func:`spire_core.parse_text`.

    Binary data (a PDF, an image, NUL bytes, ...) raises :class:`~spire_core.NotHTMLError`
    naming ``source``; other SPIRE errors get a note naming it.
    """
    try:
        if is_html(content):
            return parse_html(content, doc_id=source)
        decode(content[:4096])  # rejects binary data before it is wrapped in paragraphs
        return parse_text(content, doc_id=source)
    except NotHTMLError as err:
        raise NotHTMLError(f"source {source!r}: {err}") from err
    except SpireError as err:
        err.add_note(f"while reading source {source!r}")
        raise


def markup(content: str) -> str:
    """The HTML :func:`parse_source` parses for ``content`` (what a :class:`~spire_core.DocumentCache` loads).

    Plain text becomes the page :func:`spire_core.parse_text` builds, so paths agree.
    """
    if is_html(content):
        return content
    decode(content[:4096])
    blocks = [b.strip() for b in re.split(r"\n\s*\n", content) if b.strip()]
    return "<html><body>" + "".join(f"<p>{html_lib.escape(b)}</p>" for b in blocks) + "</body></html>"


def user_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without the keys SPIRE writes."""
    return {k: v for k, v in metadata.items() if k not in SPIRE_KEYS}


def citations_of(document: LCDocument) -> list[Citation]:
    """The citations a SPIRE result carries in ``metadata["citations"]`` (empty for other documents)."""
    return [Citation.from_dict(c) for c in document.metadata.get("citations") or ()]
