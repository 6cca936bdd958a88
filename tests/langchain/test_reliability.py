"""Reliability of the LangChain adapter (issue 12): bulk indexing skips a failing page."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.documents import Document

from spire_langchain import SpireRetriever, SpireTransformer

from .conftest import KeywordEmbeddings

PAGE = "<title>{0}</title><p>{0} is a page. It has two sentences.</p>"


def test_add_documents_skips_a_failing_page_reports_it_once_and_indexes_the_rest(
    keyword_embeddings: KeywordEmbeddings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = SpireTransformer.split

    def flaky(self: SpireTransformer, document: Document, *args: Any, **kwargs: Any) -> Any:
        if document.id == "bad.html":
            raise KeyError("a bug, not a SpireError")
        return real(self, document, *args, **kwargs)

    retriever = SpireRetriever.from_documents([], keyword_embeddings)
    monkeypatch.setattr(SpireTransformer, "split", flaky)
    pages = [Document(page_content=PAGE.format(name), id=f"{name}.html") for name in ("alpha", "bad", "gamma")]
    with caplog.at_level(logging.ERROR, logger="spire_langchain"):
        added = retriever.add_documents(pages, errors="skip")
    expected = [str(piece.id) for page in (pages[0], pages[2]) for piece in real(retriever.transformer, page)]
    assert added == expected and expected
    skipped = [r for r in caplog.records if "bad.html" in r.getMessage()]
    assert len(skipped) == 1 and "KeyError" in skipped[0].getMessage()
    assert retriever.docstore.mget(["alpha.html", "bad.html", "gamma.html"])[1] is None
    with pytest.raises(KeyError):
        retriever.add_documents(pages)
