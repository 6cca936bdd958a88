"""SpireNodeParser: one node per seed, identity in hidden metadata, deterministic ids, clear errors."""

from __future__ import annotations

import logging
import pickle

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import Document, MetadataMode, NodeRelationship
from llama_index.core.storage.docstore import SimpleDocumentStore

from spire_core import (
    NONE,
    DocumentTooLargeError,
    MissingSourceError,
    NotHTMLError,
    decode_paths,
    encode_paths,
    global_context,
    parse_html,
    parse_text,
    render,
    seeds,
    text_to_html,
)
from spire_core.results.schema import members_of
from spire_llamaindex import SPIRE_KEYS, SourceDocuments, SpireNodeParser, read_page, store_sources
from spire_llamaindex._source import is_plain_text

from .conftest import EXAMPLE_PAGES

PAGE = """<html><head><title>Widgets</title></head><body>
<h1>Widget guide</h1>
<h2>Sizes</h2>
<p>Small widgets weigh two grams. Large widgets weigh a kilogram.</p>
<h2>Colours</h2>
<ul><li>Blue widgets<ul><li>They glow at night.</li></ul></li></ul>
</body></html>"""


def wal() -> Document:
    return read_page(EXAMPLE_PAGES / "postgresql-wal.html", EXAMPLE_PAGES)


def test_one_node_per_seed_with_hidden_identity() -> None:
    doc = wal()
    nodes = SpireNodeParser().get_nodes_from_documents([doc])
    expected = seeds(parse_html(doc.text, doc_id=doc.id_), unit="passage")  # the default unit
    assert len(nodes) == len(expected) > 20
    for node, seed in zip(nodes, expected, strict=True):
        assert node.get_content() == seed.text
        meta = node.metadata
        assert meta["spire_doc_id"] == "postgresql-wal.html"
        assert decode_paths(meta["spire_paths"]) == seed.paths
        assert members_of(meta, seed.paths) == seed.members  # the sentences a hit cites
        assert meta["spire_begin"] == encode_paths([seed.begin])
        assert meta["source"] == "postgresql-wal.html"  # the source document's metadata is kept
        assert node.ref_doc_id == doc.id_
        assert node.relationships[NodeRelationship.SOURCE].node_id == doc.id_
        for mode in (MetadataMode.EMBED, MetadataMode.LLM):
            shown = node.get_content(metadata_mode=mode)
            assert "spire_" not in shown and seed.text in shown
        assert "source: postgresql-wal.html" not in node.get_content(metadata_mode=MetadataMode.EMBED)
        assert "source: postgresql-wal.html" in node.get_content(metadata_mode=MetadataMode.LLM)
    assert len({n.node_id for n in nodes}) == len(nodes)
    previous = nodes[1].relationships[NodeRelationship.PREVIOUS]
    assert previous.node_id == nodes[0].node_id
    # a link carries the neighbour's user metadata, not its path sets (its own node has them)
    assert previous.metadata == {"source": "postgresql-wal.html"}
    assert nodes[0].relationships[NodeRelationship.NEXT].node_id == nodes[1].node_id


def test_node_ids_are_deterministic() -> None:
    first = [n.node_id for n in SpireNodeParser().get_nodes_from_documents([wal()])]
    again = [n.node_id for n in SpireNodeParser().get_nodes_from_documents([wal()])]
    assert first == again
    other = Document(id_="copy.html", text=wal().text)
    assert not set(first) & {n.node_id for n in SpireNodeParser().get_nodes_from_documents([other])}


def test_global_context_in_the_text_and_the_options() -> None:
    doc = Document(id_="w.html", text=PAGE)
    with_ctx = SpireNodeParser(unit="sentence").get_nodes_from_documents([doc])
    glow = next(n for n in with_ctx if "glow" in n.get_content())
    assert "Widgets" in glow.get_content() and "Blue widgets" in glow.get_content()
    bare = SpireNodeParser(policy=NONE, unit="sentence").get_nodes_from_documents([doc])
    glow_bare = next(n for n in bare if "glow" in n.get_content())
    assert glow_bare.get_content().strip() == "- They glow at night."
    assert glow_bare.node_id == glow.node_id  # identity is the path set, not the text
    sentences = [n for n in with_ctx if "weigh" in n.get_content()]
    blocks = [n for n in SpireNodeParser(unit="block").get_nodes_from_documents([doc]) if "weigh" in n.get_content()]
    assert len(sentences) == 2 and len(blocks) == 1
    assert decode_paths(blocks[0].metadata["spire_paths"]) == frozenset().union(
        *(decode_paths(n.metadata["spire_paths"]) for n in sentences)
    )


