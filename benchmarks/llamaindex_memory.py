"""Peak memory of indexing pages with LlamaIndex: SPIRE's ``SpireRetriever.from_documents`` against a
stock ``VectorStoreIndex.from_documents`` (``SentenceSplitter`` defaults), same pages, same model.

    python -m benchmarks.llamaindex_memory [--pages DIR] [--runtime onnx|torch] [--json]

Each app runs in its own interpreter and reports its peak resident set
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``); ``baseline`` only imports LlamaIndex and loads
the packaged model (``default_embeddings()``) and embeds one text, what both apps pay before
indexing anything. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "pages"
APPS = ("baseline", "stock", "spire")


def _documents(pages: Path) -> list[Any]:
    from spire_llamaindex import page_files, read_page

    return [read_page(p, pages) for p in page_files(pages)]


def run_app(app: str, pages: Path, runtime: str = "onnx") -> dict[str, Any]:
    """Run ``app`` in this process; its peak RSS (MiB) and what it built."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from spire_llamaindex import default_embeddings

    model = default_embeddings(runtime="torch" if runtime == "torch" else "onnx")
    model.get_text_embedding("warm up")  # the model's session and first buffers, as both apps pay
    documents = _documents(pages)
    start = time.perf_counter()
    nodes = 0
    if app == "stock":
        from llama_index.core import VectorStoreIndex
        from llama_index.core.node_parser import SentenceSplitter

        index = VectorStoreIndex.from_documents(documents, embed_model=model, transformations=[SentenceSplitter()])
        nodes = len(index.index_struct.nodes_dict)
    elif app == "spire":
        from llama_index.core import VectorStoreIndex

        from spire_llamaindex import SpireRetriever

        built = SpireRetriever.from_documents(documents, embed_model=model).index
        assert isinstance(built, VectorStoreIndex)
        nodes = len(built.index_struct.nodes_dict)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "app": app,
        "peak_mib": round(peak_kib / 1024, 1),
        "nodes": nodes,
        "seconds": round(time.perf_counter() - start, 1),
        "page_bytes": sum(len(d.text.encode("utf-8")) for d in documents),
    }


def measure(pages: Path, runtime: str = "onnx") -> list[dict[str, Any]]:
    """Each app in a fresh interpreter."""
    out = []
    for app in APPS:
        proc = subprocess.run(
            [
                sys.executable,
                *("-m", "benchmarks.llamaindex_memory", "--app", app, "--pages", str(pages), "--runtime", runtime),
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=Path, default=EXAMPLES)
    parser.add_argument("--app", choices=APPS, help="run one app in this process (what measure() starts)")
    parser.add_argument("--runtime", choices=("onnx", "torch"), default="onnx", help="default_embeddings' runtime")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.app:
        print(json.dumps(run_app(args.app, args.pages, args.runtime)))
        return 0
    rows = measure(args.pages, args.runtime)
    if args.json:
        print(json.dumps(rows))
        return 0
    base = next(r["peak_mib"] for r in rows if r["app"] == "baseline")
    stock = next(r["peak_mib"] for r in rows if r["app"] == "stock")
    for r in rows:
        print(
            f"{r['app']:9} peak {r['peak_mib']:7.1f} MiB  (+{r['peak_mib'] - base:6.1f} over baseline)  "
            f"{r['nodes']:5} nodes  {r['seconds']:5.1f} s  x{r['peak_mib'] / stock:.2f} of stock"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
