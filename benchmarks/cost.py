"""What an index costs: SPIRE's passage index and sentence index against a 256-token chunker.

    python -m benchmarks.cost [--json] [--no-index] [--datasets DIR ...]

Over every page of each bench set (``../shared/bench/docs`` and ``wtq``), in one run:

- ``tokens`` / ``vectors``: tokens sent to the embedding model (all-MiniLM-L6-v2 tokenizer,
  each text counted up to the model's 256-token window) and vectors stored, for SPIRE
  passages (the default), SPIRE sentence seeds and ``fixed-256`` (LangChain's
  ``RecursiveCharacterTextSplitter`` over the page's lxml text, as the benchmark runner cuts it);
- ``surface``: parse + units time (no embedding) against the floor, ``lxml`` parse + ``text_content()``;
  ``punkt_x`` is NLTK Punkt alone over that floor's text, and ``visit_x`` lxml's parse with one
  visit from Python of every element (its tag, attributes, text and tail), against the floor:
  what any tree built in Python pays before it builds anything;
- unless ``--no-index``: ``spire index`` of the first 20 pages and of all pages (half of
  each set at 20) in a subprocess, its peak memory (``ru_maxrss``), wall time and store
  bytes against the HTML bytes; then query latency p50/p95 over the all-pages store, the
  embedding excluded (a precomputed query vector) and included, on every dev question.

Surface times are CPU seconds of this process, the least of :data:`SURFACE_RUNS` runs each
(the floor takes a fraction of a second: one slow moment would skew every ratio). Each run
follows a run of the floor, and a system's ratio is to the least floor run among its own
(``floor_s`` of the system; the set's ``floor_s`` is the least of all): on a shared machine
the same work took 0.13 s in one run and 0.30 s in another. Index and query times are
wall-clock. Compare ratios within one run, not across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import quantiles
from typing import Any

import lxml.html
from lxml import etree

from spire_core import parse_html, seeds
from spire_core.indexing.passages import passages
from spire_core.options import MODEL_WINDOW
from spire_core.reading.punkt import sentence_spans

from .baselines import FixedChunks, model_token_count
from .run import all_pages
from .systems import Page

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
DEFAULT_DATASETS = [BENCH / "docs", BENCH / "wtq"]
#: page counts the indexing runs use (the last one is replaced by "every page")
INDEX_SIZES = (20,)


def _window_tokens(texts: Sequence[str], count: Callable[[str], int]) -> int:
    return sum(min(count(t), MODEL_WINDOW) for t in texts)


#: Each surface time is the least of this many runs.
SURFACE_RUNS = 3


class _Timer:
    """CPU seconds of this process (steadier than wall time on a shared machine), each time the
    least of :data:`SURFACE_RUNS` runs, every run right after one of the floor: a machine that
    is slower one minute than the next then slows a system and its floor alike."""

    def __init__(self, floor: Callable[[], Any]) -> None:
        self.floor = floor
        self.floor_runs: list[float] = []

    def timed(self, fn: Callable[[], Any]) -> tuple[float, float, Any]:
        """The least seconds of ``fn()``, the least of the floor runs between them, and ``fn()``'s value."""
        best, floor, out = float("inf"), float("inf"), None
        for _ in range(SURFACE_RUNS):
            floor = min(floor, _cpu(self.floor)[0])
            seconds, out = _cpu(fn)
            best = min(best, seconds)
        self.floor_runs.append(floor)
        return best, floor, out


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def surface(root: Path) -> dict[str, Any]:
    """Tokens, vectors and unit-building time of each system over every page of one bench set."""
    count = model_token_count()
    pages = [Page(root, pid) for pid in all_pages(root)]
    raws = [p.raw for p in pages]
    timer = _Timer(lambda: [lxml.html.document_fromstring(r).text_content() for r in raws])
    texts = timer.floor()
    sentence_spans("warm up")  # loads the Punkt parameters outside the timing
    # what the mandated sentence splitter alone costs on the same text: a floor no
    # sentence-seeded index can go under (its ratio says how much of the target is left)
    punkt_s, punkt_floor, _ = timer.timed(lambda: [sentence_spans(t) for t in texts])
    visit_s, visit_floor, _ = timer.timed(lambda: [_visit(r) for r in raws])
    ids = [p.id for p in pages]
    # each system parses afresh: parsed pages memoise sentences and context tables
    passage_s, passage_floor, units = timer.timed(
        lambda: [u.text for r, i in zip(raws, ids, strict=True) for u in passages(parse_html(r, doc_id=i))]
    )
    sentence_s, sentence_floor, sentence_units = timer.timed(
        lambda: [u.text for r, i in zip(raws, ids, strict=True) for u in seeds(parse_html(r, doc_id=i))]
    )
    fixed = FixedChunks()
    chunk_s, chunk_floor, chunks = timer.timed(lambda: [c for p in pages for c in fixed.chunks(p)])
    systems = {
        "spire": (units, passage_s, passage_floor),
        "spire-sentence": (sentence_units, sentence_s, sentence_floor),
        "fixed-256": (chunks, chunk_s, chunk_floor),
    }
    out: dict[str, Any] = {
        "pages": len(pages),
        "html_bytes": sum(map(len, raws)),
        "floor_s": round(min(timer.floor_runs), 3),
        "punkt_s": round(punkt_s, 3),
        "punkt_x": round(punkt_s / punkt_floor, 1),
        "visit_s": round(visit_s, 3),
        "visit_x": round(visit_s / visit_floor, 1),
    }
    base_tokens = _window_tokens(chunks, count)
    for name, (texts, seconds, floor) in systems.items():
        tokens = _window_tokens(texts, count)
        out[name] = {
            "tokens": tokens,
            "vectors": len(texts),
            "tokens_x": round(tokens / base_tokens, 2),
            "vectors_x": round(len(texts) / len(chunks), 2),
            "surface_s": round(seconds, 3),
            "floor_s": round(floor, 3),
            "surface_x": round(seconds / floor, 1),
        }
    return out


