"""Source pages: identity, parsing and the parsed-document cache shared by parser, retriever and filter."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from threading import Lock
from typing import Any, Protocol
from weakref import WeakKeyDictionary

from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.storage.docstore.types import BaseDocumentStore

from spire_core import (
    Document,
    DocumentCache,
    Hit,
    MissingSourceError,
    markdown_to_html,
    parse_page,
    parse_text,
    text_to_html,
)
from spire_core.context import HTML, Policy
from spire_core.document.tree import LRU
from spire_core.pipeline import LexicalSearch
from spire_core.query.lexical import Lexicon
from spire_core.reading.decoding import DEFAULT_MAX_BYTES, decode
from spire_core.reading.parse import page_kind
from spire_runtime.pages import declared_kind_of

log = logging.getLogger("spire_llamaindex")

_MIME_KEYS = ("file_type", "mime_type", "mimetype", "content_type")


def says_plain_text(metadata: Mapping[str, Any] | None) -> bool:
    """Whether a source's metadata (``file_type``, ``mime_type``, ...) says ``text/plain``."""
    return any(str((metadata or {}).get(key) or "").lower().startswith("text/plain") for key in _MIME_KEYS)


def is_plain_text(text: str, metadata: Mapping[str, Any] | None = None) -> bool:
    """Whether a source is read as plain text: its metadata says ``text/plain``, or it is
    neither HTML nor Markdown (:func:`spire_core.parse.page_kind`, what :func:`spire_core.parse_page` applies)."""
    return says_plain_text(metadata) or page_kind(text) == "text"


def page_html(text: str, metadata: Mapping[str, Any] | None = None) -> str:
    """The HTML a source page is parsed as (Markdown and plain text converted), e.g. to highlight it."""
    if is_plain_text(text, metadata):
        return text_to_html(text)
    return markdown_to_html(text) if page_kind(text) == "markdown" else text


def parse_source(
    text: str,
    doc_id: str,
    metadata: Mapping[str, Any] | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    boilerplate: bool = True,
) -> Document:
    """Parse a source page with :func:`spire_core.parse_page` (HTML, else paragraphs of plain
    text), or with ``parse_text`` when its metadata says ``text/plain``.

    Raises the :class:`~spire_core.SpireError` subclass of the failure (``NotHTMLError``,
    ``DocumentTooLargeError``, ...) with the document id in its message and ``doc_id`` attribute.
    """
    if says_plain_text(metadata):
        decode(text, max_bytes=max_bytes, doc_id=doc_id)  # binary data and oversized input fail here
        return parse_text(text, doc_id=doc_id)
    return parse_page(
        text, doc_id=doc_id, max_bytes=max_bytes, boilerplate=boilerplate, declared=declared_kind_of(metadata or {})
    )


def source_text(node: BaseNode) -> str:
    """The stored text of a source node (the page's HTML)."""
    text = getattr(node, "text", None)
    return text if isinstance(text, str) else node.get_content(metadata_mode=MetadataMode.NONE)


class StoreBackend(Protocol):
    """What a docstore's database adds to :class:`SourceDocuments` (:func:`register_backend`;
    :func:`spire_llamaindex.postgres.page_store` registers its own)."""

    def read_hashes(self, doc_ids: Iterable[str], docstore: BaseDocumentStore) -> dict[str, str] | None:
        """``doc_id -> hash`` of those of ``doc_ids`` that are stored, in one query (None: not available)."""
        ...

    def lexicon(
        self, versions: Callable[[], Mapping[str, str | None]], pages: Callable[[str], Document], policy: Policy
    ) -> Lexicon:
        """The :class:`~spire_core.query.lexical.Lexicon` over the docstore's pages (``versions``, ``pages``)."""
        ...


_BACKENDS: WeakKeyDictionary[Any, StoreBackend] = WeakKeyDictionary()


def register_backend(docstore: BaseDocumentStore, backend: StoreBackend) -> None:
    """Have the :class:`SourceDocuments` of ``docstore`` use ``backend``."""
    _BACKENDS[docstore] = backend


def backend_of(docstore: BaseDocumentStore) -> StoreBackend | None:
    """The backend registered for ``docstore`` (None: none, or not weakly referable)."""
    try:
        return _BACKENDS.get(docstore)
    except TypeError:
        return None


