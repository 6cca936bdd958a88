"""SpireTransformer: one Document per sentence seed, deterministic ids, text fallback, errors name the source."""

from __future__ import annotations

import pytest
from langchain_core.documents import BaseDocumentTransformer, Document

from spire_core import (
    NONE,
    NotHTMLError,
    decode_paths,
    encode_paths,
    is_html,
    parse_html,
    parse_page,
    parse_text,
    render,
    seeds,
    unit_id,
)
from spire_core.results.schema import members_of
from spire_langchain import SpireTransformer
from spire_langchain._source import source_id

from .conftest import SMALL_PAGES

COFFEE = SMALL_PAGES["coffee.html"]


def test_is_a_document_transformer() -> None:
    assert isinstance(SpireTransformer(), BaseDocumentTransformer)


def test_one_document_per_sentence_seed_with_context_and_paths() -> None:
    page = Document(page_content=COFFEE, metadata={"source": "coffee.html", "lang": "en"})
    out = SpireTransformer(unit="sentence").transform_documents([page])
    doc = parse_html(COFFEE, doc_id="coffee.html")
    expected = seeds(doc)
    assert [d.page_content for d in out] == [s.text for s in expected]
    # h1, two h2 and three sentences (the title is not repeated: h1 is its own seed)
    assert len(out) == 6
    assert [d.metadata["spire_begin"] for d in out] == [encode_paths([s.begin]) for s in expected]
    espresso = out[-1]
    # the sentence carries its global context: title and the heading above it
    assert "Brewing coffee" in espresso.page_content
    assert "## Espresso" in espresso.page_content
    assert "25 to 30 seconds" in espresso.page_content
    assert espresso.metadata["lang"] == "en"
    assert espresso.metadata["source"] == "coffee.html"
    assert espresso.metadata["spire_doc_id"] == "coffee.html"
    paths = decode_paths(espresso.metadata["spire_paths"])
    assert paths == expected[-1].paths
    assert decode_paths(espresso.metadata["spire_begin"]) == {expected[-1].begin}
    # the path set renders to the sentence itself (no context)
    assert render(doc, paths).strip() == "An espresso shot takes about 25 to 30 seconds to extract."


def test_ids_are_deterministic_and_unique() -> None:
    page = Document(page_content=COFFEE, metadata={"source": "coffee.html"})
    first = SpireTransformer().transform_documents([page])
    again = SpireTransformer().transform_documents([Document(page_content=COFFEE, metadata={"source": "coffee.html"})])
    assert [d.id for d in first] == [d.id for d in again]
    assert len({d.id for d in first}) == len(first)
    assert first[0].id == unit_id("coffee.html", decode_paths(first[0].metadata["spire_paths"]))
    other = SpireTransformer().transform_documents([Document(page_content=COFFEE, metadata={"source": "other.html"})])
    assert not {d.id for d in other} & {d.id for d in first}


def test_document_id_wins_over_source_and_hash_is_the_last_resort() -> None:
    assert source_id(Document(id="page-1", page_content="x", metadata={"source": "s"})) == "page-1"
    assert source_id(Document(page_content="x", metadata={"source": "s"})) == "s"
    anonymous = source_id(Document(page_content="<p>x</p>"))
    assert anonymous.startswith("sha256:")
    assert anonymous == source_id(Document(page_content="<p>x</p>"))
    assert anonymous != source_id(Document(page_content="<p>y</p>"))


def test_options_unit_and_global_context() -> None:
    page = Document(page_content=COFFEE, metadata={"source": "coffee.html"})
    blocks = SpireTransformer(unit="block").transform_documents([page])
    assert len(blocks) == 5  # h1, h2, the pour-over paragraph (two sentences), h2, the espresso paragraph
    paragraph = parse_html(COFFEE).get(next(iter(decode_paths(blocks[2].metadata["spire_begin"]))))
    assert paragraph.tag == "p"  # a block unit begins at its block element
    assert "60 grams" in blocks[2].page_content and "90 and 96 degrees" in blocks[2].page_content
    bare = SpireTransformer(policy=NONE, unit="sentence").transform_documents([page])
    assert bare[-1].page_content.strip() == "An espresso shot takes about 25 to 30 seconds to extract."
    with pytest.raises(ValueError, match="unit"):
        SpireTransformer(unit="paragraph")  # type: ignore[arg-type]


def test_passages_are_the_default_and_carry_their_sentences() -> None:
    page = Document(page_content=COFFEE, metadata={"source": "coffee.html"})
    out = SpireTransformer().transform_documents([page])
    doc = parse_html(COFFEE, doc_id="coffee.html")
    expected = seeds(doc, unit="passage")
    assert [d.page_content for d in out] == [s.text for s in expected]
    assert len(out) < len(seeds(doc))
    cited = [m for d in out for m in members_of(d.metadata, decode_paths(d.metadata["spire_paths"]))]
    assert cited == [s.paths for s in seeds(doc, unit="sentence")]


def test_plain_text_falls_back_to_parse_text_with_the_same_paths() -> None:
    text = "Plain text has no tags at all. It still has sentences.\n\nA second paragraph follows; 3 < 4 and 5 > 2."
    assert not is_html(text)
    out = SpireTransformer(unit="sentence").transform_documents(
        [Document(page_content=text, metadata={"source": "notes.txt"})]
    )
    expected = seeds(parse_text(text, doc_id="notes.txt"))
    assert [d.page_content for d in out] == [s.text for s in expected]
    assert len(out) == 3
    # the retriever re-reads the page through a DocumentCache (parse_page): same paths
    reread = seeds(parse_page(text, doc_id="notes.txt"))
    assert [s.paths for s in reread] == [s.paths for s in expected]


def test_binary_input_raises_naming_the_source() -> None:
    pdf = Document(page_content="%PDF-1.7\n\x00\x00\x00binary stream", metadata={"source": "report.pdf"})
    with pytest.raises(NotHTMLError, match=r"report\.pdf"):
        SpireTransformer().transform_documents([pdf])
    nul = Document(page_content="<html><body>" + "\x00" * 200 + "</body></html>", metadata={"source": "blob.bin"})
    with pytest.raises(NotHTMLError, match=r"blob\.bin"):
        SpireTransformer().transform_documents([nul])


def test_empty_page_yields_nothing_but_says_so(caplog: pytest.LogCaptureFixture) -> None:
    out = SpireTransformer().transform_documents([Document(page_content="<html><body></body></html>", id="empty")])
    assert out == []
    assert "'empty' has no readable text" in caplog.text


async def test_async_matches_sync() -> None:
    pages = [Document(page_content=html, metadata={"source": name}) for name, html in SMALL_PAGES.items()]
    sync = SpireTransformer().transform_documents(pages)
    asynchronous = await SpireTransformer().atransform_documents(pages)
    assert [(d.id, d.page_content) for d in asynchronous] == [(d.id, d.page_content) for d in sync]
    assert {d.metadata["spire_doc_id"] for d in sync} == set(SMALL_PAGES)
