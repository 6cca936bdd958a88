"""Distributed ingestion on Ray Data: pages -> parse + units -> embed -> Postgres, in bounded batches.

    from spire_app.ray_ingest import ray_index

    report = ray_index("site/", "postgresql://user:pw@db:5432/docs", address="auto", workers=8)

Three Ray Data stages run over the pages (``map_batches``, streaming, so the driver holds one
batch of small status rows at a time, never the pages or their vectors):

1. *prepare* (tasks): read the file, hash it, skip it when the database holds the same hash,
   parse it and build its units with :class:`~spire_llamaindex.SpireNodeParser`;
2. *embed* (a pool of ``workers`` actors, one core each, the model loaded once per actor);
3. *write* (``writers`` actors): a changed page's old units are deleted, the new units added to the
   ``PGVectorStore``, and the page stored in the ``PostgresDocumentStore`` last, so a run cut
   short is finished by the next one.

A page that cannot be read or parsed is reported in :attr:`IngestReport.failed` and skipped
(its old version, if any, is kept). After the stages, the driver brings the lexical index kept in
the database in step with the stored pages (:func:`spire_llamaindex.postgres.save_lexicon`: only
the pages added or changed since its last save are parsed), so query processes read it instead of
building it from every page. The result is the same index
:func:`spire_llamaindex.postgres.postgres_index` opens for :class:`~spire_llamaindex.SpireRetriever`.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from spire_core import SpireError
from spire_llamaindex import SpireNodeParser, embed_texts, html_files, read_page
from spire_llamaindex.postgres import page_store, save_lexicon, vector_store
from spire_runtime.defaults import DEFAULT_INDEX_NAME, MODEL_DIM

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

#: Pages per batch of the prepare and write stages (and per embedding call).
DEFAULT_BATCH_PAGES = 4
#: Statuses of a page in an :class:`IngestReport`.
ADDED, UPDATED, UNCHANGED, FAILED, EMPTY = "added", "updated", "unchanged", "failed", "empty"
STAGES = ("prepare", "embed", "write")


@dataclass
class IngestReport:
    """What :func:`ray_index` did: page ids by outcome, units written, time per stage."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: pages that could not be read or parsed: page id -> one-line reason (their old version is kept)
    failed: dict[str, str] = field(default_factory=dict)
    #: pages with no text (stored, without units)
    empty: list[str] = field(default_factory=list)
    units: int = 0
    workers: int = 0
    #: wall-clock seconds of the whole run (Ray start excluded)
    seconds: float = 0.0
    #: seconds until the first batch of pages was written (workers starting, models loading)
    startup_seconds: float = 0.0
    #: pages written after the first batch: with ``seconds - startup_seconds``, the steady throughput
    steady_pages: int = 0
    #: seconds spent inside each stage, summed over its workers
    stage_seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    #: CPU seconds of the embedding workers (against ``stage_seconds["embed"]``: how much of a core they got)
    embed_cpu_seconds: float = 0.0
    #: peak resident memory of one embedding worker, in MiB
    worker_peak_mib: float = 0.0
    #: whether the lexical index was saved in the database (``lexical=True``), and the seconds it took
    lexicon_saved: bool = False
    lexicon_seconds: float = 0.0

    @property
    def pages(self) -> int:
        return len(self.added) + len(self.updated) + len(self.unchanged) + len(self.failed) + len(self.empty)

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    @property
    def steady_pages_per_s(self) -> float:
        """Pages per second once every worker is up (the first batch and the start-up excluded)."""
        span = self.seconds - self.startup_seconds
        return self.steady_pages / span if self.steady_pages and span > 0 else 0.0


@dataclass(frozen=True)
class _Target:
    """Where the stages write: a database and an index name (picklable, sent to every worker)."""

    uri: str
    table: str
    embed_dim: int


