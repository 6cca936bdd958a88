"""What the frameworks' page metadata says of a page (LlamaIndex readers, LangChain loaders)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spire_core.reading.files import PAGE_SUFFIXES
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


def page_file(page: str | os.PathLike[str]) -> Path | None:
    """The file a page given to ``from_documents`` names, or None when ``page`` is the page's text.

    A path (``pathlib.Path``, any ``os.PathLike``) names a file; a string does when it is one
    line without ``<``, at most 4,096 characters, naming an existing file (any other string is
    HTML, Markdown or plain text). A one-line string ending in a page suffix (``.html``,
    ``.md``, ...) that names no file raises ``FileNotFoundError``: it is not indexed as a page.
    Both adapters read pages given this way (the file through
    :func:`spire_core.reading.files.read_page_file`, its path as given being the page id).
    """
    if not isinstance(page, str):
        return Path(page)
    if "\n" in page or "<" in page or len(page) > 4096:
        return None
    try:
        if Path(page).is_file():
            return Path(page)
    except OSError:  # a name the file system refuses (too long, bad bytes)
        return None
    if page.strip().lower().endswith(PAGE_SUFFIXES):  # "x.html": a page file's name, not a page
        raise FileNotFoundError(f"no such page file: {page!r} (a string naming a page file is read as that file)")
    return None


def text_page_id(text: str) -> str:
    """The id of a page given as its text, with no id of its own: ``sha256:`` and a hash of the text
    (both adapters: the same page text is the same page)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
