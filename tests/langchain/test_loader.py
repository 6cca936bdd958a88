"""SpireLoader: page files as Documents with their markup, decoded as declared, for any splitter and SPIRE."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_text_splitters import RecursiveCharacterTextSplitter

from spire_core import NotHTMLError
from spire_langchain import SpireLoader, SpireRetriever

from .conftest import SMALL_PAGES, KeywordEmbeddings

ANSWER = "An espresso shot takes about 25 to 30 seconds to extract."


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "drinks").mkdir(parents=True)
    for name, html in SMALL_PAGES.items():
        (root / "drinks" / name).write_text(html, encoding="utf-8")
    # Latin-1 bytes, declared by the page: a UTF-8 reading would lose the accents
    latin = "<html><head><meta charset='iso-8859-1'><title>Café</title></head><body><p>Café au lait.</p></body></html>"
    (root / "cafe.html").write_bytes(latin.encode("latin-1"))
    (root / "notes.md").write_text("# Notes\n\n- Grind *fresh* beans.\n", encoding="utf-8")
    (root / "todo.txt").write_text("not a page", encoding="utf-8")
    return root


def test_pages_keep_their_markup_and_their_declared_encoding(site: Path) -> None:
    docs = SpireLoader(site).load()
    by_source = {d.metadata["source"]: d.page_content for d in docs}
    base = site.as_posix()
    assert sorted(by_source) == sorted(
        [f"{base}/cafe.html", f"{base}/notes.md", *(f"{base}/drinks/{name}" for name in SMALL_PAGES)]
    )
    assert "<p>Café au lait.</p>" in by_source[f"{base}/cafe.html"]  # decoded as Latin-1, tags kept
    assert "\ufffd" not in by_source[f"{base}/cafe.html"]
    assert f"<h2>Espresso</h2><p>{ANSWER}</p>" in by_source[f"{base}/drinks/coffee.html"]
    assert by_source[f"{base}/notes.md"].startswith("# Notes\n\n- Grind *fresh* beans.")
    only_html = SpireLoader([site / "drinks", site / "notes.md"], glob="*.html").load()
    assert [Path(d.metadata["source"]).name for d in only_html] == [*sorted(SMALL_PAGES), "notes.md"]


def test_loaded_pages_feed_a_spire_retriever_and_any_splitter(site: Path) -> None:
    loader = SpireLoader(site)
    retriever = SpireRetriever.from_documents(loader.load(), KeywordEmbeddings())
    docs = retriever.invoke("How long does an espresso shot take?")
    assert docs[0].metadata["spire_doc_id"] == f"{site.as_posix()}/drinks/coffee.html"
    assert ANSWER in docs[0].page_content
    chunks = RecursiveCharacterTextSplitter(chunk_size=200, chunk_overlap=0).split_documents(loader.lazy_load())
    assert any(ANSWER in c.page_content and c.metadata["source"].endswith("coffee.html") for c in chunks)


def test_a_binary_page_is_named_or_skipped(site: Path, caplog: pytest.LogCaptureFixture) -> None:
    (site / "photo.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    with pytest.raises(NotHTMLError, match=r"photo\.html"):
        SpireLoader(site).load()
    docs = SpireLoader(site, errors="skip").load()
    assert len(docs) == 2 + len(SMALL_PAGES) and "photo.html" in caplog.text
