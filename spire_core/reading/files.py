"""Page files: which files under a folder are pages, and a page file's text as the page declares it."""

from __future__ import annotations

from pathlib import Path

from spire_core.errors import DocumentTooLargeError
from spire_core.reading.decoding import DEFAULT_MAX_BYTES, Decoded, decode

#: The suffixes of the files read as pages (HTML and Markdown), in any case.
PAGE_SUFFIXES = (".html", ".htm", ".md", ".markdown")


def page_files(root: str | Path, glob: str | None = None) -> list[Path]:
    """The page files under ``root``, sorted: every :data:`PAGE_SUFFIXES` file (recursively), or
    every file matching ``glob`` (``Path.glob``: ``"**/*.html"``); ``root`` itself when it is a file."""
    folder = Path(root)
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        raise FileNotFoundError(f"no such file or folder: {str(folder)!r}")
    if glob is None:
        return sorted(p for p in folder.rglob("*") if p.suffix.lower() in PAGE_SUFFIXES and p.is_file())
    return sorted(p for p in folder.glob(glob) if p.is_file())


def read_page_file(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, doc_id: str | None = None) -> Decoded:
    """The text of page file ``path``, decoded as the page declares (:func:`~spire_core.reading.decoding.decode`:
    BOM, ``<meta charset>``, else UTF-8 or a detected encoding). Raises :class:`DocumentTooLargeError`
    before reading a file over ``max_bytes`` and :class:`NotHTMLError` for binary data, naming ``doc_id``
    (default: the path)."""
    file = Path(path)
    name = str(file) if doc_id is None else doc_id
    size = file.stat().st_size
    if size > max_bytes:
        raise DocumentTooLargeError(size, max_bytes, doc_id=name)
    return decode(file.read_bytes(), max_bytes=max_bytes, doc_id=name)
