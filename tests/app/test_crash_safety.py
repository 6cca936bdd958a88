"""A store survives ``spire index`` killed with SIGKILL at any moment; one writer at a time; damaged
stores are named with the fix.

The kill test runs ``spire index`` in child processes (:mod:`tests.app.crash_driver`), each
stopped at a chosen moment (a page's parse, a batch's embedding, each file's write, the commit)
and killed with SIGKILL, three times per moment. After each kill the store must open, every page
in it must be exactly its old or its new version (source and units together: nothing lost,
nothing duplicated, no unit without its page), and a plain re-run (once per moment) must give exactly the store a
clean run gives.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import spire_app.store as store_module
import spire_llamaindex
import spire_llamaindex.embedding as embedding_module
from spire_app.cli import main
from spire_app.store import (
    LOCK_FILE,
    MANIFEST,
    StoreDamagedError,
    StoreError,
    StoreLockedError,
    load_store,
    read_manifest,
    store_lock,
)
from tests.support.hash_embedding import HashEmbedding

ROOT = Path(__file__).resolve().parents[2]
REPEAT = 3
#: moments of an update run (batches of 2 pages: [p0 p1] [p3 p4] [p5]; commits after the 1st and
#: 3rd batch, then the final one that removes p2); parse:2 is p5's, after the first commit
UPDATE_POINTS = [
    "parse:1",
    "embed:1",
    "write:docstore.json:1",
    "write:default__vector_store.json:1",
    "persist:1",
    "fsync:1",
    "fsync:4",
    "write:spire.json:1",
    "commit:1",
    "parse:2",
    "embed:2",
    "write:docstore.json:3",
    "commit:3",
]
FIRST_RUN_POINTS = ["parse:1", "embed:1", "write:docstore.json:1", "persist:1", "write:spire.json:1", "commit:1"]
REBUILD_POINTS = ["write:docstore.json:1", "commit:1"]


def _page(title: str, facts: list[str]) -> str:
    body = "".join(
        f"<h2>{title} part {n}</h2><p>{fact} It is noted here. Another remark follows.</p>"
        for n, fact in enumerate(facts)
    )
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"


def _write_pages(folder: Path, pages: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, html in pages.items():
        (folder / name).write_text(html, encoding="utf-8")
    return folder


OLD = {f"p{i}.html": _page(f"Topic {i}", [f"Fact {i}.{j} is true." for j in range(3)]) for i in range(5)}
NEW = {
    **OLD,
    "p1.html": _page("Topic 1", ["Fact 1 changed.", "A new second fact."]),
    "p5.html": _page("Topic 5", ["Five."]),
}
del NEW["p2.html"]

Snapshot = dict[str, tuple[str | None, tuple[str, ...]]]


def contents(store: Path) -> Snapshot:
    """Each page of the store: its source's hash and its units' texts; checks the store holds
    no unit without its page, no unit twice, and no vector without its unit."""
    opened = load_store(store, embed_model=HashEmbedding())
    docstore = opened.index.docstore
    vectors = set(opened.index.vector_store.data.embedding_dict)  # type: ignore[attr-defined]
    infos = docstore.get_all_ref_doc_info() or {}
    owned = [node_id for info in infos.values() for node_id in info.node_ids]
    assert len(owned) == len(set(owned)), "a unit belongs to two pages"
    assert set(owned) == vectors == set(opened.index.index_struct.nodes_dict), "units, vectors and index differ"
    snapshot: Snapshot = {}
    for doc_id, info in infos.items():
        texts = Counter(n.get_content() for n in docstore.get_nodes(info.node_ids))
        assert max(texts.values()) == 1, f"{doc_id}: a unit stored twice"
        snapshot[doc_id] = (docstore.get_document_hash(doc_id), tuple(sorted(texts)))
    assert sorted(snapshot) == opened.manifest["documents"]
    return snapshot


@pytest.fixture
def hash_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (spire_llamaindex, embedding_module, store_module):
        monkeypatch.setattr(module, "default_embeddings", lambda *a, **k: HashEmbedding())


def index(pages: Path, store: Path, *extra: str) -> int:
    return main(["index", str(pages), "--store", str(store), "--batch-pages", "2", "-q", *extra])


def test_a_killed_index_run_leaves_the_old_or_the_new_store(
    tmp_path: Path, hash_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    old_pages, new_pages = _write_pages(tmp_path / "old", OLD), _write_pages(tmp_path / "new", NEW)
    base, fresh = tmp_path / "base", tmp_path / "fresh"
    assert index(old_pages, base) == 0 and index(new_pages, fresh) == 0
    old, new = contents(base), contents(fresh)
    assert old.keys() != new.keys() and old["p1.html"] != new["p1.html"] and old["p0.html"] == new["p0.html"]

    jobs: list[dict[str, Any]] = []
    for kind, points in (("update", UPDATE_POINTS), ("first", FIRST_RUN_POINTS), ("rebuild", REBUILD_POINTS)):
        for point in points:
            for rep in range(REPEAT):
                store = tmp_path / "runs" / f"{kind}-{point.replace(':', '_')}-{rep}"
                if kind != "first":
                    shutil.copytree(base, store)
                argv = ["index", str(new_pages), "--store", str(store), "--batch-pages", "2", "-q"]
                jobs.append(
                    {
                        "rep": rep,
                        "kind": kind,
                        "store": store,
                        "argv": argv + (["--rebuild"] if kind == "rebuild" else []),
                        "point": point,
                    }
                )
    spec = tmp_path / "jobs.json"
    spec.write_text(json.dumps([{"argv": j["argv"], "point": j["point"]} for j in jobs]), encoding="utf-8")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tests.app.crash_driver", str(spec)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    elapsed = time.perf_counter() - start

    outcomes: Counter[str] = Counter()
    for job, result in zip(jobs, results, strict=True):
        where = f"{job['kind']} run killed at {job['point']}"
        assert result["hit"] == job["point"] and result["killed"], f"{where}: {result}"
        store: Path = job["store"]
        if (store / MANIFEST).is_file():
            state = contents(store)  # opens: nothing to repair by hand
        else:
            assert job["kind"] == "first", f"{where}: the old store is gone"
            with pytest.raises(StoreError, match="never completely written"):
                read_manifest(store)
            state = {}
        for doc_id, version in state.items():
            assert version in (old.get(doc_id), new.get(doc_id)), f"{where}: {doc_id} is neither version"
            if job["kind"] == "first":
                assert version == new[doc_id], where
        if job["kind"] == "update":  # pages in both versions are never lost
            assert {"p0.html", "p1.html", "p3.html", "p4.html"} <= state.keys(), where
        outcomes["old" if state == old else "new" if state == new else "none" if not state else "partial"] += 1
        if job["rep"]:
            continue  # the repetitions' states are checked above; one re-run per moment (time)
        # a plain re-run finishes the work: the store a clean run gives, no leftovers
        assert index(new_pages, store) == 0, where
        out = capsys.readouterr().out
        assert contents(store) == new, where
        if job["kind"] == "update" and job["point"] == "parse:2":  # the first batch was kept
            assert "0 updated, 4 unchanged" in out, out
        assert sorted(p.name for p in store.iterdir() if p.name not in (MANIFEST, LOCK_FILE)) == [
            read_manifest(store)["data"]
        ]
    print(f"{len(jobs)} kills in {elapsed:.1f} s: {dict(outcomes)}")
    assert outcomes["old"] and outcomes["new"] and outcomes["partial"] and outcomes["none"]


def test_a_second_writer_gets_a_clear_error(
    tmp_path: Path, hash_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = _write_pages(tmp_path / "pages", {"a.html": OLD["p0.html"]})
    store = tmp_path / "store"
    holder = textwrap.dedent(
        f"""
        import sys, time
        from spire_app.store import store_lock
        with store_lock({str(store)!r}):
            print("held", flush=True)
            sys.stdin.readline()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", holder],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(StoreLockedError, match=f"being written by pid {proc.pid} ") as err, store_lock(store):
            pass
        assert str(proc.pid) in err.value.holder
        assert index(pages, store) == 2
        assert f"is being written by pid {proc.pid}" in capsys.readouterr().err
    finally:
        proc.communicate("done\n", timeout=30)
    assert index(pages, store) == 0  # released when the holder is done (or killed)


