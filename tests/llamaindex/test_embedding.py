"""``embed_texts``: every text embedded once, in bounded batches, vectors back in input order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field

from spire_core.options import MODEL_WINDOW
from spire_core.size import model_tokens
from spire_llamaindex.compat import sentence_transformer
from spire_llamaindex.embedding import BATCH_TOKENS, default_embeddings, embed_texts


class LengthEmbedding(BaseEmbedding):
    """A vector that names its text (its length and first character); records each batch it gets."""

    batches: list[list[str]] = Field(default_factory=list)

    def _vector(self, text: str) -> list[float]:
        return [float(len(text)), float(ord(text[0])) if text else -1.0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [self._vector(t) for t in texts]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def model_post_init(self, context: Any) -> None:
        self.batches = []


texts_st = st.lists(st.text(alphabet="abc xyz", min_size=0, max_size=3000), max_size=60)


@settings(max_examples=60, deadline=None)
@given(texts=texts_st, most=st.integers(1, 40), max_tokens=st.integers(1, 3000))
def test_vectors_in_input_order_and_batches_bounded(texts: list[str], most: int, max_tokens: int) -> None:
    model = LengthEmbedding(embed_batch_size=most)
    vectors = embed_texts(model, texts, size=len, max_tokens=max_tokens)  # a character a token
    assert vectors == [model._vector(t) for t in texts]
    seen = [t for b in model.batches for t in b]
    assert sorted(seen) == sorted(texts)  # each text once
    assert [len(t) for t in seen] == sorted(len(t) for t in texts)  # shortest first
    for batch in model.batches:
        assert 1 <= len(batch) <= most
        padded = len(batch) * min(max(map(len, batch)), MODEL_WINDOW)
        assert len(batch) == 1 or padded <= max_tokens


def test_long_texts_go_fewer_to_a_batch_than_short_ones() -> None:
    model = LengthEmbedding(embed_batch_size=32)
    embed_texts(model, ["short text"] * 40 + ["checkpoints happen every so often " * 80] * 20)
    sizes = [len(b) for b in model.batches]
    assert sizes[0] == 32  # short texts fill the model's batch
    assert max(sizes[-2:]) == BATCH_TOKENS // MODEL_WINDOW == 2  # window-long texts: 2 * 256 padded tokens


def test_batches_are_bounded_in_model_tokens_not_characters() -> None:
    """A Markdown table row is about a token per character: as many characters of prose go twice as many to a batch."""
    row, prose = ("| 1 | 2 | 3 | 4 |" * 40)[:600], ("The checkpoint interval is set in seconds. " * 20)[:600]
    assert len(row) == len(prose) and model_tokens(row) >= 2 * model_tokens(prose)
    sizes = {}
    for text in (row, prose):
        model = LengthEmbedding(embed_batch_size=32)
        embed_texts(model, [text] * 32)
        sizes[text] = len(model.batches[0])
    assert sizes[row] == 2 and sizes[prose] == 4  # 256 (the window) and 111 tokens a text, 512 a batch


def test_power_of_two_batches_whatever_the_count() -> None:
    model = LengthEmbedding(embed_batch_size=32)
    embed_texts(model, ["a sentence"] * 27 + ["y" * 2000] * 7)
    sizes = [len(b) for b in model.batches]
    assert sum(sizes) == 34
    assert all(n & (n - 1) == 0 for n in sizes), sizes  # few batch shapes


def test_torch_runtime_pads_batches_to_buckets() -> None:
    embed_model = default_embeddings(runtime="torch")
    st_model = sentence_transformer(embed_model)  # type: ignore[arg-type]
    if hasattr(st_model[0], "processing_kwargs"):  # not sentence-transformers 3.0 (the floor): left as it pads
        lengths = {st_model[0].preprocess([("word " * n).strip()])["input_ids"].shape[1] for n in (1, 20, 40, 90, 400)}
        assert lengths == {32, 64, 96, 256}  # 3, 22, 42, 92 and 402 tokens (cut to the window)
    # pad positions are masked: the vector of a text alone equals its vector in a padded batch
    texts = ["Short one.", "checkpoint_timeout is the maximum time between automatic WAL checkpoints " * 3]
    alone = [embed_model.get_text_embedding(t) for t in texts]
    together = embed_texts(embed_model, texts)
    for a, b in zip(alone, together, strict=True):
        cos = sum(x * y for x, y in zip(a, b, strict=True)) / (
            sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
        )
        assert cos > 0.9999
