"""The cost benchmark's unit counts and surface timing on a tiny synthetic set (no index run)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks import cost
from tests.benchmarks.test_run import dataset  # noqa: F401 (the fixture)


def test_surface_counts_units_and_times_each_system_beside_its_floor(
    dataset: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    functions: list[Callable[[], Any]] = []
    real = cost._cpu

    def spy(fn: Callable[[], Any]) -> tuple[float, Any]:
        functions.append(fn)
        return real(fn)

    monkeypatch.setattr(cost, "_cpu", spy)
    assert cost.main(["--json", "--no-index", "--datasets", str(dataset.parent)]) == 0
    result = json.loads(capsys.readouterr().out)
    tiny = result["surface"]["tiny"]
    assert tiny["pages"] == 2
    for system in ("spire", "spire-sentence", "fixed-256"):
        r = tiny[system]
        assert r["vectors"] > 0 and r["tokens"] > 0
        assert r["surface_s"] > 0 and r["surface_x"] > 0
        assert r["floor_s"] >= tiny["floor_s"]  # the least floor run of the set is the least of all
    # a sentence per vector: at least as many as the passages that pack them
    assert tiny["spire-sentence"]["vectors"] >= tiny["spire"]["vectors"]
    assert tiny["punkt_s"] >= 0 and tiny["visit_s"] >= 0  # (rounded to milliseconds: 0 on two tiny pages)
    assert cost._visit(b"<p>one <b>two</b></p>") == 4  # html, body, p, b
    # Punkt, the visit and each of the three systems: every run right after a run of the floor (one function)
    floor = functions[0]
    assert [fn is floor for fn in functions] == [True, False] * (5 * cost.SURFACE_RUNS)
    assert "index" not in result