@lru_cache(maxsize=4)
def _stores(target: _Target) -> tuple[Any, Any]:
    """The vector store and page store of ``target``, opened once per worker process."""
    return (
        vector_store(target.uri, table=target.table, embed_dim=target.embed_dim),
        page_store(target.uri, table=target.table),
    )


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _prepare(batch: dict[str, Any], *, root: str, target: _Target, parser: SpireNodeParser) -> dict[str, list[Any]]:
    """Read, hash-check, parse: one row per page with its status, source JSON and units JSON."""
    start = time.perf_counter()
    docstore = _stores(target)[1]
    out: dict[str, list[Any]] = {"doc_id": [], "status": [], "error": [], "source": [], "nodes": []}
    for ref in batch["path"]:
        path = Path(str(ref))
        doc_id, status, error, source, nodes = path.relative_to(root).as_posix(), FAILED, "", "", "[]"
        try:
            doc = read_page(path, root)
            old = docstore.get_document_hash(doc_id)
            if old == doc.hash:
                status = UNCHANGED
            else:
                units = parser.get_nodes_from_documents([doc])
                status = (UPDATED if old is not None else ADDED) if units else EMPTY
                source, nodes = doc.to_json(), json.dumps([n.to_dict() for n in units])
        except (SpireError, OSError, ValueError) as err:
            error = str(err).splitlines()[0] if str(err) else type(err).__name__
        for key, value in zip(out, (doc_id, status, error, source, nodes), strict=True):
            out[key].append(value)
    out["prepare_s"] = [(time.perf_counter() - start) / max(1, len(out["doc_id"]))] * len(out["doc_id"])
    return out


class _Embedder:
    """An embedding worker: loads the model once, embeds the units of a batch of pages."""

    def __init__(self, embed_model: Callable[[], BaseEmbedding]) -> None:
        import torch

        torch.set_num_threads(1)  # one worker = one core
        self.model = embed_model()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from llama_index.core.schema import MetadataMode, TextNode

        start, cpu = time.perf_counter(), time.process_time()
        pages = [[TextNode.from_dict(d) for d in json.loads(str(s))] for s in batch["nodes"]]
        flat = [n for ns in pages for n in ns]
        vectors = embed_texts(self.model, [n.get_content(MetadataMode.EMBED) for n in flat])
        for node, vector in zip(flat, vectors, strict=True):
            node.embedding = vector
        out = dict(batch)
        out["nodes"] = [json.dumps([n.to_dict() for n in ns]) for ns in pages]
        out["embed_s"] = [(time.perf_counter() - start) / max(1, len(pages))] * len(pages)
        out["embed_cpu_s"] = [(time.process_time() - cpu) / max(1, len(pages))] * len(pages)
        out["worker_mib"] = [_peak_mib()] * len(pages)
        return out


class _Writer:
    """The database writer: replaces a changed page's units, then stores the page (its hash) last."""

    def __init__(self, target: _Target) -> None:
        self.vectors, self.docstore = _stores(target)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        from llama_index.core.schema import Document, TextNode

        start = time.perf_counter()
        units = []
        for status, doc_id, source, nodes in zip(
            batch["status"], batch["doc_id"], batch["source"], batch["nodes"], strict=True
        ):
            if status not in (ADDED, UPDATED, EMPTY):
                units.append(0)
                continue
            if status != ADDED:
                self.vectors.delete(str(doc_id))
            page_units = [TextNode.from_dict(d) for d in json.loads(str(nodes))]
            if page_units:
                self.vectors.add(page_units)
            self.docstore.add_documents([Document.from_json(str(source))], allow_update=True, store_text=True)
            units.append(len(page_units))
        n = len(units)
        return {
            "doc_id": list(batch["doc_id"]),
            "status": list(batch["status"]),
            "error": list(batch["error"]),
            "units": units,
            "prepare_s": list(batch["prepare_s"]),
            "embed_s": list(batch["embed_s"]),
            "embed_cpu_s": list(batch["embed_cpu_s"]),
            "write_s": [(time.perf_counter() - start) / max(1, n)] * n,
            "worker_mib": list(batch["worker_mib"]),
        }


def _page_refs(pages: str | Path | Sequence[str | Path], root: str | Path | None) -> tuple[list[str], Path]:
    if isinstance(pages, (str, Path)):
        folder = Path(pages)
        if not folder.is_dir():
            raise SpireError(f"not a folder of pages: {str(folder)!r}")
        return [str(p) for p in html_files(folder)], Path(root) if root is not None else folder
    paths = [Path(p).absolute() for p in pages]
    if root is not None:
        base = Path(root).absolute()
    else:
        base = Path(os.path.commonpath([str(p.parent) for p in paths])) if paths else Path.cwd()
    return [str(p) for p in paths], base


