"""Both adapters' default embedding models: the packaged model on ONNX Runtime, the same vectors as on PyTorch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import spire_langchain as lc_adapter
import spire_llamaindex as li_adapter
from spire_runtime.model import torch_dtype

TEXTS = [
    "Café au lait is coffee with hot milk.",
    "The valid range is between 30 seconds and one day. " * 60,  # past the 256-token window: cut there
    "",
]


def _cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    x, y = np.array(a), np.array(b)
    return np.asarray((x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1))


def test_onnx_defaults_of_both_adapters_agree_with_sentence_transformers() -> None:
    li, lc = li_adapter.default_embeddings(), lc_adapter.default_embeddings()
    assert type(li).__name__ == "FastEmbedEmbedding"
    assert type(lc).__name__ == "FastEmbedEmbeddings"
    onnx_li = li.get_text_embedding_batch(TEXTS)
    onnx_lc = lc.embed_documents(TEXTS)
    assert np.array(onnx_li).shape == (3, 384)
    assert _cosines(onnx_li, onnx_lc).min() > 0.99999
    assert _cosines([li.get_query_embedding(TEXTS[0])], [lc.embed_query(TEXTS[0])])[0] > 0.99999
    torch_model = li_adapter.default_embeddings(runtime="torch", precision="fp32")
    # float32 on both runtimes: equal to rounding, the long text cut at the same window
    assert _cosines(onnx_li, torch_model.get_text_embedding_batch(TEXTS)).min() > 0.99999


def test_torch_defaults_load_the_auto_precision_and_agree() -> None:
    li, lc = li_adapter.default_embeddings(runtime="torch"), lc_adapter.default_embeddings(runtime="torch")
    expected = torch_dtype("auto")
    assert str(li._model.dtype) == f"torch.{expected}"  # type: ignore[attr-defined]
    assert str(lc._client.dtype) == f"torch.{expected}"  # type: ignore[attr-defined]
    assert _cosines([li.get_text_embedding(TEXTS[0])], [lc.embed_query(TEXTS[0])])[0] > 0.9999


def test_onnx_runtime_refuses_what_it_cannot_run() -> None:
    with pytest.raises(ValueError, match="runtime='torch'"):
        li_adapter.default_embeddings(precision="bf16")
    with pytest.raises(ValueError, match="runtime='torch'"):
        li_adapter.default_embeddings(device="cuda")
    with pytest.raises(ValueError, match="runtime must be"):
        lc_adapter.default_embeddings(runtime="tf")  # type: ignore[arg-type]


def test_onnx_default_loads_without_torch() -> None:
    code = (
        "import sys; from spire_llamaindex import default_embeddings; "
        "v = default_embeddings().get_text_embedding('x'); "
        "print(len(v), [m for m in ('torch', 'sentence_transformers', 'sklearn') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split("\n")[0] == "384 []"
