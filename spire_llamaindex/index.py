"""Building and updating a VectorStoreIndex of SPIRE seeds, with the source pages in its docstore."""

from __future__ import annotations

import itertools
import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from llama_index.core.indices.vector_store.base import VectorStoreIndex
from llama_index.core.schema import BaseNode, Document, MetadataMode
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.storage.storage_context import StorageContext
from tqdm.auto import tqdm

from spire_core import SpireError
from spire_core.indexing.swap import plan_swap
from spire_core.options import OnPageError
from spire_core.reading.decoding import DEFAULT_MAX_BYTES, Decoded, decode
from spire_core.reading.files import page_files as core_page_files
from spire_core.reading.files import read_page_file
from spire_runtime.defaults import DEFAULT_BATCH_PAGES
from spire_runtime.pages import page_file, text_page_id

from ._source import log
from .compat import chosen_embed_model, index_embed_model
from .embedding import embed_texts
from .parser import PAGE_SUFFIXES as PAGE_SUFFIXES  # re-exported: the CLI reads it here
from .parser import SpireNodeParser, spire_decoded

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

#: Metadata key of a page's path relative to the folder it was read from.
SOURCE_KEY = "source"


@dataclass
class IndexUpdate:
    """What :func:`update_index` did, by document id."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: pages that could not be read: document id -> one-line reason (their old version is kept)
    failed: dict[str, str] = field(default_factory=dict)
    #: pages with no text (stored, but without nodes)
    empty: list[str] = field(default_factory=list)
    nodes: int = 0


def store_sources(docstore: BaseDocumentStore, documents: Iterable[BaseNode]) -> None:
    """Keep the source pages (their HTML) in ``docstore`` under their ids, for re-rendering at query time."""
    docstore.add_documents(list(documents), allow_update=True, store_text=True)


def default_storage_context() -> StorageContext:
    """LlamaIndex's simple stores, held lighter: vectors as arrays searched as one matrix
    (:class:`~spire_llamaindex.array_store.ArrayVectorStore`), the docstore's nodes and pages as
    compressed JSON (:class:`~spire_llamaindex.json_files.PackedKVStore`), files written entry by
    entry. Same data, same files."""
    from llama_index.core.storage.docstore import SimpleDocumentStore

    from .array_store import ArrayVectorStore
    from .json_files import PackedKVStore

    return StorageContext.from_defaults(docstore=SimpleDocumentStore(PackedKVStore()), vector_store=ArrayVectorStore())


def build_index(
    documents: Sequence[BaseNode],
    *,
    parser: SpireNodeParser | None = None,
    embed_model: BaseEmbedding | None = None,
    storage_context: StorageContext | None = None,
    show_progress: bool = False,
    errors: OnPageError = "raise",
) -> VectorStoreIndex:
    """A new ``VectorStoreIndex`` of the SPIRE seeds of ``documents``, sources stored in its docstore.

    ``embed_model`` defaults to ``Settings.embed_model`` when the application set one, else
    to the packaged all-MiniLM-L6-v2 (offline); ``storage_context`` to
    :func:`default_storage_context`. See :func:`update_index` for ``errors``.
    """
    parser = parser or SpireNodeParser()
    if embed_model is None:
        embed_model = settings_embed_model()
    index = VectorStoreIndex(
        nodes=[],
        storage_context=storage_context or default_storage_context(),
        embed_model=embed_model,
        transformations=[parser],
        show_progress=show_progress,
    )
    if documents:
        update_index(index, documents, parser=parser, show_progress=show_progress, errors=errors)
    return index


def load_index(
    persist_dir: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    index_id: str | None = None,
    parser: SpireNodeParser | None = None,
) -> VectorStoreIndex:
    """Reopen a ``VectorStoreIndex`` persisted with ``index.storage_context.persist(persist_dir)``.

    Queries are embedded with ``embed_model``, else ``Settings.embed_model`` when the application set
    one, else the packaged model (LlamaIndex's ``load_index_from_storage`` would resolve OpenAI's and
    fail without ``llama-index-embeddings-openai``); pass the model the index was built with.
    ``parser`` (default :class:`SpireNodeParser`) splits pages inserted later.
    """
    from llama_index.core import load_index_from_storage

    folder = Path(persist_dir)
    if not folder.is_dir():
        raise SpireError(f"no persisted index at {str(folder)!r} (write one with index.storage_context.persist)")
    index = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(folder)),
        index_id=index_id,
        embed_model=embed_model or settings_embed_model(),
        transformations=[parser or SpireNodeParser()],
    )
    if not isinstance(index, VectorStoreIndex):
        raise SpireError(f"the index persisted at {str(folder)!r} is a {type(index).__name__}, not a VectorStoreIndex")
    return index


def settings_embed_model() -> BaseEmbedding:
    """``Settings.embed_model`` if the application set one, else the packaged all-MiniLM-L6-v2.

    (Reading ``Settings.embed_model`` unset would resolve LlamaIndex's OpenAI default.)
    """
    chosen = chosen_embed_model()  # set by the application, or None: never resolved here
    if chosen is not None:
        return chosen
    from .embedding import default_embeddings

    return default_embeddings()


#: the stages of indexing a batch of pages, in order
STAGES = ("parse", "embed", "write")


class StageProgress:
    """Progress bars of an indexing run, one per stage (:data:`STAGES`), each counting pages
    when they have passed that stage: parsed (or found unchanged, or skipped), embedded, then
    written (committed, when the caller saves each batch). An unchanged page passes every stage
    with its batch. The embed bar also shows the units embedded so far and their rate, updated as
    each model batch is done (:meth:`embedding`): a large page does not sit at ``0/1``."""

    def __init__(self, total: int | None = None, *, disable: bool = False) -> None:
        self.bars = {
            stage: tqdm(total=total, desc=f"{stage:<5}", unit="page", position=n, disable=disable, leave=True)
            for n, stage in enumerate(STAGES)
        }
        self.units = 0
        self._seconds = 0.0  # spent embedding, finished batches
        self._started: float | None = None  # when the batch being embedded started
        self._shown = 0.0

    def advance(self, stage: str, pages: int) -> None:
        self.bars[stage].update(pages)

    def embedding(self, total: int) -> Callable[[int], None]:
        """The ``progress`` callback of :func:`~spire_llamaindex.embedding.embed_texts` for a batch of
        ``total`` texts: the embed bar shows the units done and their rate at most twice a second."""
        self._started = time.monotonic()
        done = 0

        def step(n: int) -> None:
            nonlocal done
            done += n
            now = time.monotonic()
            if done < total and now - self._shown < 0.5:
                return
            self._shown = now
            bar = self.bars["embed"]
            bar.set_postfix_str(f"{self._rate(self.units + done)}, {done}/{total} of this batch", refresh=True)

        return step

    def _rate(self, units: int) -> str:
        seconds = self._seconds + (time.monotonic() - self._started if self._started is not None else 0.0)
        return f"{units} units, {units / seconds:.1f} units/s" if seconds > 0 else f"{units} units"

    def embedded(self, pages: int, units: int) -> None:
        if self._started is not None:
            self._seconds += time.monotonic() - self._started
            self._started = None
        self.units += units
        bar = self.bars["embed"]
        bar.set_postfix_str(self._rate(self.units), refresh=False)
        bar.update(pages)

    def counts(self) -> dict[str, int]:
        """Pages past each stage so far."""
        return {stage: int(bar.n) for stage, bar in self.bars.items()}

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def update_index(
    index: VectorStoreIndex,
    documents: Iterable[BaseNode],
    *,
    parser: SpireNodeParser | None = None,
    show_progress: bool = False,
    errors: OnPageError = "raise",
    batch_pages: int = DEFAULT_BATCH_PAGES,
    progress: StageProgress | None = None,
    on_batch: Callable[[IndexUpdate], None] | None = None,
) -> IndexUpdate:
    """Add new pages and replace changed ones (by document id and hash); unchanged pages are skipped.

    Pages stream through in batches of ``batch_pages``: each batch is parsed, embedded
    (each distinct text once, in length order) and written before the next is read, so
    memory does not grow with the corpus beyond what the index itself holds. After each batch
    that added or replaced a page, ``on_batch(report so far)`` is called (``spire index`` saves
    the store there, so that a killed run resumes after its last finished batch: the pages it
    wrote are then unchanged by hash and skipped). ``show_progress`` shows a bar per stage
    (:class:`StageProgress`; or pass your own as ``progress``). A changed
    page is swapped so that a concurrent query sees its old version or its new one, never
    neither: its new nodes are inserted beside the old ones, its source is replaced in
    place, then the old nodes it no longer has are deleted (with a vector store that keeps
    the text itself, the old nodes are deleted first). A page that cannot be parsed
    raises (``errors="raise"``) or is reported in :attr:`IndexUpdate.failed` with its old
    version kept (``errors="skip"``: any exception, not only a :class:`SpireError`, skips the
    page and the rest are indexed).
    """
    if batch_pages <= 0:
        raise ValueError("batch_pages must be positive")
    parser = parser or SpireNodeParser()
    report = IndexUpdate()
    own = progress is None
    total = len(documents) if isinstance(documents, Sized) else None
    bars = progress or StageProgress(total, disable=not show_progress)
    try:
        pages = iter(cast("Iterable[Document]", documents))  # source pages: Documents
        while batch := list(itertools.islice(pages, batch_pages)):
            if _index_batch(index, batch, parser, report, errors, bars) and on_batch is not None:
                on_batch(report)
            bars.advance("write", len(batch))
    finally:
        if own:
            bars.close()
    return report


def _index_batch(
    index: VectorStoreIndex,
    documents: Sequence[Document],
    parser: SpireNodeParser,
    report: IndexUpdate,
    errors: OnPageError,
    progress: StageProgress,
) -> bool:
    """Index one batch; whether it added or replaced a page."""
    docstore = index.docstore
    parsed: list[tuple[Document, list[BaseNode], bool]] = []
    for given in map(with_page_id, documents):
        try:
            doc = _decoded_by_spire(given)  # raises NotHTMLError for a binary file named like a page
            old = docstore.get_document_hash(doc.node_id)
            if old is not None and old == doc.hash and docstore.document_exists(doc.node_id):
                report.unchanged.append(doc.node_id)
                progress.advance("parse", 1)
                continue
            nodes = parser.get_nodes_from_documents([doc])
        except Exception as err:  # one bad page must not end a bulk run, whatever it raises
            if errors == "raise":
                raise
            reason = str(err) if isinstance(err, SpireError) else f"{type(err).__name__}: {err}"
            report.failed[given.node_id] = reason
            progress.advance("parse", 1)
            continue
        if not nodes:
            report.empty.append(doc.node_id)
        parsed.append((doc, nodes, old is not None))
        progress.advance("parse", 1)
    nodes = [n for _, ns, _ in parsed for n in ns]
    if nodes:  # embed before deleting anything: a failure here leaves the batch's pages as they were
        texts = [node.get_content(metadata_mode=MetadataMode.EMBED) for node in nodes]
        # identical texts (repeated table rows, boilerplate) are embedded once
        distinct = list(dict.fromkeys(texts))
        vectors = embed_texts(index_embed_model(index), distinct, progress=progress.embedding(len(distinct)))
        by_text = dict(zip(distinct, vectors, strict=True))
        for node, text in zip(nodes, texts, strict=True):
            node.embedding = by_text[text]
    progress.embedded(len(documents), len(nodes))
    for doc, page_nodes, existed in parsed:
        _replace_page(index, doc, page_nodes, existed)
        (report.updated if existed else report.added).append(doc.node_id)
    report.nodes += len(nodes)
    return bool(parsed)


def with_page_id(doc: Document) -> Document:
    """``doc``, or a copy whose id is its file's path when its id is a reader's random UUID
    (``SimpleDirectoryReader`` without ``filename_as_id``): relative to the working directory
    when the file is under it, else absolute. A page id a person can read, paste and cite."""
    path = doc.metadata.get("file_path")
    if not isinstance(path, str) or not _is_uuid(doc.node_id):
        return doc
    file = Path(path)
    try:
        page_id = file.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        page_id = file.as_posix()
    named = doc.model_copy()
    named.id_ = page_id
    return named


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _decoded_by_spire(doc: Document) -> Document:
    """``doc``, or a copy holding its file decoded by SPIRE when it is a lossy UTF-8 reading of
    that file (``SimpleDirectoryReader``'s default: :func:`~spire_llamaindex.parser.spire_decoded`)."""
    text = spire_decoded(doc)
    if text is None:
        return doc
    fixed = doc.model_copy(deep=True)
    fixed.set_content(text)
    return fixed


def _replace_page(index: VectorStoreIndex, doc: Document, nodes: Sequence[BaseNode], existed: bool) -> None:
    """Swap one page's nodes and source so that a concurrent query sees the old page or the new one,
    in the order :func:`spire_core.indexing.swap.plan_swap` plans (LangChain's adapter swaps the same way).

    The new nodes go in beside the old ones (a node both pages have is replaced in place), the
    source is replaced in place (it stays readable throughout), then the old nodes the new page
    does not have are deleted. When the old nodes cannot be listed (a vector store that keeps the
    text, so the docstore has no record of them), the old page is deleted first, as before.
    """
    docstore = index.docstore
    info = docstore.get_ref_doc_info(doc.node_id) if existed else None
    if existed and info is None:
        index.delete_ref_doc(doc.node_id, delete_from_docstore=True)
        docstore.delete_document(doc.node_id, raise_error=False)
    swap = plan_swap(info.node_ids if info is not None else (), [n.node_id for n in nodes])
    if nodes:
        index.insert_nodes(list(nodes))
    store_sources(docstore, [doc])
    if swap.delete:
        # the last node of a page takes its docstore entry along: put the source back then
        index.delete_nodes(list(swap.delete), delete_from_docstore=True)
        if not nodes:
            store_sources(docstore, [doc])


def delete_sources(index: VectorStoreIndex, doc_ids: Iterable[str]) -> list[str]:
    """Delete pages (their nodes and their stored source); returns the ids that were present.

    LangChain's ``retriever.delete_sources(ids)`` is the same operation (one name per concept)."""
    removed = []
    for doc_id in doc_ids:
        if index.docstore.document_exists(doc_id) or index.docstore.get_ref_doc_info(doc_id) is not None:
            removed.append(doc_id)
        index.delete_ref_doc(doc_id, delete_from_docstore=True)
        index.docstore.delete_document(doc_id, raise_error=False)
    return removed


def html_files(folder: str | Path) -> list[Path]:
    """Every ``*.html``/``*.htm`` file under ``folder`` (recursively), sorted."""
    root = Path(folder)
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in (".html", ".htm") and p.is_file())


def page_files(folder: str | Path) -> list[Path]:
    """Every HTML and Markdown page (:data:`PAGE_SUFFIXES`) under ``folder`` (recursively), sorted."""
    return core_page_files(folder) if Path(folder).is_dir() else []


def read_page(path: str | Path, root: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """A LlamaIndex ``Document`` for an HTML or Markdown file: id = path relative to ``root`` (POSIX), text = decoded.

    Bytes are decoded as the page declares (BOM, ``<meta charset>``, else UTF-8). Raises the
    :mod:`spire_core.errors` exception (naming the page) for binary or oversized files.
    """
    path, root = Path(path), Path(root)
    doc_id = path.relative_to(root).as_posix()
    return _page_document(doc_id, decode(path.read_bytes(), max_bytes=max_bytes, doc_id=doc_id))


def as_page(page: BaseNode | str | os.PathLike[str]) -> BaseNode:
    """A page given to ``from_documents`` as a LlamaIndex node, as ``spire_langchain`` reads pages:
    a node as it is; a file path (``pathlib.Path``, or a one-line string naming an existing file:
    :func:`spire_runtime.pages.page_file`) read and decoded as the page declares, its id the path as
    given; any other string is the page's text (HTML, Markdown or plain text), its id a hash of it.
    A one-line string ending in ``.html``, ``.md``, ... that names no file raises ``FileNotFoundError``."""
    if isinstance(page, BaseNode):
        return page
    if not isinstance(page, str | os.PathLike):
        raise TypeError(f"a page is a Document, a file path or a page's text, not {type(page).__name__}")
    path = page_file(page)
    if path is None:
        return Document(id_=text_page_id(str(page)), text=str(page))
    return _page_document(str(path), read_page_file(path))


def _page_document(doc_id: str, decoded: Decoded) -> Document:
    if decoded.replaced:
        log.warning("document %r: %d invalid %s byte sequence(s) replaced", doc_id, decoded.replaced, decoded.encoding)
    return Document(
        id_=doc_id,
        text=decoded.text,
        metadata={SOURCE_KEY: doc_id},
        excluded_embed_metadata_keys=[SOURCE_KEY],
    )