def _rows(report: IngestReport, batches: Iterable[Any], clock: float) -> None:
    for number, batch in enumerate(batches):
        if number == 0:
            report.startup_seconds = time.perf_counter() - clock
        else:
            report.steady_pages += len(batch["doc_id"])
        for i, doc_id in enumerate(batch["doc_id"]):
            doc_id, status = str(doc_id), str(batch["status"][i])
            if status == FAILED:
                report.failed[doc_id] = str(batch["error"][i])
            else:
                getattr(report, status).append(doc_id)
            report.units += int(batch["units"][i])
            for stage in STAGES:
                report.stage_seconds[stage] += float(batch[f"{stage}_s"][i])
            report.embed_cpu_seconds += float(batch["embed_cpu_s"][i])
            report.worker_peak_mib = max(report.worker_peak_mib, float(batch["worker_mib"][i]))


def ray_index(
    pages: str | Path | Sequence[str | Path],
    uri: str,
    *,
    table: str = DEFAULT_INDEX_NAME,
    address: str | None = "local",
    workers: int = 2,
    writers: int = 1,
    batch_pages: int = DEFAULT_BATCH_PAGES,
    parser: SpireNodeParser | None = None,
    embed_model: Callable[[], BaseEmbedding] | None = None,
    embed_dim: int = MODEL_DIM,
    root: str | Path | None = None,
    lexical: bool = True,
) -> IngestReport:
    """Index ``pages`` (a folder of ``*.html``, or a list of files) into Postgres index ``table`` on Ray.

    ``address``: ``"local"`` starts a local cluster of ``workers`` CPUs for this call (and stops
    it after); any other value is passed to ``ray.init(address=...)`` (``"auto"``, ``ray://...``).
    When Ray is already initialised in this process, that cluster is used as it is. Page ids are
    paths relative to ``root`` (default: the folder, or the files' common folder), as
    :func:`spire_llamaindex.read_page` makes them. ``embed_model`` is a picklable factory run once
    per embedding worker (default: the packaged all-MiniLM-L6-v2). Each page is written by one of
    ``writers`` database writers; one keeps up with about three embedding workers at the costs
    measured in ``docs/scale.md``. With ``lexical``, the lexical index of the parser's policy is
    then saved in the database (:func:`~spire_llamaindex.postgres.save_lexicon`, in the driver,
    whose memory holds it meanwhile: 4.4 MiB as saved for the 1,169 pages of the PostgreSQL manual).
    """
    import ray

    if min(workers, writers, batch_pages) < 1:
        raise ValueError("workers, writers and batch_pages must be at least 1")
    refs, base = _page_refs(pages, root)
    target = _Target(uri, table, embed_dim)
    if embed_model is None:
        from spire_llamaindex import default_embeddings
        from spire_runtime.model import onnx_model_dir

        onnx_model_dir()  # the default model's export, made here once rather than by each worker at once
        embed_model = default_embeddings
    _stores(target)  # create the tables once, before workers race to
    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(
                num_cpus=workers,
                include_dashboard=False,
                logging_level=logging.WARNING,
                log_to_driver=False,
                # workers at the caller's priority: Ray's default (nice 15) starves them on a shared machine
                _system_config={"worker_niceness": 0},
            )
        else:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        started = True
    report = IngestReport(workers=workers)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        clock = time.perf_counter()
        if refs:
            ds = (
                ray.data.from_items([{"path": r} for r in refs], override_num_blocks=-(-len(refs) // batch_pages))
                .map_batches(
                    cast(Any, _prepare),  # Ray types its functions over every batch format; ours are numpy dicts
                    batch_size=batch_pages,
                    fn_kwargs={"root": str(base), "target": target, "parser": parser or SpireNodeParser()},
                    num_cpus=0.25,
                )
                .map_batches(
                    _Embedder,
                    batch_size=batch_pages,
                    fn_constructor_kwargs={"embed_model": embed_model},
                    compute=ray.data.ActorPoolStrategy(size=workers),
                    num_cpus=0.75,
                )
                .map_batches(
                    _Writer,
                    batch_size=batch_pages,
                    fn_constructor_kwargs={"target": target},
                    compute=ray.data.ActorPoolStrategy(size=writers),
                    num_cpus=0,
                )
            )
            _rows(report, ds.iter_batches(batch_size=batch_pages * 4, batch_format="numpy"), clock)
        report.seconds = time.perf_counter() - clock
    finally:
        if started:
            ray.shutdown()
    if lexical:
        clock = time.perf_counter()
        report.lexicon_saved = save_lexicon(_stores(target)[1], policy=(parser or SpireNodeParser()).policy)
        report.lexicon_seconds = time.perf_counter() - clock
    return report