class SourceDocuments:
    """Source pages by document id: read from a LlamaIndex docstore, parsed once (bounded LRU).

    A page whose hash in the docstore changed since it was parsed is parsed again.
    """

    def __init__(
        self,
        docstore: BaseDocumentStore,
        *,
        maxsize: int = 64,
        boilerplate: bool = True,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.docstore = docstore
        self.cache = DocumentCache(
            self._load,
            maxsize=maxsize,
            boilerplate=boilerplate,
            max_bytes=max_bytes,
        )
        self._hashes: dict[str, str | None] = {}
        #: doc id -> (hash, parse, its source node without the text) last served after both
        #: hash checks (as many as the cache holds)
        self._verified: LRU[str, tuple[str | None, Document, BaseNode | None]] = LRU(maxsize)
        #: doc id -> (hash, source node without the text) read by the last parse not yet served
        self._loaded: dict[str, tuple[str, BaseNode]] = {}
        self._lock = Lock()

    def versions(self) -> dict[str, str | None]:
        """The stored pages and their hashes: what a :class:`Lexicon` follows.

        A docstore that records its units' pages (``ref_doc_info``) lists those with units. Under
        a vector store that keeps the units' text (pgvector) the docstore has no record of the
        units and holds the source pages alone: every document it holds is a page (listed by
        hash, LlamaIndex's one call for them all: of two pages with the same text and metadata,
        one is left out of the lexical index and found by the dense ranking alone)."""
        pages = self.docstore.get_all_ref_doc_info()
        if pages:
            return {page: self._hash(page) for page in pages}
        return {page: digest for digest, page in self.docstore.get_all_document_hashes().items()}

    def lexicon(self, policy: Policy = HTML) -> Lexicon:
        """A :class:`~spire_core.query.lexical.Lexicon` over these pages, rendered by ``policy``: over
        a :func:`~spire_llamaindex.postgres.page_store`, a
        :class:`~spire_llamaindex.postgres.PostgresLexicon` (it starts from the index saved in Postgres)."""
        backend = backend_of(self.docstore)
        if backend is not None:
            return backend.lexicon(self.versions, self, policy)
        return Lexicon(self.versions, self, policy=policy)

    def __contains__(self, doc_id: object) -> bool:
        if not isinstance(doc_id, str):
            return False
        try:
            return self.docstore.document_exists(doc_id)
        except KeyError:  # removed while it was read (see _hash)
            return False

    def hashes(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """The docstore's hashes of those of ``doc_ids`` that are stored, read in one query where
        the docstore allows it (a :func:`~spire_llamaindex.postgres.page_store`); else empty (each
        page's hash is read when the page is asked for)."""
        backend = backend_of(self.docstore)
        found = backend.read_hashes(doc_ids, self.docstore) if backend is not None else None
        return found or {}

    def _hash(self, doc_id: str) -> str | None:
        """The docstore's hash of ``doc_id``, None when it is not stored. LlamaIndex's in-memory
        key-value store tests for a key, then reads it: a page removed between the two raises
        ``KeyError``, which is read as what it means, the page is gone."""
        try:
            return self.docstore.get_document_hash(doc_id)
        except KeyError:
            return None

    def __call__(self, doc_id: str, expected_hash: str | None = None, *, current: str | None = None) -> Document:
        """The parsed page ``doc_id``; raises :class:`MissingSourceError` when it is not stored.

        ``expected_hash`` (the page hash a unit node was made from) serves the held parse of
        that version without asking the docstore (the query path's per-hit round trips).
        ``current`` is the docstore's hash of the page read by the caller a moment ago (one query
        for the pages of a question's lexical hits: :meth:`hashes`), taken as this call's read.

        Otherwise the docstore's hash is read, once: a parse held for that very hash is served
        as it is (it was verified to be of that version when it was parsed, and nothing is read
        now that could be of another). Only a page that is parsed (or whose parse is not held
        for the current hash) is checked a second time after its read, and kept only if the
        hash did not move meanwhile: a page replaced during its read is never cached under
        either version.
        """
        if expected_hash is not None:
            held = self._held(doc_id)
            if held is not None and held[0] == expected_hash:
                return held[1]
        if current is None:
            current = self._hash(doc_id)
        if current is not None:
            held = self._held(doc_id)
            if held is not None and held[0] == current:
                return held[1]
        if self._hashes.get(doc_id, current) != current:
            self.cache.invalidate(doc_id)
        self._hashes[doc_id] = current
        doc = self.cache(doc_id)
        if self._hash(doc_id) != current:
            # replaced while it was read: what was parsed may be either version, so it is
            # not kept under this hash (a later return to it would serve the other text)
            self.cache.invalidate(doc_id)
            self._hashes.pop(doc_id, None)
        else:
            with self._lock:
                loaded = self._loaded.pop(doc_id, None)
                node = loaded[1] if loaded is not None and loaded[0] == current else None
                held = self._verified.get(doc_id)
                if node is None and held is not None and held[1] is doc:
                    node = held[2]
                self._verified[doc_id] = (current, doc, node)
        return doc

    def source(self, doc_id: str) -> tuple[BaseNode | None, str | None]:
        """The source node of ``doc_id`` (its text left out) and its hash, for a result node: those
        of the parse last served while it is held (the version the result was rendered from),
        else the docstore's (None for a page that is not stored)."""
        held = self._held(doc_id)
        if held is not None and held[2] is not None:
            return held[2], held[0]
        try:
            node: BaseNode | None = self.node(doc_id)
        except MissingSourceError:
            node = None
        return node, self._hash(doc_id)

    def _held(self, doc_id: str) -> tuple[str | None, Document, BaseNode | None] | None:
        """The entry last served for ``doc_id`` (hash, parse, source node) while its parse is still cached."""
        with self._lock:
            held = self._verified.get(doc_id)
        return held if held is not None and self.cache.cached(doc_id) is held[1] else None

    def node(self, doc_id: str) -> BaseNode:
        """The stored source node (a LlamaIndex ``Document``) of ``doc_id``."""
        try:
            node = self.docstore.get_document(doc_id, raise_error=False)
        except KeyError:  # removed while it was read (see _hash)
            node = None
        if node is None:
            raise MissingSourceError(
                "the source page is not in the docstore: store the source Documents "
                "(SpireRetriever.from_documents and spire_llamaindex.build_index do; with an "
                "IngestionPipeline pass docstore=... and give the retriever that docstore)",
                doc_id=doc_id,
            )
        return node

    def _load(self, doc_id: str) -> str:
        node = self.node(doc_id)
        text = source_text(node)
        card = node.model_copy()  # shallow: what a result node takes from its source, not the page
        card.set_content("")
        with self._lock:  # kept for the version it is: a concurrent read of another one is told apart
            self._loaded[doc_id] = (node.hash, card)
        # parse_page (the cache's parser) tells HTML, Markdown and plain text apart by itself
        return text_to_html(text) if says_plain_text(node.metadata) else text


class QueryPages:
    """The page lookup of one question (what :func:`spire_core.pipeline.retrieve` calls
    ``pages``): :class:`SourceDocuments`, with the pages of each batch of lexical hits asked for
    their hashes in one query (:meth:`lexical`) instead of one round trip per page.

    A hash read so is used once, by its page's next lookup (the pipeline looks up the pages of a
    batch of lexical hits right after the batch, and pins each page of a try at its first
    lookup): it stands for the read that lookup would have made a moment later, so the page
    served is the version stored at that moment, and a parse is served only when it is of that
    version (:meth:`SourceDocuments.__call__`), as before. Each batch replaces the hashes of the
    last, and a new try of the query (:meth:`fresh`) forgets them: no hash outlives its try.
    """

    def __init__(self, sources: SourceDocuments) -> None:
        self.sources = sources
        self._read: dict[str, str] = {}

    def __call__(self, doc_id: str, expected_hash: str | None = None) -> Document:
        return self.sources(doc_id, expected_hash, current=self._read.pop(doc_id, None))

    def fresh(self) -> None:
        """Forget the hashes read (a new try of the query starts)."""
        self._read = {}

    def lexical(self, search: LexicalSearch) -> LexicalSearch:
        """``search`` whose hits' pages are asked for their hashes at once."""

        def hits(query: str, n: int) -> Sequence[Hit]:
            found = search(query, n)
            self._read = self.sources.hashes({hit.doc_id for hit in found})
            return found

        return hits
