"""Source identity and parsing shared by the transformer, the retriever and the compressor."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from langchain_core.documents import Document as LCDocument

from spire_core import Citation, Path, encode_paths

#: Namespace of the deterministic sentence ids (``uuid5(SPIRE_NAMESPACE, f"{source}#{begin}")``).
SPIRE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/spire-retrieval/spire/langchain")

#: Metadata keys SPIRE writes; stripped from source metadata before it is copied to results.
SPIRE_KEYS = ("spire_source", "spire_paths", "spire_begin", "spire_seeds", "spire_cost", "spire_ids", "citations")

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


def user_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` without the keys SPIRE writes."""
    return {k: v for k, v in metadata.items() if k not in SPIRE_KEYS}


def citations_of(document: LCDocument) -> list[Citation]:
    """The citations a SPIRE result carries in ``metadata["citations"]`` (empty for other documents)."""
    return [Citation.from_dict(c) for c in document.metadata.get("citations") or ()]
