"""Benchmark runner over a bench dataset folder (``../shared/bench/README.md``).

    python -m benchmarks.run --dataset ../shared/bench/docs/dev.jsonl --system spire --out preds.jsonl
    python -m benchmarks.run --dataset ../shared/bench/wtq/dev.jsonl --all --out bench-out/wtq

One process parses each page once, builds every system's units, embeds each distinct text
once (on-disk cache, :mod:`benchmarks.embedding_cache`), ranks the units of each
question's corpus by cosine similarity to the question, and lets each system select under
the budget. Predictions are scored by the dataset's own judge (``score.py``, found by
walking up from the dataset file, or ``--judge``); the table goes to stdout, timings and
progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from spire_runtime.model import PRECISIONS

from .baselines import Baseline
from .embedding_cache import DEFAULT_ROOT, Embedder, EmbeddingCache, SentenceTransformerEmbedder
from .shapes import question_shape
from .systems import (
    SYSTEMS,
    ConfigError,
    Page,
    Prediction,
    Question,
    Ranking,
    System,
    Unit,
    import_file,
    make_system,
    openai_chat,
)

#: judge metrics shown in the table, in order
COLUMNS = ("total", "helpful", "ratio", "answer_recall", "interpretable", "tokens", "over_budget")
#: the first k citations a reader sees: ``answer_recall`` of each (the judge's ``at_ranks``), shown as ``first-k``
FIRST = (1, 3, 5)
#: the runner's own figure in the table: the citations a question gets, on average
CITATIONS = "mean citations per question"
#: judge metrics shown per question class
CLASS_COLUMNS = ("answer_recall", "interpretable")
#: page files a dataset folder is searched for (HTML and Markdown, read by ``spire_core.parse_page``)
PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".md", ".markdown")


# -- dataset -----------------------------------------------------------------------------
@dataclass
class Dataset:
    """Questions of one ``*.jsonl`` file and the pages they search (ids relative to its folder)."""

    file: Path
    questions: list[Question]
    pages: dict[str, Page] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.file.parent


def all_pages(root: Path) -> tuple[str, ...]:
    """Every page under ``root/pages``, as ids relative to ``root``, sorted."""
    found = [p for p in (root / "pages").rglob("*") if p.is_file() and p.suffix.lower() in PAGE_SUFFIXES]
    return tuple(sorted(p.relative_to(root).as_posix() for p in found))


def load_dataset(file: str | Path, *, limit: int | None = None) -> Dataset:
    """Read the question lines (the first ``limit`` ones) and index the pages they search."""
    file = Path(file).resolve()
    with open(file, encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    if limit is not None:
        lines = lines[:limit]
    every: tuple[str, ...] | None = None
    questions: list[Question] = []
    for line in lines:
        corpus = line.get("corpus")
        if corpus is None:
            every = every if every is not None else all_pages(file.parent)
            pages = every
        else:
            pages = tuple(dict.fromkeys(str(p) for p in corpus))
        questions.append(Question(str(line["id"]), str(line["question"]), pages, line))
    dataset = Dataset(file, questions)
    for q in questions:
        for pid in q.corpus:
            if pid not in dataset.pages:
                dataset.pages[pid] = Page(dataset.root, pid)
    missing = [pid for pid, page in dataset.pages.items() if not page.file.is_file()]
    if missing:
        raise ConfigError(f"{len(missing)} corpus page(s) not found under {dataset.root}, e.g. {missing[0]}")
    if not dataset.pages:
        _log(
            f"warning: {file.name} searches no page (no {'/'.join(PAGE_SUFFIXES)} file under "
            f"{dataset.root / 'pages'} and no corpus listed): every question will go unanswered"
        )
    return dataset


def find_judge(dataset_file: Path, judge: str | Path | None = None) -> ModuleType:
    """Import the judge: ``judge`` if given, else the first ``score.py`` above the dataset file."""
    if judge is None:
        for folder in Path(dataset_file).resolve().parents:
            if (folder / "score.py").is_file():
                judge = folder / "score.py"
                break
        else:
            raise ConfigError(f"no score.py above {dataset_file}: pass --judge PATH")
    try:
        return import_file(Path(judge), "bench_judge")
    except ImportError as err:
        raise ConfigError(f"cannot import the judge {judge}") from err


# -- running -----------------------------------------------------------------------------
@dataclass
class Timing:
    units: float = 0.0
    select: float = 0.0
    count: int = 0


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_units(
    dataset: Dataset, systems: Sequence[System], *, progress: bool = True
) -> tuple[dict[str, dict[str, list[Unit]]], dict[str, Timing]]:
    """Units per system per page; systems with the same ``units_key`` share one computation."""
    from tqdm import tqdm

    by_key: dict[str, dict[str, list[Unit]]] = {}
    units: dict[str, dict[str, list[Unit]]] = {}
    timing: dict[str, Timing] = {}
    for system in systems:
        key = units_key(system)
        timing[system.name] = Timing()
        if key not in by_key:
            start = time.perf_counter()
            pages: dict[str, list[Unit]] = {}
            bar = tqdm(
                dataset.pages.values(), desc=f"units {system.name}", unit="page", file=sys.stderr, disable=not progress
            )
            for page in bar:
                pages[page.id] = system.units(page)
            by_key[key] = pages
            timing[system.name].units = time.perf_counter() - start
        units[system.name] = by_key[key]
        timing[system.name].count = sum(len(u) for u in by_key[key].values())
    return units, timing


def units_key(system: System) -> str:
    """Systems whose units are the same (``spire`` and ``spire-filter``; ``fixed-256`` and ``fused-256``) share them."""
    from .systems import Spire

    if isinstance(system, Spire):
        return f"spire:{system.policy!r}:{system.unit}"
    if isinstance(system, Baseline):
        return system.cut()
    return system.name


def run(
    dataset: Dataset,
    systems: Sequence[System],
    cache: EmbeddingCache,
    *,
    budget: int = 1000,
    progress: bool = True,
) -> tuple[dict[str, list[Prediction]], dict[str, Timing]]:
    """Every system's predictions for every question of ``dataset``."""
    units, timing = build_units(dataset, systems, progress=progress)

    start = time.perf_counter()
    texts: dict[str, int] = {}
    for q in dataset.questions:
        texts.setdefault(q.question, len(texts))
    for pages in units.values():
        for page_units in pages.values():
            for u in page_units:
                texts.setdefault(u.text, len(texts))
    matrix = cache.embed(list(texts), desc="embedding")
    _log(f"embedding: {len(texts)} distinct texts, {cache.computed} computed, {time.perf_counter() - start:.1f}s")

    predictions: dict[str, list[Prediction]] = {}
    for system in systems:
        start = time.perf_counter()
        pages = units[system.name]
        page_rows = {
            pid: np.fromiter((texts[u.text] for u in us), dtype=np.int64, count=len(us)) for pid, us in pages.items()
        }
        corpora: dict[tuple[str, ...], tuple[list[Unit], np.ndarray]] = {}
        out: list[Prediction] = []
        for q in dataset.questions:
            if q.corpus not in corpora:
                if len(corpora) >= 8:  # bounded: per-question corpora rarely repeat
                    corpora.pop(next(iter(corpora)))
                corpus_units = [u for pid in q.corpus for u in pages[pid]]
                rows = np.concatenate([page_rows[pid] for pid in q.corpus]) if q.corpus else np.zeros(0, np.int64)
                corpora[q.corpus] = (corpus_units, matrix[rows] if len(rows) else np.zeros((0, 1), np.float32))
            corpus_units, vectors = corpora[q.corpus]
            scores = vectors @ matrix[texts[q.question]] if corpus_units else np.zeros(0, np.float32)
            out.append(system.select(q, Ranking(corpus_units, scores), budget, dataset.pages))
        predictions[system.name] = out
        timing[system.name].select = time.perf_counter() - start
        t = timing[system.name]
        _log(f"{system.name}: {t.count} units in {t.units:.1f}s, selection {t.select:.1f}s")
    return predictions, timing


