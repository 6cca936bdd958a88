"""Run ``spire index`` jobs, each in a child process killed with SIGKILL at a chosen moment.

    python -m tests.app.crash_driver JOBS.json > RESULTS.json

``JOBS.json`` is a list of ``{"argv": [...], "point": "STAGE:N" | null}``. This process imports
SPIRE once, then forks one child per job (so a job costs its work, not the imports); the child
runs :func:`spire_app.cli.main` and, when it reaches the point, tells this process through
a pipe and waits; this process then kills it with SIGKILL. Points (the N-th time it happens):

- ``parse:N``   a page's parse begins
- ``embed:N``   a batch's embedding begins
- ``write:FILE:N``  an atomically written file (``docstore.json``, ``default__vector_store.json``,
  ``spire.json``) has half its bytes in its temporary file, flushed to the disk
- ``persist:N`` LlamaIndex's own ``index_store.json`` is half written (a truncated file)
- ``fsync:N``   a data file has been written and fsynced, the next not yet
- ``commit:N``  the manifest has been replaced (committed), the old data folder not yet removed

The embedding model is the hash stand-in of :mod:`tests.support.hash_embedding` (these jobs
test storage; loading the real model in each child would cost more than the rest).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore

import spire_app.store as store_module
import spire_llamaindex
import spire_llamaindex.embedding as embedding_module
import spire_llamaindex.index as index_module
import spire_llamaindex.json_files as json_files
from spire_app.cli import main
from spire_llamaindex.parser import SpireNodeParser
from tests.support.hash_embedding import HashEmbedding

for module in (spire_llamaindex, embedding_module, store_module):  # the app takes it from the package
    module.default_embeddings = lambda *a, **k: HashEmbedding()  # type: ignore[attr-defined]


def _hold(hit_fd: int, point: str) -> None:
    os.write(hit_fd, f"{point}\n".encode())
    time.sleep(3600)  # until the driver's SIGKILL


def _install(point: str, hit_fd: int) -> None:
    """Patch the moment ``point`` (in the child only) to report and wait there."""
    stage, *rest = point.split(":")
    nth = int(rest[-1])
    target = rest[0] if len(rest) == 2 else None
    seen = [0]

    def due(name: str | None = None) -> bool:
        if target is not None and name != target:
            return False
        seen[0] += 1
        return seen[0] == nth

    if stage == "parse":
        parse = SpireNodeParser.get_nodes_from_documents

        def parse_hook(self: SpireNodeParser, *a: Any, **k: Any) -> Any:
            if due():
                _hold(hit_fd, point)
            return parse(self, *a, **k)

        SpireNodeParser.get_nodes_from_documents = parse_hook  # type: ignore[method-assign]
    elif stage == "embed":
        embed = index_module.embed_texts

        def embed_hook(*a: Any, **k: Any) -> Any:
            if due():
                _hold(hit_fd, point)
            return embed(*a, **k)

        index_module.embed_texts = embed_hook  # type: ignore[assignment]
    elif stage == "write":
        write_atomic = json_files.write_atomic

        def write_hook(path: Any, write: Callable[[Any], object]) -> None:
            if not due(os.path.basename(os.fspath(path))):
                return write_atomic(path, write)

            def half(f: Any) -> None:
                buffer = io.StringIO()
                write(buffer)
                text = buffer.getvalue()
                f.write(text[: len(text) // 2])
                f.flush()
                os.fsync(f.fileno())
                _hold(hit_fd, point)

            return write_atomic(path, half)

        json_files.write_atomic = write_hook  # type: ignore[assignment]
    elif stage == "persist":
        persist = SimpleKVStore.persist

        def persist_hook(self: SimpleKVStore, persist_path: str, *a: Any, **k: Any) -> None:
            persist(self, persist_path, *a, **k)
            if due():
                size = os.path.getsize(persist_path)
                os.truncate(persist_path, size // 2)
                _hold(hit_fd, point)

        SimpleKVStore.persist = persist_hook  # type: ignore[method-assign]
    elif stage == "fsync":
        fsync_file = json_files.fsync_file

        def fsync_hook(path: Any) -> None:
            fsync_file(path)
            if due():
                _hold(hit_fd, point)

        json_files.fsync_file = fsync_hook
    elif stage == "commit":
        remove_leftovers = store_module.remove_leftovers

        def commit_hook(*a: Any, **k: Any) -> None:
            if due():
                _hold(hit_fd, point)
            remove_leftovers(*a, **k)

        store_module.remove_leftovers = commit_hook
    else:
        raise ValueError(f"unknown point {point!r}")


def run_job(argv: list[str], point: str | None, timeout: float = 120.0) -> dict[str, Any]:
    read_fd, hit_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: spire index, stopped at the point
        os.close(read_fd)
        code = 70
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            if point:
                _install(point, hit_fd)
            code = main(argv)
        finally:
            os._exit(code)
    os.close(hit_fd)
    ready, _, _ = select.select([read_fd], [], [], timeout)
    hit = os.read(read_fd, 200).decode().strip() if ready else ""
    if hit:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(read_fd)
    return {
        "point": point,
        "hit": hit or None,
        "killed": os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL,
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    }


def _warm() -> None:
    """Run what a job runs once here, before forking: the lazy imports and first-use loads
    (LlamaIndex's storage modules, the sentence splitter's parameters) then cost nothing per job."""
    with tempfile.TemporaryDirectory() as tmp:
        pages = Path(tmp) / "pages"
        pages.mkdir()
        (pages / "warm.html").write_text("<h1>Warm</h1><p>One. Two.</p>", encoding="utf-8")
        for _ in range(2):  # a new store, then an update of it
            with contextlib.redirect_stdout(io.StringIO()):
                main(["index", str(pages), "--store", str(Path(tmp) / "store"), "-q"])


if __name__ == "__main__":
    jobs = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    _warm()
    results = []
    for job in jobs:
        start = time.perf_counter()
        results.append(run_job(job["argv"], job.get("point")))
        print(f"{job.get('point')}: {time.perf_counter() - start:.2f} s", file=sys.stderr, flush=True)
    print(json.dumps(results))
