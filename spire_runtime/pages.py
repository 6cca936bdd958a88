"""What the frameworks' page metadata says of a page (LlamaIndex readers, LangChain loaders)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spire_core.reading.parse import PageKind, declared_kind

#: Metadata keys naming a page's media type, then its file, in the order they are trusted.
TYPE_KEYS = ("mime_type", "file_type", "content_type")
NAME_KEYS = ("file_name", "file_path", "filename", "source")


def declared_kind_of(metadata: Mapping[str, Any]) -> PageKind | None:
    """What a page's metadata declares it to be: a media type key, else a file name's suffix."""
    for key in TYPE_KEYS:
        kind = declared_kind(media_type=_str(metadata.get(key)))
        if kind is not None:
            return kind
    for key in NAME_KEYS:
        kind = declared_kind(file_name=_str(metadata.get(key)))
        if kind is not None:
            return kind
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