# -- output ------------------------------------------------------------------------------
def write_predictions(path: Path, predictions: Sequence[Prediction]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for p in predictions:
            fh.write(p.to_json() + "\n")


def score(judge: ModuleType, dataset: Dataset, predictions: Sequence[Prediction], budget: int) -> dict[str, Any]:
    """The judge's metrics for ``predictions`` (as written to disk), with ``at`` (the figures of the
    first 1, 3 and 5 citations, :data:`FIRST`) when the judge has ``at_ranks``, and
    :data:`CITATIONS` (citations listed per question)."""
    lines = [json.loads(p.to_json()) for p in predictions]
    questions = [q.raw for q in dataset.questions]
    out = dict(judge.score(questions, lines, budget))
    if hasattr(judge, "at_ranks"):
        out["at"] = dict(judge.at_ranks(questions, lines, budget, list(FIRST)))
    out[CITATIONS] = round(sum(len(p.citations) for p in predictions) / len(predictions), 2) if predictions else 0.0
    return out


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table, the first column left-aligned and the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
            + " |"
        )

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def table(scores: Mapping[str, Mapping[str, Any]]) -> str:
    """A Markdown table: systems as rows; the judge's metrics, ``answer_recall`` of the first k
    citations (``first-k``: blank with a judge that has no ``at_ranks``) and :data:`CITATIONS` as columns."""

    def first(s: Mapping[str, Any], k: int) -> str:
        return str(s.get("at", {}).get(str(k), {}).get("answer_recall", ""))

    return markdown_table(
        ["system", *COLUMNS, *(f"first-{k}" for k in FIRST), CITATIONS],
        [
            [name, *(str(s.get(c, "")) for c in COLUMNS), *(first(s, k) for k in FIRST), str(s.get(CITATIONS, ""))]
            for name, s in scores.items()
        ],
    )


