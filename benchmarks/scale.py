"""Corpus-scale benchmark: the PostgreSQL 15 manual in Postgres + pgvector, ingested on Ray.

    python -m benchmarks.scale --json                   # the whole manual (~1,170 pages)
    python -m benchmarks.scale --pages 100 --json       # gold pages + the first 100 others

Fetches the manual from its Debian package (``apt-get download postgresql-doc-15``, unpacked
with ``dpkg -x`` under ``.cache/``, once), starts a throw-away Postgres with pgvector
(``pgserver``), and measures:

- ingestion through :func:`spire_app.ray_ingest.ray_index` with 1 and 2 local workers
  on the first ``--speed-pages`` pages (360: start-up, mostly model loading, is a fixed 20-50 s
  per run, a third of a 120-page run), each run's cluster confined to as many cores as it has
  workers (:func:`cores`): pages/s, units/s and seconds per stage;
- peak memory of the driver (sampled during ingestion) and of one embedding worker;
- the full corpus ingested with ``--workers`` workers: pages, units, database size on disk;
- query latency p50/p95 over the docs dev questions whose gold page is in the manual:
  embedding included, embedding excluded (pgvector search + SPIRE aggregation), and the bare
  pgvector search, each with a cold and a warm parsed-page cache;
- the judge's scores of SPIRE (through Postgres) and ``fixed-256`` (the runner's baseline,
  same model and budget) on the same questions and corpus;
- a new query process's first question (:func:`first_question`), its lexical index restored from
  the database and built from every page.

``--lexicon-only`` measures the last alone, over the corpus's pages stored without their units
(nothing embedded: minutes instead of the hour of the full run; the lexical index is built from the
pages alone):

    python -m benchmarks.scale --lexicon-only --json

The table goes to stdout (``--json``: one JSON object), progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spire_runtime.local_postgres import (
    UPSTREAM_PGSERVER,
    PgvectorUnusable,
    check_pgvector,
    local_postgres,
    pgserver_package,
)

__all__ = ["UPSTREAM_PGSERVER", "PgvectorUnusable", "check_pgvector", "pgserver_package", "postgres"]

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "scale"
PACKAGE = "postgresql-doc-15"
MANUAL_IN_PACKAGE = Path("usr/share/doc/postgresql-doc-15/html")
DOCS_DEV = ROOT.parent / "shared" / "bench" / "docs" / "dev.jsonl"
GOLD_PREFIX = "pages/postgresql/"


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the corpus --------------------------------------------------------------------------
def fetch_manual(cache: Path = CACHE) -> Path:
    """The manual's HTML folder, downloaded and unpacked under ``cache`` on first use."""
    html = cache / "manual" / MANUAL_IN_PACKAGE
    if html.is_dir() and any(html.glob("*.html")):
        return html
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if not list(debs.glob(f"{PACKAGE}_*.deb")):
        _log(f"downloading {PACKAGE} (apt-get download)")
        subprocess.run(["apt-get", "download", PACKAGE], cwd=debs, check=True, capture_output=True)
    deb = sorted(debs.glob(f"{PACKAGE}_*.deb"))[-1]
    subprocess.run(["dpkg", "-x", str(deb), str(cache / "manual")], check=True)
    return html


