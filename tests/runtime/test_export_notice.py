"""Issue 50: the first run's one-time ONNX export (15-40 s in a subprocess) says so in one line, not silence."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from spire_core import SpireError
from spire_runtime.model import onnx_model_dir


def test_the_export_says_it_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    python = tmp_path / "python"  # an export that fails at once: only the line before it matters here
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    with pytest.raises(SpireError):
        onnx_model_dir(tmp_path / "cache")
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("SPIRE: exporting the packaged embedding model to ONNX, once for this machine")
    assert str(tmp_path / "cache") in err