def question_classes(question: Question) -> list[str]:
    """The classes a question is reported in: ``tag:<tag>`` for each of its tags, ``shape:<shape>``."""
    tags = question.raw.get("tags") or []
    return [*(f"tag:{t}" for t in tags), f"shape:{question_shape(question.question)}"]


def class_scores(
    judge: ModuleType, dataset: Dataset, predictions: Sequence[Prediction], budget: int
) -> dict[str, dict[str, Any]]:
    """The judge's metrics on each class of questions (:func:`question_classes`), classes sorted."""
    members: dict[str, list[int]] = {}
    for k, q in enumerate(dataset.questions):
        for name in question_classes(q):
            members.setdefault(name, []).append(k)
    lines = [json.loads(p.to_json()) for p in predictions]
    return {
        name: dict(judge.score([dataset.questions[k].raw for k in ks], [lines[k] for k in ks], budget))
        for name, ks in sorted(members.items())
    }


def class_table(per_system: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """A Markdown table: question classes as rows, ``answer_recall / interpretable`` of each system as columns."""
    names = list(per_system)
    classes = sorted({c for scores in per_system.values() for c in scores})
    rows = []
    for c in classes:
        first = next(s[c] for s in per_system.values() if c in s)
        cells = [
            " / ".join(str(per_system[n][c].get(m, "")) for m in CLASS_COLUMNS) if c in per_system[n] else ""
            for n in names
        ]
        rows.append([c, str(first.get("questions", "")), *cells])
    return markdown_table(["class", "questions", *names], rows)


# -- command line ------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True, help="a bench question file (*.jsonl) next to its pages/ folder")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--system", action="append", choices=SYSTEMS, help="a system to run (repeatable)")
    which.add_argument("--all", action="store_true", help="run every system; --out is then a folder")
    ap.add_argument("--out", required=True, help="predictions file (one system) or folder (--all, several)")
    ap.add_argument("--budget", type=int, default=1000, help="token budget per question (judge's count)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions")
    ap.add_argument("--judge", default=None, help="path to score.py (default: found above the dataset)")
    ap.add_argument("--llm-base-url", default=os.environ.get("SPIRE_LLM_BASE_URL"), help="OpenAI-compatible API base")
    ap.add_argument("--llm-model", default=os.environ.get("SPIRE_LLM_MODEL", "default"), help="model name to ask for")
    ap.add_argument("--llm-api-key", default=os.environ.get("OPENAI_API_KEY"), help="API key (default $OPENAI_API_KEY)")
    ap.add_argument("--cache-dir", default=str(DEFAULT_ROOT), help="embedding cache folder ('' disables it)")
    ap.add_argument(
        "--units-cache", default=str(DEFAULT_ROOT.parent / "units"), help="baseline units cache folder ('' disables it)"
    )
    ap.add_argument("--batch-size", type=int, default=64, help="embedding batch size")
    ap.add_argument("--device", default="cpu", help="where the model embeds (torch device: cpu, cuda)")
    ap.add_argument(
        "--precision", choices=PRECISIONS, default="auto", help="embedding precision (auto: bf16 where the CPU has it)"
    )
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    return ap.parse_args(argv)


def make_systems(names: Sequence[str], args: argparse.Namespace, *, explicit: bool) -> list[System]:
    """The systems to run; without an endpoint ``spire-filter`` is an error when asked for, else skipped."""
    llm: Callable[[str], str] | None = None
    if args.llm_base_url:
        llm = openai_chat(args.llm_base_url, args.llm_model, api_key=args.llm_api_key)
    systems: list[System] = []
    for name in names:
        if name == "spire-filter" and llm is None and not explicit:
            _log("note: spire-filter skipped (no --llm-base-url given)")
            continue
        system = make_system(name, llm=llm)
        if isinstance(system, Baseline) and args.units_cache:
            system.cache_dir = Path(args.units_cache)
        systems.append(system)
    return systems


def main(argv: Sequence[str] | None = None, *, embedder: Embedder | None = None) -> int:
    """Run the benchmark; ``embedder`` replaces the packaged model (tests inject a fake one)."""
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    names = list(SYSTEMS) if args.all else list(dict.fromkeys(args.system))
    try:
        systems = make_systems(names, args, explicit=not args.all)
        dataset = load_dataset(args.dataset, limit=args.limit)
        judge = find_judge(dataset.file, args.judge)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    single = not args.all and len(systems) == 1
    out = Path(args.out)
    started = time.perf_counter()
    model = embedder or SentenceTransformerEmbedder(
        batch_size=args.batch_size, device=args.device, precision=args.precision, progress=not args.no_progress
    )
    cache = EmbeddingCache(model, args.cache_dir or None, progress=not args.no_progress)
    predictions, timing = run(dataset, systems, cache, budget=args.budget, progress=not args.no_progress)
    scores: dict[str, dict[str, Any]] = {}
    classes: dict[str, dict[str, dict[str, Any]]] = {}
    for system in systems:
        preds = predictions[system.name]
        write_predictions(out if single else out / f"{system.name}.jsonl", preds)
        scores[system.name] = score(judge, dataset, preds, args.budget)
        classes[system.name] = class_scores(judge, dataset, preds, args.budget)
    if not single:
        summary = {
            "dataset": str(dataset.file),
            "budget": args.budget,
            "questions": len(dataset.questions),
            "scores": scores,
            "classes": classes,
            "seconds": {n: {"units": round(t.units, 2), "select": round(t.select, 2)} for n, t in timing.items()},
        }
        (out / "scores.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    _log(f"total wall time {time.perf_counter() - started:.1f}s")
    print(f"{dataset.file.parent.name}/{dataset.file.name}: {len(dataset.questions)} questions, budget {args.budget}")
    print(table(scores))
    print(f"\nper question class ({' / '.join(CLASS_COLUMNS)}):")
    print(class_table(classes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