def manual_questions(dev: Path = DOCS_DEV) -> list[dict[str, Any]]:
    """The docs dev questions whose gold page is a PostgreSQL manual page, to be asked of the whole manual."""
    with open(dev, encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    return [{**q, "corpus": None} for q in lines if str(q["gold_doc"]).startswith(GOLD_PREFIX)]


def build_corpus(manual: Path, questions: Sequence[dict[str, Any]], pages: int | None, cache: Path = CACHE) -> Path:
    """A dataset folder: ``pages/postgresql/*.html`` links to the gold pages plus the first ``pages``
    others (all when None), and ``questions.jsonl``. Page ids match the judge's gold ids."""
    gold = sorted({Path(q["gold_doc"]).name for q in questions})
    others = [p.name for p in sorted(manual.glob("*.html")) if p.name not in gold]
    chosen = gold + (others if pages is None else others[:pages])
    folder = cache / f"corpus-{'all' if pages is None else pages}"
    target = folder / GOLD_PREFIX
    if folder.exists():
        shutil.rmtree(folder)
    target.mkdir(parents=True)
    for name in chosen:
        (target / name).symlink_to(manual / name)
    with open(folder / "questions.jsonl", "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q) + "\n")
    return folder


# -- measuring -----------------------------------------------------------------------------
@contextmanager
def peak_rss() -> Iterator[dict[str, float]]:
    """Samples this process's resident memory every 50 ms; yields ``{"start_mib", "peak_mib"}``."""
    import psutil

    proc = psutil.Process()
    out = {"start_mib": proc.memory_info().rss / 2**20, "peak_mib": 0.0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            out["peak_mib"] = max(out["peak_mib"], proc.memory_info().rss / 2**20)
            done.wait(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield out
    finally:
        done.set()
        thread.join()


@contextmanager
def cores(n: int) -> Iterator[None]:
    """This process, and the Ray cluster it starts, confined to ``n`` cores (all when fewer exist):
    a local cluster of ``n`` workers is then a node of ``n`` cores, its prepare and write stages
    included. Unconfined, a 1-worker run's other stages already use this machine's second core."""
    before = os.sched_getaffinity(0)
    if n < len(before):
        os.sched_setaffinity(0, sorted(before)[:n])
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds."""
    if not samples:
        return {"p50_ms": 0.0, "p95_ms": 0.0}
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(1000 * statistics.median(ordered), 1), "p95_ms": round(1000 * p95, 1)}


def ingest(
    files: Sequence[Path] | Path, uri: str, *, table: str, workers: int, root: Path, batch_pages: int
) -> dict[str, Any]:
    """One :func:`ray_index` run on a fresh local cluster of ``workers`` CPUs, with its figures."""
    from spire_app.ray_ingest import ray_index

    pages: Any = files if isinstance(files, Path) else list(files)
    with cores(workers), peak_rss() as driver:
        report = ray_index(
            pages, uri, table=table, address="local", workers=workers, root=root, batch_pages=batch_pages
        )
    if report.failed:
        _log(f"{len(report.failed)} page(s) failed, e.g. {next(iter(report.failed.items()))}")
    result = {
        "workers": workers,
        "pages": report.pages,
        "units": report.units,
        "failed": len(report.failed),
        "seconds": round(report.seconds, 1),
        "pages_per_s": round(report.pages_per_s, 3),
        "startup_seconds": round(report.startup_seconds, 1),
        "steady_pages_per_s": round(report.steady_pages_per_s, 3),
        "units_per_s": round(report.units / report.seconds, 1) if report.seconds else 0.0,
        "stage_seconds": {k: round(v, 1) for k, v in report.stage_seconds.items()},
        "embed_cpu_seconds": round(report.embed_cpu_seconds, 1),
        "driver_peak_mib": round(driver["peak_mib"], 1),
        "driver_growth_mib": round(driver["peak_mib"] - driver["start_mib"], 1),
        "worker_peak_mib": round(report.worker_peak_mib, 1),
        "lexicon_seconds": round(report.lexicon_seconds, 1),
    }
    _log(
        f"  {report.pages} pages, {report.units} units in {report.seconds:.0f}s: {report.pages_per_s:.3f} pages/s, "
        f"{report.steady_pages_per_s:.3f} after the {report.startup_seconds:.0f}s start-up"
    )
    return result


def database_size(uri: str, table: str) -> dict[str, float]:
    """Sizes on disk in MiB: the whole database, the units table (with its indexes), its HNSW index, the pages."""
    import psycopg2

    queries = {
        "database_mib": "SELECT pg_database_size(current_database())",
        "units_table_mib": f"SELECT pg_total_relation_size('data_{table}')",
        "hnsw_index_mib": f"SELECT pg_relation_size('data_{table}_embedding_idx')",
        "pages_table_mib": f"SELECT pg_total_relation_size('data_{table}_pages')",
    }
    with psycopg2.connect(uri) as conn, conn.cursor() as cur:
        out = {}
        for key, sql in queries.items():
            cur.execute(sql)
            out[key] = round(int(cur.fetchone()[0]) / 2**20, 1)
        cur.execute(f"SELECT count(*) FROM data_{table}")
        out["vectors"] = int(cur.fetchone()[0])
    return out


def query_spire(
    uri: str, table: str, questions: Sequence[dict[str, Any]], budget: int, pages: int
) -> tuple[list[Any], dict[str, Any]]:
    """SPIRE's predictions (through Postgres) and latencies: cold (every page parsed on first use,
    the default cache of 64 pages), then warm (a second retriever whose cache holds all ``pages``,
    filled by one untimed pass: the query cost with page parsing excluded)."""
    from llama_index.core.schema import QueryBundle
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from benchmarks.systems import Prediction, cite
    from spire_core.options import DEFAULT_FIRST_K
    from spire_llamaindex import SpireRetriever, default_embeddings
    from spire_llamaindex.postgres import postgres_index

    model = default_embeddings()
    index = postgres_index(uri, table=table, embed_model=model)
    retriever = SpireRetriever(index, budget=budget)
    store = index.vector_store
    model.get_query_embedding("warm up the model")
    latency: dict[str, dict[str, list[float]]] = {}
    predictions: list[Any] = []
    for cache in ("cold", "warm"):
        if cache == "warm":
            retriever = SpireRetriever(index, budget=budget, cache_size=max(64, pages))
            for q in questions:
                retriever.retrieve_subdocuments(q["question"])
        times: dict[str, list[float]] = {"with_embedding": [], "without_embedding": [], "pgvector_search": []}
        for q in questions:
            t0 = time.perf_counter()
            vector = model.get_query_embedding(q["question"])
            t1 = time.perf_counter()
            results = retriever.retrieve_subdocuments(QueryBundle(q["question"], embedding=vector))
            t2 = time.perf_counter()
            store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=DEFAULT_FIRST_K))
            t3 = time.perf_counter()
            times["with_embedding"].append(t2 - t0)
            times["without_embedding"].append(t2 - t1)
            times["pgvector_search"].append(t3 - t2)
            if cache == "cold":
                citations = [cite(c.doc_id, c.text, c.paths) for r in results for c in r.citations]
                predictions.append(Prediction(q["id"], citations, "\n\n".join(r.text for r in results)))
        latency[cache] = times
    summary = {cache: {k: percentiles(v) for k, v in times.items()} for cache, times in latency.items()}
    return predictions, summary


def fixed_chunks(corpus: Path, budget: int) -> tuple[Any, list[Any]]:
    """The runner's ``fixed-256`` predictions on the same corpus and questions (in memory, exact search)."""
    from benchmarks.embedding_cache import EmbeddingCache, SentenceTransformerEmbedder
    from benchmarks.run import load_dataset, run
    from benchmarks.systems import make_system

    dataset = load_dataset(corpus / "questions.jsonl")
    cache = EmbeddingCache(SentenceTransformerEmbedder(progress=False), progress=False)
    predictions, _ = run(dataset, [make_system("fixed-256")], cache, budget=budget, progress=False)
    return dataset, predictions["fixed-256"]


def first_question_here(uri: str, table: str, question: str, budget: int) -> dict[str, Any]:
    """This process's first question over index ``table`` (the model loaded first): seconds to the
    answer, the pages its lexical index parsed, and a second question's seconds."""
    from spire_llamaindex import SpireRetriever, default_embeddings
    from spire_llamaindex.postgres import postgres_index

    model = default_embeddings()
    model.get_query_embedding("warm up the model")
    clock = time.perf_counter()
    retriever = SpireRetriever(postgres_index(uri, table=table, embed_model=model), budget=budget)
    parsed = 0
    if retriever.lexicon is not None:
        parse = retriever.lexicon.pages

        def counted(doc_id: str) -> Any:
            nonlocal parsed
            parsed += 1
            return parse(doc_id)

        retriever.lexicon.pages = counted
    results = retriever.retrieve_subdocuments(question)
    first = time.perf_counter() - clock
    clock = time.perf_counter()
    retriever.retrieve_subdocuments(question + "?")
    return {
        "seconds": round(first, 2),
        "lexicon_pages_parsed": parsed,
        "results": len(results),
        "second_question_seconds": round(time.perf_counter() - clock, 3),
    }


def first_question(uri: str, table: str, question: str, budget: int) -> dict[str, dict[str, Any]]:
    """A new query process's first question, its lexical index restored from the database (what
    :func:`~spire_llamaindex.postgres.save_lexicon` saved before), then built from every page (the
    saved index dropped first: a later process builds it again until the next save)."""
    from spire_llamaindex.postgres import LexiconTable

    def run() -> dict[str, Any]:
        code = (
            "import json, sys; from benchmarks.scale import first_question_here as f; "
            "print(json.dumps(f(*json.loads(sys.argv[1]))))"
        )
        args = json.dumps([uri, table, question, budget])
        done = subprocess.run([sys.executable, "-c", code, args], cwd=ROOT, check=True, capture_output=True, text=True)
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    saved = LexiconTable(uri, table)
    out = {"restored": {**run(), "blob_mib": _blob_mib(uri, saved.table)}}
    saved.delete()
    out["built"] = run()
    return out


def _blob_mib(uri: str, name: str) -> float:
    import psycopg2

    with psycopg2.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT max(octet_length(data)) FROM {name}")
        return round(int(cur.fetchone()[0]) / 2**20, 2)


def store_pages(corpus: Path, uri: str, table: str) -> int:
    """The corpus's pages stored alone (no units) in index ``table``: what its lexical index is built from."""
    from spire_llamaindex import html_files, read_page
    from spire_llamaindex.postgres import page_store

    docstore = page_store(uri, table=table)
    files = html_files(corpus / "pages")
    for start in range(0, len(files), 64):
        batch = [read_page(path, corpus) for path in files[start : start + 64]]
        docstore.add_documents(batch, allow_update=True, store_text=True)
    return len(files)


# the throw-away server lives in spire_runtime (docs/scale.md's snippet starts one); re-exported here
postgres = local_postgres


# -- the run ---------------------------------------------------------------------------------
def measure(args: argparse.Namespace, stage: Callable[[str], None] = _log) -> dict[str, Any]:
    """Every figure of the benchmark, as one JSON-ready dict."""
    from benchmarks.run import find_judge, score
    from spire_llamaindex.postgres import page_store, save_lexicon

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    manual = fetch_manual(args.cache)
    questions = manual_questions(args.questions)
    corpus = build_corpus(manual, questions, args.pages, args.cache)
    files = sorted((corpus / GOLD_PREFIX).glob("*.html"))
    if args.lexicon_only:
        load = [round(x, 2) for x in os.getloadavg()]
        with postgres() as uri:
            stage(f"storing the corpus's {len(files)} pages (no units)")
            pages = store_pages(corpus, uri, "spire")
            stage("saving the lexical index")
            clock = time.perf_counter()
            if not save_lexicon(page_store(uri, table="spire")):
                raise RuntimeError("the lexical index was not saved (see the log)")
            saved = round(time.perf_counter() - clock, 1)
            stage("a new process's first question, the lexical index restored, then built")
            first = first_question(uri, "spire", questions[0]["question"], args.budget)
        return {"corpus_pages": pages, "load_average_at_start": load, "lexicon_save_seconds": saved, **first}
    out: dict[str, Any] = {
        "manual_pages": len(list(manual.glob("*.html"))),
        "corpus_pages": len(files),
        "questions": len(questions),
        "budget": args.budget,
        "batch_pages": args.batch_pages,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    with postgres() as uri:
        speed = files[: args.speed_pages]
        out["speed"] = []
        for workers in args.speed_workers:
            stage(f"ingesting {len(speed)} pages with {workers} worker(s)")
            run = ingest(
                speed, uri, table=f"speed_{workers}", workers=workers, root=corpus, batch_pages=args.batch_pages
            )
            out["speed"].append(run)
        base = out["speed"][0]["steady_pages_per_s"]
        for run in out["speed"]:  # once the workers are up: start-up (model loading) is a fixed cost per worker
            run["speedup"] = round(run["steady_pages_per_s"] / base, 2) if base else 0.0
        stage(f"ingesting the corpus ({len(files)} pages) with {args.workers} worker(s)")
        out["corpus"] = ingest(
            corpus / "pages", uri, table="spire", workers=args.workers, root=corpus, batch_pages=args.batch_pages
        )
        out["corpus"].update(database_size(uri, "spire"))
        stage(f"asking {len(questions)} questions")
        spire_predictions, out["latency"] = query_spire(uri, "spire", questions, args.budget, len(files))
        stage("a new process's first question, the lexical index restored, then built")
        out["first_question"] = first_question(uri, "spire", questions[0]["question"], args.budget)
    stage("fixed-256 on the same corpus")
    dataset, fixed_predictions = fixed_chunks(corpus, args.budget)
    judge = find_judge(DOCS_DEV, args.judge)
    out["quality"] = {
        "spire": score(judge, dataset, spire_predictions, args.budget),
        "fixed-256": score(judge, dataset, fixed_predictions, args.budget),
    }
    return out


def table(result: dict[str, Any]) -> str:
    """The README table of a :func:`measure` result."""
    rows = [
        f"corpus: {result['corpus_pages']} of the manual's {result['manual_pages']} pages, "
        f"{result['questions']} questions, budget {result['budget']}",
        "",
        "| run | pages | units | pages/s | steady p/s | speedup | prepare s | embed s (CPU) | write s | driver MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, run in [*((f"{r['workers']} worker(s)", r) for r in result["speed"]), ("corpus", result["corpus"])]:
        st = run["stage_seconds"]
        rows.append(
            f"| {name} | {run['pages']} | {run['units']} | {run['pages_per_s']} | {run['steady_pages_per_s']} | "
            f"{run.get('speedup', '')} | {st['prepare']} | {st['embed']} ({run['embed_cpu_seconds']}) | "
            f"{st['write']} | {run['driver_peak_mib']} |"
        )
    c = result["corpus"]
    rows += [
        "",
        f"database {c['database_mib']} MiB (units {c['units_table_mib']}, HNSW {c['hnsw_index_mib']}, "
        f"pages {c['pages_table_mib']}); {c['vectors']} vectors; worker peak {c['worker_peak_mib']} MiB",
        "",
        "| query latency (ms) | cold p50 | cold p95 | warm p50 | warm p95 |",
        "|---|---|---|---|---|",
    ]
    for key in ("with_embedding", "without_embedding", "pgvector_search"):
        cold, warm = result["latency"]["cold"][key], result["latency"]["warm"][key]
        rows.append(f"| {key} | {cold['p50_ms']} | {cold['p95_ms']} | {warm['p50_ms']} | {warm['p95_ms']} |")
    first = result["first_question"]
    rows += [
        "",
        f"first question of a new process: {first['restored']['seconds']} s with the lexical index restored "
        f"({first['restored']['blob_mib']} MiB, saved in {result['corpus']['lexicon_seconds']} s after ingesting), "
        f"{first['built']['seconds']} s built from {first['built']['lexicon_pages_parsed']} pages",
    ]
    rows += ["", "| system | answer_recall | interpretable | ratio | tokens |", "|---|---|---|---|---|"]
    for name, s in result["quality"].items():
        rows.append(
            f"| {name} | {s['answer_recall']:.3f} | {s['interpretable']:.3f} | {s['ratio']:.3f} | {s['tokens']:.0f} |"
        )
    return "\n".join(rows)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, help="gold pages plus the first N others (default: the whole manual)")
    p.add_argument("--speed-pages", type=int, default=360, help="pages of the 1-vs-2-worker runs (default 360)")
    p.add_argument("--speed-workers", type=int, nargs="+", default=[1, 2], help="worker counts timed (default 1 2)")
    p.add_argument("--workers", type=int, default=2, help="workers of the corpus ingestion (default 2)")
    p.add_argument("--batch-pages", type=int, default=2, help="pages per Ray batch (default 2: many small batches)")
    p.add_argument("--budget", type=int, default=1000)
    p.add_argument("--questions", type=Path, default=DOCS_DEV, help="the docs dev questions")
    p.add_argument("--judge", type=Path, help="score.py (default: found above the questions)")
    p.add_argument("--cache", type=Path, default=CACHE, help="where the manual and corpus go (default .cache/scale)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument(
        "--lexicon-only",
        action="store_true",
        help="only a new process's first question, lexical index restored and built, over the pages stored alone",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = measure(args)
    print(json.dumps(result, indent=2) if args.json or args.lexicon_only else table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
