"""The packaged model's precision choice and the indexing process's allocator setting."""

from __future__ import annotations

import sys

import pytest

from spire_core.model import cpu_has_bf16, mmap_large_allocations, model_path, torch_dtype


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
