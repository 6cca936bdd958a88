"""A LlamaIndex app built the stock way and the SPIRE way over the same pages, in one run.

    python -m benchmarks.app_speed [--dataset DIR] [--top-k 4] [--chunk-size 256] [--json]

Both apps use the same embedding model object (the packaged all-MiniLM-L6-v2, ``default_embeddings()``,
loaded and warmed before either is timed) over every page of the dataset (default: the bench's
40 ``docs`` dev pages), and are asked every dev question:

- **stock**: each page's text as a LlamaIndex user would hand it to a chunker (lxml's
  ``text_content()``, the extraction timed with the build), ``VectorStoreIndex.from_documents``
  with ``SentenceSplitter(chunk_size=256)``, ``as_retriever(similarity_top_k=4)``;
- **spire**: the pages as read (``read_page``), ``SpireRetriever.from_documents`` with the defaults
  (passages, the BM25 fusion, budget 1000).

Reported: build seconds (wall), the first query (the SPIRE retriever builds its BM25 index over
the stored pages then), and query p50/p95 milliseconds with the query embedding included, each
question asked once untimed first; ratios SPIRE / stock. The two apps' queries alternate so a
slower minute of a shared machine slows both. Not a test: numbers depend on the machine and load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import quantiles
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from .run import all_pages, load_dataset

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"


def _summary(ms: Sequence[float]) -> dict[str, float]:
    cuts = quantiles(ms, n=20)
    return {"p50_ms": round(cuts[9], 1), "p95_ms": round(cuts[18], 1)}


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run(dataset: Path, *, top_k: int = 4, chunk_size: int = 256) -> dict[str, Any]:
    import lxml.html
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    from spire_llamaindex import SpireRetriever, default_embeddings, read_page

    files = [dataset / pid for pid in all_pages(dataset)]
    questions = [q.question for q in load_dataset(next(dataset.glob("*.jsonl"))).questions]
    embed = default_embeddings()
    embed.get_text_embedding_batch(["warm up"] * 32)

    def stock_build() -> Any:
        docs = [Document(text=lxml.html.fromstring(f.read_bytes()).text_content(), id_=f.name) for f in files]
        index = VectorStoreIndex.from_documents(
            docs, embed_model=embed, transformations=[SentenceSplitter(chunk_size=chunk_size)]
        )
        return index.as_retriever(similarity_top_k=top_k)

    def spire_build() -> Any:
        return SpireRetriever.from_documents([read_page(f, dataset) for f in files], embed_model=embed)

    stock_s, stock = _timed(stock_build)
    spire_s, spire = _timed(spire_build)
    stock_first, _ = _timed(lambda: stock.retrieve(questions[0]))
    spire_first, _ = _timed(lambda: spire.retrieve(questions[0]))
    times: dict[str, list[float]] = {"stock": [], "spire": []}
    for q in questions:
        for name, retriever in (("stock", stock), ("spire", spire)):
            retriever.retrieve(q)  # warm: the question's pages parsed, as in a long-running app
            start = time.perf_counter()
            retriever.retrieve(q)
            times[name].append((time.perf_counter() - start) * 1000)
    stock_q, spire_q = _summary(times["stock"]), _summary(times["spire"])
    return {
        "dataset": str(dataset),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        "pages": len(files),
        "questions": len(questions),
        "stock": {"build_s": round(stock_s, 2), "first_query_ms": round(stock_first * 1000, 1), **stock_q},
        "spire": {"build_s": round(spire_s, 2), "first_query_ms": round(spire_first * 1000, 1), **spire_q},
        "build_x": round(spire_s / stock_s, 2),
        "query_p50_x": round(spire_q["p50_ms"] / stock_q["p50_ms"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=BENCH / "docs", help="bench-format folder (default bench docs)")
    ap.add_argument("--top-k", type=int, default=4, help="the stock app's similarity_top_k (default 4)")
    ap.add_argument("--chunk-size", type=int, default=256, help="the stock app's SentenceSplitter size (default 256)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not (args.dataset / "pages").is_dir():
        print(f"no pages folder under {args.dataset}", file=sys.stderr)
        return 2
    result = run(args.dataset, top_k=args.top_k, chunk_size=args.chunk_size)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['machine']}; {result['pages']} pages, {result['questions']} questions")
    print(f"{'app':<6} {'build s':>8} {'1st query ms':>13} {'p50 ms':>7} {'p95 ms':>7}")
    for name in ("stock", "spire"):
        r = result[name]
        print(f"{name:<6} {r['build_s']:>8} {r['first_query_ms']:>13} {r['p50_ms']:>7} {r['p95_ms']:>7}")
    print(f"spire / stock: build {result['build_x']}x, query p50 {result['query_p50_x']}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