def _visit(raw: bytes) -> int:
    """Parse ``raw`` with lxml and read every element's tag, attributes, text and tail from Python (the count)."""
    n = 0
    for e in etree.fromstring(raw, etree.HTMLParser(huge_tree=True)).iter():
        _ = (e.tag, e.items(), e.text, e.tail)
        n += 1
    return n


def _page_folder(datasets: Sequence[Path], limit: int | None, into: Path) -> tuple[int, int]:
    """Links to the first ``limit`` pages (shared evenly between the sets) under ``into``: (pages, HTML bytes)."""
    lists = [(root, all_pages(root)) for root in datasets]
    share = None if limit is None else max(1, limit // len(lists))
    n = size = 0
    for root, ids in lists:
        for pid in ids[:share]:
            target = into / root.name / pid
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink((root / pid).resolve(), target)
            n += 1
            size += (root / pid).stat().st_size
    return n, size


def index_run(datasets: Sequence[Path], limit: int | None, work: Path) -> dict[str, Any]:
    """``spire index`` of ``limit`` pages (None: all) in a subprocess: peak memory, time, store bytes."""
    pages_dir, store = work / f"pages-{limit or 'all'}", work / f"store-{limit or 'all'}"
    n, html_bytes = _page_folder(datasets, limit, pages_dir)
    code = "import sys; from spire_app.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "index", str(pages_dir), "--store", str(store), "--quiet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    stdout, stderr = proc.communicate()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"spire index failed: {stderr.decode(errors='replace')[-2000:]}")
    store_bytes = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    return {
        "pages": n,
        "html_bytes": html_bytes,
        "peak_mb": round(usage.ru_maxrss / 1024),  # KiB on Linux
        "seconds": round(seconds, 1),
        "store_bytes": store_bytes,
        "store_x": round(store_bytes / html_bytes, 2),
        "store": str(store),
        "report": stdout.decode(errors="replace").strip(),
    }


