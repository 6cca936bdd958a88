"""References travel with the evidence in both adapters: units and citations name the page and path linked to."""

from __future__ import annotations

from langchain_core.documents import Document as LCDocument
from llama_index.core.schema import Document as LIDocument

from spire_core import Citation, parse_html
from spire_core.document.links import Reference
from spire_core.results.schema import REFERENCES, SPIRE_KEYS, references_of
from spire_langchain import SpireRetriever as LCRetriever
from spire_langchain import SpireTransformer
from spire_langchain import citations_of as lc_citations_of
from spire_llamaindex import SpireNodeParser
from spire_llamaindex import SpireRetriever as LIRetriever
from spire_llamaindex import citations_of as li_citations_of

from .langchain.conftest import KeywordEmbeddings
from .support.hash_embedding import HashEmbedding

CONFIG = """<html><head><title>Configuration</title></head><body><h1>Configuration</h1>
<p>Every <a href="#term-wal">WAL</a> record carries an <a href="../glossary.html#term-lsn">LSN</a>
(see <a href="https://example.org/wal">the design notes</a>).</p>
<p>Checkpoints happen every five minutes.</p>
<dl><dt id="term-wal">WAL</dt><dd>The write-ahead log of every change.</dd></dl></body></html>"""
GLOSSARY = """<html><head><title>Glossary</title></head><body><h1>Glossary</h1>
<dl><dt id="term-lsn">LSN</dt><dd>A log sequence number: a byte position in the WAL stream.</dd></dl></body></html>"""
PAGES = {"guide/config.html": CONFIG, "glossary.html": GLOSSARY}
QUESTION = "which record carries an LSN"


def _expected() -> tuple[Reference, ...]:
    doc = parse_html(CONFIG, doc_id="guide/config.html")
    dt = next(p for p in doc.paths() if doc.get(p).attrs.get("id") == "term-wal")
    return (
        Reference("guide/config.html", "term-wal", frozenset({dt})),
        Reference("glossary.html", "term-lsn"),
        Reference(url="https://example.org/wal"),
    )


def _carrying(citations: list[Citation]) -> Citation:
    return next(c for c in citations if "LSN" in c.text and "carries" in c.text)


def test_both_adapters_record_the_same_references_on_their_units() -> None:
    nodes = SpireNodeParser().get_nodes_from_documents([LIDocument(id_=k, text=v) for k, v in PAGES.items()])
    pieces = SpireTransformer().split_documents([LCDocument(id=k, page_content=v) for k, v in PAGES.items()])
    li = [n.metadata.get(REFERENCES) for n in nodes]
    assert li == [p.metadata.get(REFERENCES) for p in pieces]
    recorded = [r for n in nodes for r in references_of(n.metadata)]
    assert recorded == list(_expected())
    assert REFERENCES in SPIRE_KEYS and all(REFERENCES in n.excluded_embed_metadata_keys for n in nodes)
    for node in nodes:  # what is embedded and shown to an LLM holds no reference
        assert "example.org" not in node.get_content(metadata_mode="embed")  # type: ignore[arg-type]


def test_llamaindex_citations_carry_the_references_their_sentence_makes() -> None:
    documents = [LIDocument(id_=k, text=v) for k, v in PAGES.items()]
    retriever = LIRetriever.from_documents(documents, embed_model=HashEmbedding())
    nodes = retriever.retrieve(QUESTION)
    cit = _carrying([c for n in nodes for c in li_citations_of(n)])
    assert cit.references == _expected()
    assert "example.org" not in cit.text and "glossary" not in cit.text  # recorded, never substituted


def test_langchain_citations_carry_the_references_their_sentence_makes() -> None:
    pages = [LCDocument(page_content=v, metadata={"source": k}) for k, v in PAGES.items()]
    retriever = LCRetriever.from_documents(pages, KeywordEmbeddings())
    docs = retriever.invoke(QUESTION)
    cit = _carrying([c for d in docs for c in lc_citations_of(d)])
    assert cit.references == _expected()
    assert cit.references[0].paths and not cit.references[1].paths  # the other page's anchor: paths when followed


def test_both_retrievers_deliver_a_followed_reference_as_its_own_citation() -> None:
    li = LIRetriever.from_documents(
        [LIDocument(id_=k, text=v) for k, v in PAGES.items()], embed_model=HashEmbedding(), resolve_refs=True
    )
    lc = LCRetriever.from_documents(
        [LCDocument(page_content=v, metadata={"source": k}) for k, v in PAGES.items()],
        KeywordEmbeddings(),
        resolve_refs=True,
    )
    assert li.options.resolve_refs and lc.options.resolve_refs
    for cited in (
        [c for n in li.retrieve(QUESTION) for c in li_citations_of(n)],
        [c for d in lc.invoke(QUESTION) for c in lc_citations_of(d)],
    ):
        carrying = _carrying(cited)
        lsn = next(c for c in cited if c.referenced_by == carrying.key() and c.doc_id == "glossary.html")
        assert "A log sequence number: a byte position in the WAL stream." in lsn.text
        assert carrying.references[1].cited == lsn.key()
        assert "byte position" not in carrying.text  # delivered beside it, never substituted
