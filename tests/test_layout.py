"""The module layout has no import circles.

The import graph is read from the source with :mod:`ast`, counting every import: at module
level, inside functions and under ``TYPE_CHECKING``, relative and absolute. ``from a import
b`` is an edge to ``a`` and, when ``b`` is a module, to ``a.b`` too. Importing a submodule is
not counted as importing its parent package's ``__init__`` (Python runs it, but a package
importing its own submodules is how packages are built, not a circle).

The same graph keeps ``spire_core``'s layers (:data:`LAYERS`, bottom first): no module
imports a module of a higher layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spire_core", "spire_runtime", "spire_llamaindex", "spire_langchain", "spire_app", "benchmarks")


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file under the packages."""
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def import_lines(name: str, path: Path, known: set[str]) -> dict[str, int]:
    """The modules of ``known`` that the module ``name`` (source ``path``) imports anywhere,
    each with the line of its first import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in found:
            if target in known and target != name:
                targets[target] = min(targets.get(target, node.lineno), node.lineno)
    return targets


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that the module ``name`` (source ``path``) imports anywhere."""
    return set(import_lines(name, path, known))


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    found = modules(root, packages)
    return {name: imported(name, path, set(found)) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert "spire_core.document.tree" in graph and "spire_core.reading.parse" in graph
    found = cycles(graph)
    assert not found, "import circles:\n" + "\n".join(
        " <-> ".join(c) + "\n    " + "\n    ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in found
    )


def test_document_model_imports_no_parser_or_algorithm() -> None:
    assert import_graph()["spire_core.document.tree"] <= {"spire_core.errors"}


def test_cycles_are_found_through_function_and_type_checking_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\nfrom .. import c\n"
    )
    (pkg / "c.py").write_text("import os\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.a"] == {"pkg.sub", "pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg", "pkg.a", "pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]
    (pkg / "a.py").write_text("import os\n")
    assert cycles(import_graph(tmp_path, ("pkg",))) == []


#: spire_core's layers, bottom first: each a module or subpackage directly under ``spire_core``
#: (a subpackage's ``__init__`` is in its layer). A module may import its own layer and those
#: below it, never one above. ``spire_core/__init__.py``, the package face, is in no layer: it
#: imports every layer and none may import it (a circle, which the test above finds).
LAYERS = (
    "errors",
    "size",
    "document",
    "values",
    "reading",
    "context",
    "options",
    "indexing",
    "query",
    "results",
    "pipeline",
)


def upward_imports(root: Path, package: str, layers: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """(importer, imported) -> ``"file:line"`` for every import in ``package`` (under ``root``)
    from a lower layer of ``layers`` (bottom first) to a higher one; the package's own
    ``__init__`` is exempt. A module in no layer is an error."""
    found = modules(root, (package,))
    rank = {layer: i for i, layer in enumerate(layers)}
    unlayered = sorted(m for m in found if m != package and m.split(".")[1] not in rank)
    assert not unlayered, f"modules in no layer of {layers}: {unlayered}"
    out: dict[tuple[str, str], str] = {}
    for name, path in found.items():
        if name == package:
            continue
        for target, line in import_lines(name, path, set(found) - {package}).items():
            if rank[target.split(".")[1]] > rank[name.split(".")[1]]:
                out[name, target] = f"{path.relative_to(root)}:{line}"
    return out


def test_core_imports_run_down_the_layers() -> None:
    found = upward_imports(ROOT, "spire_core", LAYERS)
    assert not found, "imports from a lower layer to a higher one (LAYERS, issue #51):\n" + "\n".join(
        f"  {where}: {a} -> {b}" for (a, b), where in sorted(found.items())
    )


def test_upward_imports_are_found_at_module_level_in_functions_and_relative(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    for sub in ("low", "mid", "top"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from pkg.top import t\n")  # the face imports any layer
    (pkg / "base.py").write_text("import os\n")
    (pkg / "low" / "a.py").write_text("from pkg import base\nfrom ..mid import m\n")
    (pkg / "mid" / "m.py").write_text("from pkg.low import a\n\ndef f():\n    import pkg.top.t\n")
    (pkg / "top" / "t.py").write_text("from ..mid import m\nfrom pkg.low.a import x\nfrom . import u\n")
    (pkg / "top" / "u.py").write_text("")
    layers = ("base", "low", "mid", "top")
    assert upward_imports(tmp_path, "pkg", layers) == {
        ("pkg.low.a", "pkg.mid"): "pkg/low/a.py:2",
        ("pkg.low.a", "pkg.mid.m"): "pkg/low/a.py:2",
        ("pkg.mid.m", "pkg.top.t"): "pkg/mid/m.py:4",
    }
    (pkg / "low" / "a.py").write_text("from pkg import base\n")
    (pkg / "mid" / "m.py").write_text("from pkg.low import a\n")
    assert upward_imports(tmp_path, "pkg", layers) == {}
    (pkg / "stray.py").write_text("")
    with pytest.raises(AssertionError, match=r"pkg\.stray"):
        upward_imports(tmp_path, "pkg", layers)
