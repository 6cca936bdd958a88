"""``spire_core`` runs with only its declared dependencies installed.

A fresh interpreter gets an import hook that refuses every module that is neither in the
standard library nor installed by the core's declared requirements (followed through their
own requirements, without extras): the same imports a core-only venv would have. It then
imports ``spire_core`` and runs the method end to end (parse HTML and Markdown, segment,
global context, aggregate, render), which also exercises the core's lazy imports.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata

from packaging.requirements import Requirement

FORBIDDEN = ("torch", "onnx", "onnxruntime", "psycopg", "psycopg2", "llama_index", "langchain", "transformers", "ray")


def _closure(dist: str) -> set[str]:
    """The distributions ``dist`` requires (no extras), transitively, itself included."""
    seen: set[str] = set()
    todo = [dist]
    while todo:
        name = todo.pop()
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _allowed_modules() -> set[str]:
    dists = _closure("spire-retrieval")
    by_dist: dict[str, set[str]] = {}
    for module, owners in metadata.packages_distributions().items():
        for owner in owners:
            by_dist.setdefault(owner.lower().replace("_", "-"), set()).add(module)
    allowed = {"spire_core"}
    for d in dists:
        allowed |= by_dist.get(d.replace("_", "-"), set())
    return allowed


def test_core_imports_and_runs_with_its_declared_dependencies_only() -> None:
    allowed = _allowed_modules()
    assert not allowed & set(FORBIDDEN)
    script = textwrap.dedent(
        f"""
        import sys
        ALLOWED = {sorted(allowed)!r}
        class Refuse:
            def find_spec(self, name, path=None, target=None):
                top = name.partition(".")[0]
                if top in sys.stdlib_module_names or top in ALLOWED or top.startswith("_"):
                    return None
                raise ModuleNotFoundError(f"{{name}} is not a declared dependency of spire_core", name=name)
        sys.meta_path.insert(0, Refuse())
        import spire_core
        from spire_core import aggregate, Hit, parse_page, seeds, render, global_context
        doc = parse_page("<title>T</title><h1>Tools</h1><p>The hammer drives nails. It is heavy.</p>", doc_id="a")
        md = parse_page("# Guide\\n\\n| k | v |\\n|---|---|\\n| size | 3 |\\n", doc_id="b.md")
        hits = [Hit(s.doc_id, s.paths, 1.0) for d in (doc, md) for s in seeds(d)]
        out = aggregate(hits, documents={{"a": doc, "b.md": md}}, budget=200)
        text = "\\n".join(r.text for r in out)
        assert "hammer drives nails" in text and "Tools" in text and "size" in text, text
        bad = [m for m in sys.modules if m.partition(".")[0] in {FORBIDDEN!r}]
        assert not bad, bad
        print("core-only ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "core-only ok" in done.stdout


def test_no_runtime_or_framework_import_under_spire_core() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "spire_core"
    offenders = [
        f"{path.relative_to(root)}: {line.strip()}"
        for path in root.rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith(("import ", "from "))
        and line.split()[1].partition(".")[0] in (*FORBIDDEN, "spire_runtime", "spire_llamaindex", "spire_langchain")
    ]
    assert offenders == []
