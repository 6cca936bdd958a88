"""The packaged model's ONNX export, precision choice and the indexing process's allocator setting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spire_core import SpireError
from spire_core.options import MODEL_WINDOW
from spire_runtime.model import (
    ONNX_FILE,
    cache_root,
    cpu_has_bf16,
    mmap_large_allocations,
    model_path,
    onnx_model_dir,
    onnx_threads,
    torch_dtype,
)


def test_model_folder_holds_a_sentence_transformers_model() -> None:
    assert (model_path() / "config.json").is_file()


def test_explicit_precisions_map_to_their_dtypes() -> None:
    assert torch_dtype("fp32") == "float32"
    assert torch_dtype("bf16") == "bfloat16"


def test_auto_precision_follows_the_cpu_and_never_picks_bf16_off_the_cpu() -> None:
    assert torch_dtype("auto") == ("bfloat16" if cpu_has_bf16() else "float32")
    assert torch_dtype("auto", device="cuda") == "float32"


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision"):
        torch_dtype("fp8")  # type: ignore[arg-type]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_large_allocations_setting_takes_effect_on_glibc() -> None:
    assert mmap_large_allocations() is True


def test_onnx_export_is_made_once_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = onnx_model_dir(tmp_path)
    assert (folder / ONNX_FILE).is_file()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == MODEL_WINDOW  # sentence-transformers' window, not the tokenizer's 512
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no export folder left behind

    def no_export(*args: object, **kwargs: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(subprocess, "run", no_export)
    assert onnx_model_dir(tmp_path) == folder


def test_failed_export_raises_a_spire_error_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = tmp_path / "python"  # an interpreter without PyTorch, as far as the export can tell
    python.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    with pytest.raises(SpireError, match=r"export the packaged model to ONNX.*No module named 'torch'"):
        onnx_model_dir(tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPIRE_CACHE_DIR", str(tmp_path / "a"))
    assert cache_root() == tmp_path / "a"
    monkeypatch.delenv("SPIRE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "b"))
    assert cache_root() == tmp_path / "b" / "spire"


def test_onnx_threads_follow_omp_num_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as Ray sets it for a one-CPU worker
    assert onnx_threads() == 1
    for unset in ("", "0", "two"):
        monkeypatch.setenv("OMP_NUM_THREADS", unset)
        assert onnx_threads() is None
