"""Page files are decoded by SPIRE (BOM, ``<meta charset>``, detection), never read as UTF-8
(issue 12, M1): a Latin-1 page without a charset comes out as "Café", through ``spire index``
and through ``SimpleDirectoryReader``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from llama_index.core import Document, SimpleDirectoryReader
from llama_index.core.embeddings import MockEmbedding

from spire_app import load_store
from spire_app.cli import main
from spire_llamaindex import SpireNodeParser
from spire_llamaindex.index import build_index, with_page_id
from spire_llamaindex.parser import spire_decoded, spire_file_extractor

LATIN1 = "<html><head><title>Menu</title></head><body><p>Café au lait costs two euros.</p></body></html>"


@pytest.fixture
def pages(tmp_path: Path) -> Path:
    """A folder holding one Latin-1 page that declares no charset."""
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "cafe.html").write_bytes(LATIN1.encode("latin-1"))
    return folder


def test_spire_index_decodes_a_latin1_page_without_charset(pages: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert main(["index", str(pages), "--store", str(store), "--quiet"]) == 0
    index = load_store(store, embed_model=MockEmbedding(embed_dim=384)).index
    source = index.docstore.get_document("cafe.html")
    assert source is not None and "Café au lait" in source.get_content()
    texts = [n.get_content() for n in index.docstore.docs.values() if n.metadata.get("spire_doc_id") == "cafe.html"]
    assert texts and any("Café au lait costs two euros." in t for t in texts)
    assert not any("\ufffd" in t or "Caf au" in t for t in texts)


def test_build_index_re_reads_a_page_simple_directory_reader_read_as_utf8(pages: Path) -> None:
    [doc] = SimpleDirectoryReader(str(pages)).load_data()
    assert "Caf au lait" in doc.text  # LlamaIndex's own reading: UTF-8, the é dropped
    index = build_index([doc], parser=SpireNodeParser(unit="sentence"), embed_model=MockEmbedding(embed_dim=8))
    page_id = with_page_id(doc).node_id  # the file's path, not the reader's random id
    source = index.docstore.get_document(page_id)
    assert source is not None and "Café au lait" in source.get_content()
    assert any("Café au lait" in n.get_content() for n in index.docstore.docs.values() if n.node_id != page_id)
    again = build_index([doc], embed_model=MockEmbedding(embed_dim=8))
    assert len(again.index_struct.nodes_dict) == 1  # the re-read page is one passage, as its source says


def test_spire_file_extractor_reads_pages_as_spire_decodes_them(pages: Path) -> None:
    [doc] = SimpleDirectoryReader(str(pages), file_extractor=spire_file_extractor()).load_data()
    assert "Café au lait" in doc.text and doc.metadata["file_name"] == "cafe.html"
    assert spire_decoded(doc) is None  # already SPIRE's decoding: nothing to redo


def test_node_parser_warns_about_a_page_read_as_utf8(pages: Path, caplog: pytest.LogCaptureFixture) -> None:
    [doc] = SimpleDirectoryReader(str(pages)).load_data()
    assert spire_decoded(doc) == LATIN1
    with caplog.at_level(logging.WARNING, logger="spire_llamaindex"):
        SpireNodeParser().get_nodes_from_documents([doc])
    assert any("not how the page is encoded" in r.getMessage() for r in caplog.records)
    edited = Document(text=doc.text.replace("two", "three"), metadata=doc.metadata)
    assert spire_decoded(edited) is None  # text changed since it was read: left as given
