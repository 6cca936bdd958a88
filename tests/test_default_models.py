"""Both adapters' default embedding models run the packaged model at the precision spire_core picks."""

from __future__ import annotations

import numpy as np

from spire_core.model import torch_dtype
from spire_langchain import default_embeddings
from spire_llamaindex import default_embed_model


def test_both_defaults_load_the_auto_precision_and_agree() -> None:
    li, lc = default_embed_model(), default_embeddings()
    expected = torch_dtype("auto")
    assert str(li._model.dtype) == f"torch.{expected}"
    assert str(lc._client.dtype) == f"torch.{expected}"
    text = "Café au lait is coffee with hot milk."
    a, b = np.array(li.get_text_embedding(text)), np.array(lc.embed_query(text))
    assert a.shape == (384,)
    assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) > 0.9999
