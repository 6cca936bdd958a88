"""``SpireLoader``: HTML and Markdown files as LangChain ``Document``\\ s, markup kept, decoded as declared."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document as LCDocument

from spire_core import SpireError
from spire_core.options import OnPageError
from spire_core.reading.decoding import DEFAULT_MAX_BYTES
from spire_core.reading.files import page_files, read_page_file

log = logging.getLogger("spire_langchain.loader")

#: what ``SpireLoader`` reads: a file or folder, or several
Paths = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


class SpireLoader(BaseLoader):
    """Load HTML and Markdown page files, one ``Document`` per page, for any splitter or a SPIRE retriever.

    ``paths``: files and folders (a folder: its ``.html``, ``.htm``, ``.md`` and ``.markdown``
    files, recursively, or those matching ``glob``, e.g. ``"**/*.html"``). ``page_content`` is
    the file's text *with its markup* (what :class:`SpireTransformer` reads structure from),
    decoded as the page declares (BOM, ``<meta charset>``, else UTF-8 or a detected legacy
    encoding: a Latin-1 page keeps its accents). ``metadata["source"]`` is the file's path as
    found (``folder/relative/path.html``): the page id SPIRE cites. A binary or oversized file
    raises the :mod:`spire_core.errors` exception naming it (``errors="raise"``), or is logged
    and left out (``errors="skip"``).
    """

    def __init__(
        self,
        paths: Paths,
        *,
        glob: str | None = None,
        errors: OnPageError = "raise",
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.paths = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        self.glob = glob
        self.errors = errors
        self.max_bytes = max_bytes

    def lazy_load(self) -> Iterator[LCDocument]:
        """The pages one by one, in path order within each folder."""
        for given in self.paths:
            for file in page_files(Path(given), self.glob):
                page = self._read(file)
                if page is not None:
                    yield page

    def _read(self, file: Path) -> LCDocument | None:
        source = file.as_posix()
        try:
            decoded = read_page_file(file, max_bytes=self.max_bytes, doc_id=source)
        except SpireError as err:
            if self.errors == "raise":
                raise
            log.error("skipped page %r: %s", source, err)
            return None
        for warning in decoded.warnings:
            log.warning("page %r: %s", source, warning)
        return LCDocument(page_content=decoded.text, metadata={"source": source})