def query_latency(store: Path, questions: Sequence[str]) -> dict[str, Any]:
    """p50/p95 milliseconds of one retrieval over ``store``, the query embedding excluded and included."""
    from llama_index.core.schema import QueryBundle

    from spire_app.store import load_store

    opened = load_store(store)
    # warm caches: every page of the store stays parsed (the default LRU of 64 pages would
    # re-parse some on almost every question of a 140-page store, measuring parsing instead)
    retriever = opened.retriever(cache_size=max(64, len(opened.manifest.get("documents", ()))))
    embed = opened.index._embed_model
    vectors = [embed.get_query_embedding(q) for q in questions]
    for q, v in zip(questions, vectors, strict=True):  # warm: every page parsed, lazy imports done
        retriever.retrieve(QueryBundle(q, embedding=v))
    excluded: list[float] = []
    included: list[float] = []
    for q, v in zip(questions, vectors, strict=True):
        start = time.perf_counter()
        retriever.retrieve(QueryBundle(q, embedding=v))
        excluded.append((time.perf_counter() - start) * 1000)
    for q in questions:
        start = time.perf_counter()
        retriever.retrieve(q)
        included.append((time.perf_counter() - start) * 1000)

    def summary(ms: list[float]) -> dict[str, float]:
        cuts = quantiles(ms, n=20)
        return {"p50_ms": round(cuts[9], 1), "p95_ms": round(cuts[18], 1)}

    return {"queries": len(questions), "excluded": summary(excluded), "included": summary(included)}


def questions_of(datasets: Sequence[Path]) -> list[str]:
    """Every dev question of the sets, in file order."""
    out: list[str] = []
    for root in datasets:
        with open(root / "dev.jsonl", encoding="utf-8") as fh:
            out.extend(json.loads(line)["question"] for line in fh if line.strip())
    return out


def _logged(stage: str, value: dict[str, Any]) -> dict[str, Any]:
    """``value``, also printed to stderr as it comes (a long run that fails later keeps it)."""
    print(f"{stage}: {json.dumps(value)}", file=sys.stderr, flush=True)
    return value


def measure(datasets: Sequence[Path], *, index: bool = True) -> dict[str, Any]:
    """Every measurement, as one JSON-ready object."""
    result: dict[str, Any] = {"surface": {}}
    for root in datasets:
        result["surface"][root.name] = _logged(root.name, surface(root))
    if index:
        work = Path(tempfile.mkdtemp(prefix="spire-cost-"))
        try:
            runs = [_logged(f"index {n or 'all'}", index_run(datasets, n, work)) for n in (*INDEX_SIZES, None)]
            result["index"] = runs
            result["query"] = query_latency(Path(runs[-1]["store"]), questions_of(datasets))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for run in runs:
            run.pop("store")
    return result


def table(result: dict[str, Any]) -> str:
    """The README tables: cost per bench set, then indexing and querying."""
    lines = [
        "| set | system | tokens embedded (x fixed-256) | vectors (x fixed-256) | parse surface CPU s (x lxml floor) |",
        "|---|---|---|---|---|",
    ]
    for name, s in result["surface"].items():
        for system in ("spire", "spire-sentence", "fixed-256"):
            r = s[system]
            lines.append(
                f"| {name} | {system} | {r['tokens']:,} ({r['tokens_x']}x) | {r['vectors']:,} ({r['vectors_x']}x) "
                f"| {r['surface_s']} ({r['surface_x']}x) |"
            )
    lines.append("")
    lines.append(
        "NLTK Punkt alone over the floor's text: "
        + ", ".join(f"{name} {s['punkt_x']}x the floor" for name, s in result["surface"].items())
        + "; lxml's parse and one visit of every element from Python: "
        + ", ".join(f"{name} {s['visit_x']}x" for name, s in result["surface"].items())
    )
    if "index" in result:
        lines += ["", "| pages indexed | peak memory MB | seconds | store bytes (x HTML) |", "|---|---|---|---|"]
        for r in result["index"]:
            lines.append(f"| {r['pages']} | {r['peak_mb']} | {r['seconds']} | {r['store_bytes']:,} ({r['store_x']}x) |")
        q = result["query"]
        lines += [
            "",
            f"query latency over the {result['index'][-1]['pages']}-page store, {q['queries']} questions: "
            f"embedding excluded p50 {q['excluded']['p50_ms']} ms / p95 {q['excluded']['p95_ms']} ms; "
            f"included p50 {q['included']['p50_ms']} ms / p95 {q['included']['p95_ms']} ms",
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cost", description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", type=Path, default=DEFAULT_DATASETS, help="bench set folders")
    ap.add_argument(
        "--no-index", action="store_true", help="skip the embedded store runs (tokens, vectors, surface only)"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    result = measure(args.datasets, index=not args.no_index)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