@pytest.fixture
def small_store(tmp_path: Path, hash_model: None) -> tuple[Path, Path]:
    pages = _write_pages(tmp_path / "pages", {"a.html": OLD["p0.html"], "b.html": OLD["p1.html"]})
    store = tmp_path / "store"
    assert index(pages, store) == 0
    return pages, store


def _data_file(store: Path, name: str) -> Path:
    return store / read_manifest(store)["data"] / name


@pytest.mark.parametrize(
    ("name", "damage", "message"),
    [
        ("docstore.json", lambda t: t[: len(t) // 2], "bytes where the store wrote"),
        ("docstore.json", lambda t: "x" * len(t), "docstore.json: expected"),
        ("docstore.json", lambda t: "{}" + " " * (len(t) - 2), r"docstore.json: lacks (\d+) of the \1 units"),
        ("default__vector_store.json", lambda t: "[" + t[1:], "default__vector_store.json: not valid JSON"),
        ("index_store.json", lambda t: "{" * len(t), "index_store.json: not valid JSON"),
        (
            "default__vector_store.json",
            lambda t: json.dumps({"embedding_dict": {}}).ljust(len(t)),
            r"default__vector_store.json: 0 vectors where the store wrote \d+",
        ),
    ],
)
def test_a_damaged_store_names_the_file_and_the_fix(
    small_store: tuple[Path, Path], name: str, damage: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pages, store = small_store
    file = _data_file(store, name)
    file.write_text(damage(file.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(StoreDamagedError, match=message) as err:
        load_store(store, embed_model=HashEmbedding())
    assert err.value.file == file and "--rebuild" in str(err.value)
    for argv in (["query", "--store", str(store), "q"], ["index", str(pages), "--store", str(store), "-q"]):
        assert main(argv) == 2
        line = capsys.readouterr().err
        assert line.count("\n") == 1 and name in line and "--rebuild" in line and "no evidence" not in line
    assert index(pages, store, "--rebuild") == 0
    assert len(contents(store)) == 2


def test_an_empty_docstore_is_reported_not_answered_with_no_evidence(
    small_store: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, store = small_store
    manifest = read_manifest(store)
    _data_file(store, "docstore.json").write_text("{}", encoding="utf-8")
    manifest["files"]["docstore.json"] = 2  # a docstore of {} that matches the manifest
    (store / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert main(["query", "--store", str(store), "Fact 0?"]) == 2
    captured = capsys.readouterr()
    assert "no evidence found" not in captured.out
    assert "docstore.json: lacks" in captured.err and "--rebuild" in captured.err


def test_a_damaged_manifest_and_an_interrupted_first_run(tmp_path: Path, hash_model: None) -> None:
    pages = _write_pages(tmp_path / "pages", {"a.html": OLD["p0.html"]})
    store = tmp_path / "store"
    assert index(pages, store) == 0
    (store / MANIFEST).write_text('{"format": 2, "da', encoding="utf-8")
    with pytest.raises(StoreDamagedError, match=r"spire\.json: not valid JSON.*--rebuild"):
        read_manifest(store)
    assert index(pages, store, "--rebuild") == 0
    # what a first run killed before its first commit leaves: a data folder and temporary files
    (store / MANIFEST).unlink()
    (store / ".spire.json.abc.tmp").write_text("{", encoding="utf-8")
    with pytest.raises(StoreError, match="never completely written"):
        read_manifest(store)
    assert index(pages, store) == 0 and len(contents(store)) == 1


def test_a_format_1_store_opens_and_moves_to_format_2(small_store: tuple[Path, Path]) -> None:
    pages, store = small_store
    before = contents(store)
    manifest = read_manifest(store)
    data = store / manifest.pop("data")
    for file in data.iterdir():
        file.rename(store / file.name)
    data.rmdir()
    manifest.update(format=1)
    del manifest["files"]
    (store / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert contents(store) == before
    assert index(pages, store) == 0
    assert read_manifest(store)["format"] == 2 and not (store / "docstore.json").exists()
    assert contents(store) == before