def test_plain_text_becomes_paragraphs_with_the_paths_the_cache_reparses() -> None:
    text = "First paragraph here. It has two sentences.\n\nSecond paragraph, a < b > c."
    assert is_plain_text(text)
    nodes = SpireNodeParser(unit="sentence").get_nodes_from_documents([Document(id_="notes.txt", text=text)])
    assert [n.get_content() for n in nodes] == [
        "First paragraph here.",
        "It has two sentences.",
        "Second paragraph, a < b > c.",
    ]
    direct, cached = parse_text(text), parse_html(text_to_html(text))
    assert list(direct.paths()) == list(cached.paths())
    assert render(direct, direct.paths()) == render(cached, cached.paths())
    tagged = Document(id_="t.txt", text="Use <b>bold</b> here.", metadata={"file_type": "text/plain"})
    assert SpireNodeParser().get_nodes_from_documents([tagged])[0].get_content() == "Use <b>bold</b> here."


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n", "PDF"),
        ("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n<</Linearized 1>>\nstream\n", "PDF"),
        ("\x00\x01\x02\x03" * 200, "NUL"),
    ],
)
def test_binary_input_raises_a_named_error(text: str, what: str, caplog: pytest.LogCaptureFixture) -> None:
    good = Document(id_="good.html", text=PAGE)
    bad = Document(id_="report.pdf", text=text)
    with caplog.at_level(logging.ERROR), pytest.raises(NotHTMLError) as info:
        SpireNodeParser().get_nodes_from_documents([good, bad])
    assert "report.pdf" in str(info.value) and what in str(info.value)
    assert info.value.doc_id == "report.pdf"  # type: ignore[attr-defined]
    # the exception is the report: the parser does not also log it (bulk callers report it once)
    assert not any("report.pdf" in r.getMessage() for r in caplog.records)


def test_empty_page_gives_no_nodes_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        nodes = SpireNodeParser().get_nodes_from_documents(
            [Document(id_="empty.html", text="<html><body>  </body></html>"), Document(id_="w.html", text=PAGE)]
        )
    assert nodes and all(n.ref_doc_id == "w.html" for n in nodes)
    assert any("empty.html" in r.getMessage() and "no text" in r.getMessage() for r in caplog.records)


