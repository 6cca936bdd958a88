"""Every package ships a ``py.typed`` (PEP 561): the file is there and pyproject.toml's package-data
puts it in the wheel (nothing is built here)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spire_core", "spire_runtime", "spire_llamaindex", "spire_langchain", "spire_app")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_packages_are_the_ones_pyproject_finds() -> None:
    include = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.rstrip("*") for p in include) == sorted(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_ships_py_typed(package: str) -> None:
    assert (ROOT / package / "py.typed").is_file()
    data = pyproject()["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data.get(package, []) or "py.typed" in data.get("*", [])
