"""The product sits on the LlamaIndex adapter's public surface: ``spire_app`` takes from
``spire_llamaindex`` only names its package exports (``__all__``) and its public modules (no
``spire_llamaindex._*``), and nothing below the product imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import spire_llamaindex
from tests.test_layout import ROOT, cycles, import_graph, modules

BELOW = ("spire_core", "spire_runtime", "spire_llamaindex", "spire_langchain")


def adapter_imports(root: Path = ROOT) -> list[tuple[str, str, tuple[str, ...]]]:
    """``(file:line, module, names)`` for every import of ``spire_llamaindex`` in ``spire_app``
    (``names`` empty for ``import module``)."""
    found = []
    for path in sorted((root / "spire_app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                if node.module.split(".")[0] == "spire_llamaindex":
                    found.append((where, node.module, tuple(a.name for a in node.names)))
            elif isinstance(node, ast.Import):
                found += [(where, a.name, ()) for a in node.names if a.name.split(".")[0] == "spire_llamaindex"]
    return found


def test_the_app_takes_only_the_adapters_exported_names_and_public_modules() -> None:
    imports = adapter_imports()
    assert any(module == "spire_llamaindex" for _, module, _ in imports)
    private = [(w, m) for w, m, _ in imports if any(part.startswith("_") for part in m.split("."))]
    assert not private, f"spire_app imports private modules of the adapter: {private}"
    unexported = [(w, n) for w, m, names in imports if m == "spire_llamaindex" for n in names]
    unexported = [(w, n) for w, n in unexported if n not in spire_llamaindex.__all__]
    assert not unexported, f"names spire_llamaindex does not export (add them to its __all__): {unexported}"


def test_nothing_below_the_app_imports_it() -> None:
    graph = import_graph(ROOT, (*BELOW, "spire_app"))
    upward = sorted(
        (m, t) for m, ts in graph.items() if not m.startswith("spire_app") for t in ts if t.startswith("spire_app")
    )
    assert not upward, f"the core, the runtime and the adapters must not import the product: {upward}"
    assert not cycles(graph)


def test_every_app_module_is_scanned() -> None:
    names = set(modules(ROOT, ("spire_app",)))
    assert {"spire_app", "spire_app.cli", "spire_app.serve", "spire_app.store", "spire_app.ray_ingest"} <= names
