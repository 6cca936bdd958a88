"""``spire serve`` query latency over HTTP, the query embedding included.

    python -m benchmarks.serve_speed [--pages DIR | --store DIR] [--rounds 5] [--budget 1000] [--json]

Indexes ``--pages`` (default ``examples/pages``) into a temporary store with ``spire index``
(or uses ``--store``), starts ``spire serve --port 0`` in a subprocess as a user would, waits
for it to answer ``/health``, asks each question of ``benchmarks.llamaindex_speed.QUESTIONS``
once untimed, then ``--rounds`` times timed, one request at a time over one kept-alive HTTP
connection: p50/p95/max of the client's wall time per request (embedding, retrieval, JSON and
HTTP included). ``--in-process`` also times the same answers without HTTP
(``QueryService.answer`` + ``json.dumps`` in this process), which tells what HTTP adds. Not a
test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

from benchmarks.llamaindex_speed import EXAMPLES, QUESTIONS

ROOT = Path(__file__).resolve().parents[1]


def _spire(*args: str) -> list[str]:
    return [sys.executable, "-m", "spire_app.cli", *args]


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)}


def measure(store: Path, *, rounds: int, budget: int, startup_timeout: float = 600) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        _spire("serve", "--store", str(store), "--port", "0", "--budget", str(budget)),
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "serving STORE on http://127.0.0.1:PORT (...)"
        if not line:
            raise RuntimeError(f"spire serve exited with code {proc.wait(startup_timeout)}")
        url = urllib.parse.urlsplit(line.split(" on ", 1)[1].split()[0])
        startup = time.perf_counter() - started
        conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)

        def ask(question: str) -> dict[str, Any]:
            conn.request("GET", "/query?" + urllib.parse.urlencode({"q": question}))
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"{response.status}: {body[:200]!r}")
            payload: dict[str, Any] = json.loads(body)
            return payload

        for q in QUESTIONS:  # untimed: lazy imports, first-use allocations
            ask(q)
        times: list[float] = []
        for _ in range(rounds):
            for q in QUESTIONS:
                start = time.perf_counter()
                ask(q)
                times.append(time.perf_counter() - start)
        conn.close()
    finally:
        proc.terminate()
        proc.wait(30)
    times.sort()
    return {
        "requests": len(times),
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
        "startup_s": round(startup, 1),
        "budget": budget,
        "cpus": os.cpu_count(),
        "load": round(os.getloadavg()[0], 1),
        "python": platform.python_version(),
    }


def in_process(store: Path, *, rounds: int, budget: int) -> dict[str, Any]:
    """The same questions answered by a :class:`QueryService` in this process (no HTTP)."""
    from spire_app.serve import QueryService
    from spire_app.store import load_store

    service = QueryService(load_store(store), budget=budget)
    service.warm()
    for q in QUESTIONS:
        json.dumps(service.answer(q))
    times: list[float] = []
    for _ in range(rounds):
        for q in QUESTIONS:
            start = time.perf_counter()
            json.dumps(service.answer(q))
            times.append(time.perf_counter() - start)
    times.sort()
    return {
        "in_process_p50_ms": round(statistics.median(times) * 1000, 1),
        "in_process_p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--pages", type=Path, default=EXAMPLES)
    parser.add_argument("--store", type=Path, help="an existing store (skips indexing --pages)")
    parser.add_argument("--rounds", type=int, default=5, help="timed passes over the questions (default 5)")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--in-process", action="store_true", help="also time the answers without HTTP")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store
        if store is None:
            store = Path(tmp) / "store"
            subprocess.run(_spire("index", str(args.pages), "--store", str(store), "-q"), check=True, env=_env())
        result = {"store": str(args.store or args.pages), **measure(store, rounds=args.rounds, budget=args.budget)}
        if args.in_process:
            result.update(in_process(store, rounds=args.rounds, budget=args.budget))
            result["load"] = round(os.getloadavg()[0], 1)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{result['requests']} requests over {result['store']}: p50 {result['p50_ms']} ms, "
            f"p95 {result['p95_ms']} ms, max {result['max_ms']} ms (server started in {result['startup_s']} s; "
            f"{result['cpus']} CPUs, load {result['load']})"
        )
        if args.in_process:
            print(f"in process, no HTTP: p50 {result['in_process_p50_ms']} ms, p95 {result['in_process_p95_ms']} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