def test_twenty_megabyte_page() -> None:
    filler = "<script>" + "var x = 1;\n" * (20 * 1024 * 1024 // 11) + "</script>"
    html = f"<html><head><title>Big</title></head><body>{filler}<p>The needle is here.</p></body></html>"
    assert len(html) > 20 * 1024 * 1024
    doc = Document(id_="big.html", text=html)
    nodes = SpireNodeParser().get_nodes_from_documents([doc])
    assert [n.get_content() for n in nodes] == ["# Big\n\nThe needle is here."]
    with pytest.raises(DocumentTooLargeError, match=r"big\.html"):
        SpireNodeParser(max_bytes=1_000_000).get_nodes_from_documents([doc])


def test_works_as_a_transformation() -> None:
    docs = [Document(id_="w.html", text=PAGE), wal()]
    parser = SpireNodeParser()
    expected = parser.get_nodes_from_documents(docs)
    pipeline = IngestionPipeline(transformations=[SpireNodeParser()])
    assert [n.node_id for n in pipeline.run(documents=docs)] == [n.node_id for n in expected]
    index = VectorStoreIndex.from_documents(docs, transformations=[SpireNodeParser()], embed_model=MockEmbedding(8))
    assert set(index.index_struct.nodes_dict.values()) == {n.node_id for n in expected}
    assert index.docstore.get_ref_doc_info("w.html") is not None
    assert "title|headers|lists|tables" in parser.to_json()


def test_parses_in_the_pipelines_worker_processes() -> None:
    """``IngestionPipeline.run(num_workers=...)`` pickles the parser into worker processes."""
    docs = [Document(id_="w.html", text=PAGE), wal(), Document(id_="x.html", text=PAGE.replace("Blue", "Red"))]
    parser = SpireNodeParser(unit="sentence")
    assert pickle.loads(pickle.dumps(parser)).to_dict() == parser.to_dict()
    expected = {(n.node_id, n.get_content(), str(n.metadata)) for n in parser.get_nodes_from_documents(docs)}
    nodes = IngestionPipeline(transformations=[parser]).run(documents=docs, num_workers=2)
    assert {(n.node_id, n.get_content(), str(n.metadata)) for n in nodes} == expected


def test_spire_keys_in_source_metadata_do_not_leak() -> None:
    doc = Document(id_="w.html", text=PAGE, metadata={"spire_paths": "0", "spire_citations": [], "lang": "en"})
    node = SpireNodeParser().get_nodes_from_documents([doc])[0]
    assert node.metadata["lang"] == "en" and node.metadata["spire_paths"] != "0"
    assert "spire_citations" not in node.metadata
    assert set(SPIRE_KEYS) <= set(node.excluded_llm_metadata_keys)


def test_the_source_cache_reparses_every_kind_of_page_to_the_same_paths() -> None:
    docs = [
        Document(id_="page.html", text=PAGE),
        Document(id_="notes.txt", text="Plain notes. Two sentences.\n\nA second paragraph."),
        Document(id_="tagged.txt", text="Keep <b>this</b> literal.\n\nNext one.", metadata={"mime_type": "text/plain"}),
    ]
    docstore = SimpleDocumentStore()
    store_sources(docstore, docs)
    sources = SourceDocuments(docstore)
    for node in SpireNodeParser().get_nodes_from_documents(docs):
        doc = sources(node.metadata["spire_doc_id"])
        paths = decode_paths(node.metadata["spire_paths"])
        assert node.get_content() == render(doc, global_context(doc, paths))


class CountingDocstore(SimpleDocumentStore):
    """A docstore that counts its hash lookups (a database round trip each, on Postgres)."""

    lookups: int = 0

    def get_document_hash(self, doc_id: str) -> str | None:
        self.lookups += 1
        return super().get_document_hash(doc_id)


def test_a_units_page_hash_serves_the_held_parse_without_a_lookup() -> None:
    docstore = CountingDocstore()
    first = Document(text=PAGE, id_="w.html")
    store_sources(docstore, [first])
    sources = SourceDocuments(docstore)
    node = SpireNodeParser().get_nodes_from_documents([first])[0]
    assert node.source_node is not None and node.source_node.hash == docstore.get_document_hash("w.html")
    parsed = sources("w.html")  # read, hash-checked before and after
    docstore.lookups = 0
    assert sources("w.html", node.source_node.hash) is parsed
    assert docstore.lookups == 0
    # another version's unit (the page replaced since): asked of the docstore, and parsed again
    second = Document(text=PAGE.replace("two grams", "three grams"), id_="w.html")
    store_sources(docstore, [second])
    fresh = sources("w.html", second.hash)
    assert docstore.lookups == 2 and fresh is not parsed
    assert "three grams" in render(fresh, list(fresh.paths()))


class RacedDocstore(SimpleDocumentStore):
    """A docstore whose page is deleted between LlamaIndex's key test and its read, once per
    kind of read: the in-memory key-value store then raises ``KeyError``."""

    def __init__(self) -> None:
        super().__init__()
        self.raced: set[str] = set()

    def _race(self, kind: str, doc_id: str) -> None:
        if kind not in self.raced:
            self.raced.add(kind)
            self.delete_document(doc_id, raise_error=False)
            raise KeyError(doc_id)

    def get_document_hash(self, doc_id: str) -> str | None:
        self._race("hash", doc_id)
        return super().get_document_hash(doc_id)

    def get_document(self, doc_id: str, raise_error: bool = True) -> object:  # type: ignore[override]
        self._race("node", doc_id)
        return super().get_document(doc_id, raise_error=raise_error)

    def document_exists(self, doc_id: str) -> bool:
        self._race("exists", doc_id)
        return super().document_exists(doc_id)


@pytest.mark.parametrize("read", ["parse", "source", "contains"])
def test_a_page_removed_while_it_is_read_is_missing_not_a_key_error(read: str) -> None:
    docstore = RacedDocstore()
    store_sources(docstore, [Document(text=PAGE, id_="w.html")])
    sources = SourceDocuments(docstore)
    if read == "parse":
        with pytest.raises(MissingSourceError, match=r"w\.html"):
            sources("w.html")
    elif read == "source":
        assert sources.source("w.html") == (None, None)
    else:
        assert "w.html" not in sources
    assert docstore.raced  # the race happened
