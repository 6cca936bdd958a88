"""LlamaIndex drop-in behaviour: what code written for SentenceSplitter and the stock retriever expects."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import pytest
from llama_index.core import Document, Settings, SimpleDirectoryReader
from llama_index.core.base.embeddings.base import BaseEmbedding

from spire_core import HEADERS, HTML, NONE, TITLE, compose
from spire_llamaindex import SpireNodeParser, SpireRetriever

PAGE = """<html><head><title>Limits</title></head><body><h1>Limits</h1><h2>Checkpoints</h2>
<p>The valid range of checkpoint_timeout is between 30 seconds and one day.</p>
<h2>Sizes</h2><p>A row can hold 1.6 TB.</p></body></html>"""
MARKDOWN = """# Limits

## Checkpoints

- checkpoint_timeout
  - The valid range is between 30 seconds and one day.

| Item | Upper limit |
|---|---|
| row size | 1.6 TB |
"""


class HashEmbedding(BaseEmbedding):
    """Hashed bag of words: deterministic, no model; counts its calls."""

    calls: int = 0

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * 128
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % 128] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        self.calls += 1
        return self._vector(text)


def test_from_defaults_like_every_node_parser() -> None:
    parser = SpireNodeParser.from_defaults(policy=NONE, unit="block")
    assert isinstance(parser, SpireNodeParser)
    assert parser.policy is NONE and parser.unit == "block"
    assert SpireNodeParser.from_defaults().policy is HTML


@pytest.mark.parametrize("policy", [HTML, NONE, TITLE, compose(TITLE, HEADERS)])
def test_to_dict_from_dict_round_trip(policy: object) -> None:
    parser = SpireNodeParser(policy=policy, unit="block")
    data = parser.to_dict()
    assert isinstance(data["policy"], str)
    again = SpireNodeParser.from_dict(data)
    assert again.policy.name == parser.policy.name and again.unit == "block"
    doc = Document(text=PAGE, id_="limits.html")
    assert [n.get_content() for n in again([doc])] == [n.get_content() for n in parser([doc])]
    assert SpireNodeParser.from_json(parser.to_json()).policy.name == parser.policy.name


def test_an_unknown_policy_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="policy"):
        SpireNodeParser.from_dict({"policy": "no-such-policy"})


def test_from_documents_uses_settings_embed_model(monkeypatch: pytest.MonkeyPatch) -> None:
    model = HashEmbedding(model_name="hash")
    monkeypatch.setattr(Settings, "_embed_model", model)
    retriever = SpireRetriever.from_documents([Document(text=PAGE, id_="limits.html")])
    assert model.calls > 0
    found = retriever.retrieve("valid range of checkpoint_timeout")
    assert "30 seconds and one day" in found[0].node.get_content()


def test_markdown_documents_get_their_structure() -> None:
    doc = Document(text=MARKDOWN, id_="limits.md", metadata={"file_name": "limits.md"})
    nodes = SpireNodeParser()([doc])
    item = next(n.get_content() for n in nodes if "30 seconds" in n.get_content())
    assert item.startswith("# Limits\n\n## Checkpoints")
    assert "- checkpoint_timeout" in item
    cell = next(n.get_content() for n in nodes if "1.6 TB" in n.get_content())
    assert "Upper limit" in cell and "row size" in cell


def test_a_binary_file_named_html_gives_no_node(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """SimpleDirectoryReader reads a PNG named ``.html`` as UTF-8 text: it must not be indexed."""
    (tmp_path / "limits.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "logo.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    documents = SimpleDirectoryReader(str(tmp_path)).load_data()
    assert len(documents) == 2
    retriever = SpireRetriever.from_documents(documents, embed_model=HashEmbedding(model_name="hash"))
    pages = {n.node.metadata["spire_doc_id"] for n in retriever.retrieve("valid range of checkpoint_timeout png")}
    assert pages == {(tmp_path / "limits.html").as_posix()}  # the file's path, not the reader's random id
    assert not any("logo" in n.metadata.get("file_name", "") for n in retriever.index.docstore.docs.values())
    assert "logo.html" in caplog.text


def test_metadata_filters_and_the_query_engine() -> None:
    """``filters=MetadataFilters(...)`` reaches the vector store query; ``as_query_engine`` keeps SPIRE's retrieval."""
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters

    pages = [
        Document(text=PAGE, id_="limits.html", metadata={"product": "db"}),
        Document(
            text=PAGE.replace("checkpoint_timeout", "flush_interval"), id_="other.html", metadata={"product": "mq"}
        ),
    ]
    embed = HashEmbedding(model_name="hash")
    only_mq = MetadataFilters(filters=[ExactMatchFilter(key="product", value="mq")])
    retriever = SpireRetriever.from_documents(pages, embed_model=embed, filters=only_mq)
    found = retriever.retrieve("valid range of checkpoint_timeout")
    assert found and {n.node.metadata["spire_doc_id"] for n in found} == {"other.html"}
    engine = retriever.as_query_engine(llm=MockLLM())
    response = engine.query("valid range of flush_interval")
    assert response.source_nodes and "30 seconds and one day" in response.source_nodes[0].node.get_content()
    assert response.source_nodes[0].node.metadata["spire_citations"]  # SPIRE's results, not the index's own


class ConstantEmbedding(BaseEmbedding):
    """Every text the same vector: the vector ranking says nothing, only the lexical signal does."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return [1.0, 0.0, 0.0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return [1.0, 0.0, 0.0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]


FILLER = " ".join(f"Paragraph {i} talks about ordinary settings of the system." for i in range(12))


def test_the_lexical_signal_finds_the_sentence_naming_the_rare_words() -> None:
    """A sentence naming the question's rare words is delivered even when the vectors cannot tell
    (issue #34); a page added later is searched once the lexicon refreshes."""
    pages = [Document(text=f"<h1>Page {n}</h1><p>{FILLER}</p>", id_=f"p{n}.html") for n in range(6)]
    pages.append(Document(text=f"<h1>Tuning</h1><p>{FILLER} The frobnicator depth defaults to 42.</p>", id_="t.html"))
    retriever = SpireRetriever.from_documents(pages, embed_model=ConstantEmbedding(model_name="c"), budget=60)
    text = " ".join(n.node.get_content() for n in retriever.retrieve("frobnicator depth"))
    assert "The frobnicator depth defaults to 42." in text
    assert retriever.lexicon is not None
    retriever.lexicon.refresh_s = 0.0
    from spire_llamaindex import update_index

    update_index(retriever.index, [Document(text="<p>The quux limit is 7.</p>", id_="q.html")])
    assert "The quux limit is 7." in " ".join(n.node.get_content() for n in retriever.retrieve("quux limit"))
