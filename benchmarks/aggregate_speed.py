"""Speed of document-aware aggregation: ``python -m benchmarks.aggregate_speed [--json]``.

Every page of the docs benchmark is parsed and its sentence seeds built once. Each query
then draws ``--hits`` random seeds as a ranked hit list (no embedding, no search) and times
``aggregate(..., budget, size=approx_tokens)`` plus joining the delivered renderings.
Prints the median and 90th percentile milliseconds per query and the machine's CPU count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

from spire_core import Document, Hit, aggregate, approx_tokens, parse_html, seeds

PAGES = Path(__file__).resolve().parents[2] / "shared" / "bench" / "docs" / "pages"


def load(pages: Path) -> tuple[dict[str, Document], list[tuple[str, frozenset[tuple[int, ...]]]]]:
    docs: dict[str, Document] = {}
    units: list[tuple[str, frozenset[tuple[int, ...]]]] = []
    for page in sorted(pages.rglob("*.html")):
        doc_id = str(page.relative_to(pages))
        doc = parse_html(page.read_bytes(), doc_id=doc_id)
        docs[doc_id] = doc
        units.extend((doc_id, s.paths) for s in seeds(doc))
    return docs, units


def run_query(docs: dict[str, Document], hits: list[Hit], budget: int) -> str:
    results = aggregate(hits, documents=docs, budget=budget, size=approx_tokens)
    return "\n\n".join(r.text for r in results)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=Path, default=PAGES)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--hits", type=int, default=200)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of the timed loop")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    docs, units = load(args.pages)
    setup_s = time.perf_counter() - t0
    if not units:
        print(f"no seeds under {args.pages}", file=sys.stderr)
        return 1
    rng = random.Random(args.seed)
    queries = []
    for _ in range(args.queries):
        drawn = rng.sample(units, min(args.hits, len(units)))
        queries.append([Hit(d, p, 1.0 - k / len(drawn)) for k, (d, p) in enumerate(drawn)])

    run_query(docs, queries[0], args.budget)  # warm the per-document caches once
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    times: list[float] = []
    cpu: list[float] = []
    for hits in queries:
        t, c = time.perf_counter(), time.process_time()
        run_query(docs, hits, args.budget)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)

    times.sort()
    out = {
        "pages": len(docs),
        "seeds": len(units),
        "queries": len(times),
        "hits_per_query": min(args.hits, len(units)),
        "budget": args.budget,
        "median_ms": round(statistics.median(times), 2),
        "p90_ms": round(times[min(len(times) - 1, int(0.9 * len(times)))], 2),
        "max_ms": round(times[-1], 2),
        "cpu_median_ms": round(statistics.median(cpu), 2),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "setup_s": round(setup_s, 2),
        "cpu_count": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"{out['queries']} queries x {out['hits_per_query']} hits over {out['pages']} pages "
            f"({out['seeds']} seeds), budget {out['budget']}: median {out['median_ms']} ms, "
            f"p90 {out['p90_ms']} ms, max {out['max_ms']} ms per query (CPU time median "
            f"{out['cpu_median_ms']} ms) [setup {out['setup_s']} s, {out['cpu_count']} CPUs, "
            f"load {out['loadavg_1m']}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
