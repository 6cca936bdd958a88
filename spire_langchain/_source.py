"""Source identity and the one docstore loader shared by the transformer, the retriever and the compressor."""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.documents import Document as LCDocument
from langchain_core.stores import BaseStore

from spire_core import Citation, MissingSourceError
from spire_core.results.schema import citations_from
from spire_runtime.pages import text_page_id


def source_id(document: LCDocument) -> str:
    """The id of a source page: ``Document.id``, else ``metadata["source"]``, else a content hash.

    Give pages a stable id (or ``source``) to make re-indexing replace a changed page.
    """
    if document.id:
        return str(document.id)
    source = document.metadata.get("source")
    if source not in (None, ""):
        return str(source)
    return text_page_id(document.page_content)


def page_loader(docstore: BaseStore[str, LCDocument]) -> Callable[[str], str]:
    """``doc_id -> the page's stored HTML``; raises :class:`spire_core.MissingSourceError` when it is not stored."""

    def load(doc_id: str) -> str:
        found = docstore.mget([doc_id])[0]
        if found is None:
            raise MissingSourceError(
                "the source page is not in the docstore: index pages with SpireRetriever.add_documents "
                "(or from_documents), or mset the source Documents under their ids",
                doc_id=doc_id,
            )
        return found.page_content

    return load


def citations_of(document: LCDocument) -> list[Citation]:
    """The citations a SPIRE result carries in ``metadata["spire_citations"]`` (empty for other documents)."""
    return citations_from(document.metadata)
