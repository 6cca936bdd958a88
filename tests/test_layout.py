"""The module layout has no import circles.

The import graph is read from the source with :mod:`ast`, counting every import: at module
level, inside functions and under ``TYPE_CHECKING``, relative and absolute. ``from a import
b`` is an edge to ``a`` and, when ``b`` is a module, to ``a.b`` too. Importing a submodule is
not counted as importing its parent package's ``__init__`` (Python runs it, but a package
importing its own submodules is how packages are built, not a circle).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spire_core", "spire_runtime", "spire_llamaindex", "spire_langchain", "benchmarks")


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file under the packages."""
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that the module ``name`` (source ``path``) imports anywhere."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in known and t != name}


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
