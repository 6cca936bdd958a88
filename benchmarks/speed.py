"""Ingestion speed: parse + segment + global-context rendering of every sentence of every page.

Compared in the same run with a floor (``lxml.html.fromstring(...).text_content()``) and
with LangChain's ``HTMLHeaderTextSplitter`` over the same pages::

    python -m benchmarks.speed [--pages DIR ...] [--json]

Default pages: ``../shared/bench/docs/pages`` and ``../shared/bench/wtq/pages``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import lxml.html

from spire_core import parse_html, seeds

BENCH = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
DEFAULT_DIRS = [BENCH / "docs" / "pages", BENCH / "wtq" / "pages"]


def _time(fn: Callable[[str, bytes], int], pages: list[tuple[str, bytes]]) -> tuple[float, int]:
    start = time.perf_counter()
    units = sum(fn(name, data) for name, data in pages)
    return time.perf_counter() - start, units


def spire(name: str, data: bytes) -> int:
    return len(seeds(parse_html(data, doc_id=name)))


def floor(name: str, data: bytes) -> int:
    return len(lxml.html.fromstring(data).text_content())


def html_header(name: str, data: bytes) -> int:
    from langchain_text_splitters import HTMLHeaderTextSplitter

    splitter = HTMLHeaderTextSplitter([("h1", "h1"), ("h2", "h2"), ("h3", "h3")])
    return len(splitter.split_text(data.decode("utf-8", "replace")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=Path, nargs="*", default=DEFAULT_DIRS, help="folders of *.html pages")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    files = sorted(f for d in args.pages for f in d.rglob("*.html"))
    if not files:
        print("no pages found", file=sys.stderr)
        return 2
    pages = [(str(f), f.read_bytes()) for f in files]
    mb = sum(len(d) for _, d in pages) / 1e6
    result: dict[str, float | int] = {"pages": len(pages), "megabytes": round(mb, 2), "cpus": os.cpu_count() or 0}
    for name, fn in (("floor", floor), ("spire", spire), ("html_header", html_header)):
        seconds, units = _time(fn, pages)
        result[f"{name}_seconds"] = round(seconds, 2)
        result[f"{name}_pages_per_s"] = round(len(pages) / seconds, 2)
        result[f"{name}_mb_per_s"] = round(mb / seconds, 2)
        if name == "spire":
            result["spire_sentences"] = units
            result["spire_sentences_per_s"] = round(units / seconds, 1)
    result["spire_vs_floor"] = round(result["floor_pages_per_s"] / result["spire_pages_per_s"], 1)
    result["spire_vs_html_header"] = round(result["spire_pages_per_s"] / result["html_header_pages_per_s"], 2)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>24}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
