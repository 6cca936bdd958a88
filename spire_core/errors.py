"""Typed exceptions raised by SPIRE. All derive from :class:`SpireError`."""

from __future__ import annotations


class SpireError(Exception):
    """Base class of every error SPIRE raises on purpose.

    Raised with ``doc_id`` (where the failing page is known), the message reads
    ``document 'doc_id': message`` and ``err.doc_id`` is set; the id is given once, where the
    error is raised, never patched in afterwards.
    """

    def __init__(self, message: str, *, doc_id: str | None = None) -> None:
        super().__init__(message if doc_id is None else f"document {doc_id!r}: {message}")
        self.doc_id = doc_id


class NotHTMLError(SpireError, ValueError):
    """The input is not HTML (binary data such as a PDF, an image or an archive)."""


class DocumentTooLargeError(SpireError, ValueError):
    """The input exceeds the configured size limit."""

    def __init__(self, size: int, limit: int, *, doc_id: str | None = None) -> None:
        super().__init__(
            f"document is {size} bytes, over the limit of {limit} bytes (raise max_bytes to accept it)", doc_id=doc_id
        )
        self.size = size
        self.limit = limit


class EmptyDocumentError(SpireError, ValueError):
    """The document has no reader-visible content where a caller needs some."""


class UnknownPathError(SpireError, KeyError):
    """A path does not address a node of the document."""

    def __init__(self, path: tuple[int, ...], doc_id: str | None = None) -> None:
        where = f" in document {doc_id!r}" if doc_id else ""
        super().__init__(f"path {list(path)} is not a node{where}")
        self.path = path
        self.doc_id = doc_id

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class SchemaVersionError(SpireError, ValueError):
    """Metadata written by a newer SPIRE (a ``spire_schema`` version this one does not read)."""


class PathFormatError(SpireError, ValueError):
    """A compact path-set string could not be decoded."""


class SegmentationError(SpireError, RuntimeError):
    """NLTK Punkt gave up on the page's text: NLTK stops a regular expression after 5 s of wall
    clock, which a stalled machine can exceed (texts reach Punkt in pieces that take well under)."""


class BudgetError(SpireError, ValueError):
    """A budget or target size is not a positive number."""


class EvidenceFilterError(SpireError, RuntimeError):
    """The evidence filter's model call failed or its answer held no readable labels."""


class MissingSourceError(SpireError, LookupError):
    """A retrieved unit's source page is not in the framework's docstore (both adapters raise it)."""


class DatabaseURIError(SpireError, ValueError):
    """A database URI is not one the Postgres store helpers can use (``postgresql://...``)."""


class NotSpireIndexError(SpireError, ValueError):
    """An index (or store) whose nodes carry no SPIRE metadata: it was built with another node
    parser or splitter (``SentenceSplitter``), so the retriever could cite nothing from it."""


class UndecodableError(SpireError, ValueError):
    """The page's bytes do not read as text: too many of them are invalid in the encoding it
    declares or that was detected, and no other encoding reads them (mixed encodings, or
    corrupt bytes). Raised instead of indexing text that is mostly U+FFFD."""
