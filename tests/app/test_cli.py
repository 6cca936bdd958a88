"""The ``spire`` command: index, query (in this process and reloaded in a new one), show; clear errors."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spire_app.cli import main
from tests.llamaindex.conftest import QUESTION, label_of
from tests.support.openai_stub import OpenAIStub

ROOT = Path(__file__).resolve().parents[2]
PHRASE = "30 seconds and one day"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, text: str) -> None:
    assert code == 2
    assert err.startswith("spire: error: ") and err.count("\n") == 1 and text in err


def query_json(capsys: pytest.CaptureFixture[str], store: Path, *extra: str) -> dict[str, Any]:
    code, out, _ = run(capsys, "query", "--store", str(store), QUESTION, "--json", *extra)
    assert code == 0
    return json.loads(out)


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(*run(capsys, "index", tmp_path / "nope", "--store", tmp_path / "s")[::2], "does not exist")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a page")
    one_line_error(*run(capsys, "index", tmp_path / "empty", "--store", tmp_path / "s")[::2], "no pages (*.html")
    one_line_error(*run(capsys, "query", "--store", tmp_path / "missing", "q")[::2], "no store at")
    one_line_error(*run(capsys, "query", "--store", tmp_path / "empty", "q")[::2], "not a SPIRE store")
    one_line_error(*run(capsys, "index", ROOT / "examples" / "pages", "--store", tmp_path / "empty")[::2], "non-empty")
    code, _, err = run(capsys, "query", "--store", tmp_path, "q", "--llm-base-url", "http://127.0.0.1:9/v1")
    one_line_error(code, err, "go together")
    one_line_error(
        *run(capsys, "show", "--store", tmp_path, "no-hash-here", "--out", tmp_path / "o.html")[::2],
        "not a citation id",
    )


def test_query_prints_citations(example_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    payload = query_json(capsys, example_store, "--budget", "400")
    assert payload["filter"] is None and payload["results"][0]["doc_id"] == "postgresql-wal.html"
    cits = [c for r in payload["results"] for c in r["citations"]]
    hit = next(c for c in cits if PHRASE in c["text"])
    assert hit["id"] == f"{hit['doc_id']}#{hit['paths']}" and "checkpoint_timeout" in hit["text"]
    assert sum(r["cost"] for r in payload["results"]) <= 400
    code, out, _ = run(capsys, "query", "--store", example_store, QUESTION, "--budget", "400")
    assert code == 0 and PHRASE in out
    # each page once, [n] after its cited sentences, within the budget; the id behind [n], bare: shell-safe
    n = re.search(rf"{re.escape(PHRASE)}[^\n\[]*\[(\d+)\]", out)
    assert n, out
    assert f"  [{n.group(1)}] {hit['id']}  (score" in out
    assert out.count("Source: postgresql-wal.html") == 1
    used = re.search(r"(\d+) of 400 tokens", out)
    assert used and int(used.group(1)) <= 400


def test_query_prints_the_adapters_format_citations(example_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from spire_app import load_store

    retriever = load_store(example_store).retriever(budget=400)
    sources = retriever.format_citations(retriever.retrieve(QUESTION))
    code, out, _ = run(capsys, "query", "--store", example_store, QUESTION, "--budget", "400")
    assert code == 0 and PHRASE in sources and f"\n\n{sources}\n\ncitations (paste an id" in out


def test_store_reloaded_in_a_new_process(example_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    here = query_json(capsys, example_store)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "spire_app.cli", "query", "--store", str(example_store), QUESTION, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    there = json.loads(proc.stdout)

    def strip(payload: dict[str, Any]) -> list[Any]:
        return [(r["doc_id"], r["text"], [(c["id"], c["text"]) for c in r["citations"]]) for r in payload["results"]]

    assert strip(there) == strip(here)
    assert [r["score"] for r in there["results"]] == pytest.approx([r["score"] for r in here["results"]], abs=1e-5)


def test_show_highlights_a_citation(example_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    payload = query_json(capsys, example_store, "--budget", "300")
    hit = next(c for r in payload["results"] for c in r["citations"] if PHRASE in c["text"])
    out = tmp_path / "page.html"
    code, stdout, _ = run(capsys, "show", "--store", example_store, hit["id"], "--out", out)
    assert code == 0 and "1 citation(s)" in stdout
    page = out.read_text(encoding="utf-8")
    marked = " ".join(m.split("</mark>", 1)[0] for m in page.split('data-citation="1"')[1:])  # each of its blocks
    assert PHRASE in marked
    bad = hit["id"].rsplit("#", 1)[0] + "#9.9.9"
    one_line_error(*run(capsys, "show", "--store", example_store, bad, "--out", out)[::2], "is not in page")
    one_line_error(
        *run(capsys, "show", "--store", example_store, "nope.html#1.0", "--out", out)[::2], "not in the store"
    )


def test_a_citation_id_pastes_unquoted_into_spire_show(
    example_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = query_json(capsys, example_store, "--budget", "300")
    key = next(c["id"] for r in payload["results"] for c in r["citations"] if PHRASE in c["text"])
    assert "," in key.partition("#")[2]  # a set of several paths
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    spire = f"{shlex.quote(sys.executable)} -m spire_app.cli"
    out = tmp_path / "page.html"
    for pasted in (key, shlex.quote(key.replace(",", ";"))):  # as printed; a quoted id of schema version 1
        out.unlink(missing_ok=True)
        line = f"{spire} show --store {shlex.quote(str(example_store))} {pasted} --out {shlex.quote(str(out))}"
        proc = subprocess.run(line, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        marks = out.read_text(encoding="utf-8").split('data-citation="1"')[1:]
        assert PHRASE in " ".join(m.split("</mark>", 1)[0] for m in marks)


def test_query_with_the_filter(
    example_store: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with OpenAIStub(lambda prompt: f'["{label_of(prompt, PHRASE)}"]') as stub:
        payload = query_json(capsys, example_store, "--llm-base-url", stub.base_url, "--llm-model", "stub")
    assert payload["filter"]["ok"] is True
    (result,) = payload["results"]
    (cit,) = result["citations"]
    assert PHRASE in cit["text"]
    with OpenAIStub(lambda prompt: "no idea") as stub:
        code, out, err = run(
            capsys,
            "query",
            "--store",
            example_store,
            QUESTION,
            "--json",
            "--llm-base-url",
            stub.base_url,
            "--llm-model",
            "m",
        )
    # one warning (SpireEvidenceFilter's log line; the CLI prints it as "spire: WARNING: ..."), not two
    assert code == 0 and "evidence filter failed" not in err
    assert [r.getMessage() for r in caplog.records].count(
        "evidence filter failed (the answer holds no labels): keeping the unfiltered citations"
    ) == 1
    assert json.loads(out)["filter"]["ok"] is False and len(json.loads(out)["results"][0]["citations"]) > 1


def test_index_skips_bad_pages_and_updates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    pages, store = tmp_path / "pages", tmp_path / "store"
    (pages / "sub").mkdir(parents=True)
    (pages / "logo.html").write_text("<html><body><h1>Brand</h1><p>The logo is teal.</p></body></html>")
    (pages / "sub" / "hours.HTML").write_text("<html><body><h1>Hours</h1><p>We open at nine.</p></body></html>")
    (pages / "report.html").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n")
    (pages / "blank.html").write_text("<html><body><script>x()</script></body></html>")
    code, out, err = run(capsys, "index", pages, "--store", store, "-q")
    assert code == 1
    assert "3 added" in out and "1 skipped" in out
    assert "skipped report.html" in err and "PDF" in err
    # the empty page is reported once: the parser's warning (the CLI prints it as "spire: WARNING: ...")
    assert "blank.html" not in err
    assert [r.getMessage() for r in caplog.records].count("document 'blank.html' has no text to index: no nodes") == 1
    code, out, _ = run(capsys, "query", "--store", store, "When do you open?", "--json")
    assert json.loads(out)["results"][0]["doc_id"] == "sub/hours.HTML"

    (pages / "logo.html").write_text("<html><body><h1>Brand</h1><p>The logo is orange.</p></body></html>")
    (pages / "sub" / "hours.HTML").unlink()
    (pages / "report.html").unlink()
    code, out, err = run(capsys, "index", pages, "--store", store, "-q")
    assert code == 0, err
    assert "1 updated" in out and "1 unchanged" in out and "1 removed" in out
    code, out, _ = run(capsys, "query", "--store", store, "What colour is the logo?")
    assert "orange" in out and "teal" not in out and "nine" not in out
    code, _, err = run(capsys, "index", pages, "--store", store, "--unit", "block", "-q")
    one_line_error(code, err, "--rebuild")
    assert run(capsys, "index", pages, "--store", store, "--unit", "block", "--rebuild", "-q")[0] == 0


def test_index_reads_each_page_when_it_reaches_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import spire_llamaindex
    from spire_llamaindex import SpireNodeParser
    from spire_runtime.defaults import DEFAULT_BATCH_PAGES

    pages = tmp_path / "pages"
    pages.mkdir()
    total = 2 * DEFAULT_BATCH_PAGES + 3
    for i in range(total):
        (pages / f"p{i:02}.html").write_text(f"<html><body><h1>Page {i}</h1><p>Fact number {i}.</p></body></html>")
    reads: list[str] = []
    read_at_parse: list[int] = []
    read_page, parse = spire_llamaindex.read_page, SpireNodeParser.get_nodes_from_documents
    monkeypatch.setattr(
        spire_llamaindex, "read_page", lambda path, *a, **k: reads.append(path.name) or read_page(path, *a, **k)
    )
    monkeypatch.setattr(
        SpireNodeParser,
        "get_nodes_from_documents",
        lambda self, docs, *a, **k: read_at_parse.append(len(reads)) or parse(self, docs, *a, **k),
    )
    code, out, _ = run(capsys, "index", pages, "--store", tmp_path / "store", "-q")
    assert code == 0 and f"{total} added" in out
    assert sorted(reads) == sorted(p.name for p in pages.iterdir())  # each page read once
    # no more than one batch of pages is in memory: page k is parsed before page k + batch is read
    assert all(n <= k + DEFAULT_BATCH_PAGES for k, n in enumerate(read_at_parse, start=1))
    assert read_at_parse[0] <= DEFAULT_BATCH_PAGES < total


def test_markdown_pages_are_indexed_queried_and_highlighted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embed_model: Any
) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "tuning.md").write_text(
        "# Tuning\n\n## Checkpoints\n\n| Setting | Valid range |\n|---|---|\n"
        "| checkpoint_timeout | between 30 seconds and one day |\n| max_wal_size | at least 2 segments |\n",
        encoding="utf-8",
    )
    store = tmp_path / "store"
    assert run(capsys, "index", pages, "--store", store, "--quiet")[0] == 0
    code, out, _ = run(capsys, "query", "--store", store, QUESTION, "--json")
    assert code == 0
    cit = next(c for r in json.loads(out)["results"] for c in r["citations"] if PHRASE in c["text"])
    assert cit["doc_id"] == "tuning.md"
    assert "## Checkpoints" in cit["text"] and "Valid range" in cit["text"] and "checkpoint_timeout" in cit["text"]
    page = tmp_path / "hl.html"
    assert run(capsys, "show", "--store", store, cit["id"], "--out", page)[0] == 0
    assert PHRASE in page.read_text(encoding="utf-8")


def test_query_json_names_the_references_of_each_citation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embed_model: Any
) -> None:
    from tests.test_references import PAGES

    pages = tmp_path / "pages"
    for name, html in PAGES.items():
        (pages / name).parent.mkdir(parents=True, exist_ok=True)
        (pages / name).write_text(html, encoding="utf-8")
    store = tmp_path / "store"
    assert run(capsys, "index", pages, "--store", store, "--quiet")[0] == 0
    code, out, _ = run(capsys, "query", "--store", store, "which record carries an LSN", "--json")
    assert code == 0
    cit = next(c for r in json.loads(out)["results"] for c in r["citations"] if "carries" in c["text"])
    assert cit["doc_id"] == "guide/config.html"
    same, other, external = cit["references"]
    assert same["doc_id"] == "guide/config.html" and same["anchor"] == "term-wal" and same["paths"]
    assert other == {"doc_id": "glossary.html", "anchor": "term-lsn"}
    assert external == {"url": "https://example.org/wal"}
    # --resolve-refs: the glossary's definition is cited beside it, within the budget
    code, out, _ = run(capsys, "query", "--store", store, "which record carries an LSN", "--json", "--resolve-refs")
    assert code == 0
    payload = json.loads(out)
    cits = [c for r in payload["results"] for c in r["citations"]]
    cit = next(c for c in cits if "carries" in c["text"])
    lsn = next(c for c in cits if c.get("referenced_by") == cit["id"] and c["doc_id"] == "glossary.html")
    assert "a byte position in the WAL stream" in lsn["text"] and cit["references"][1]["cited"] == lsn["id"]
    assert sum(r["cost"] for r in payload["results"]) <= payload["budget"]
    # spire serve --resolve-refs answers the same, with other budgets too
    from spire_app.serve import QueryService
    from spire_app.store import load_store

    service = QueryService(load_store(store, embed_model=embed_model), resolve_refs=True)
    for budget in (None, 600):
        served = [
            c for r in service.answer("which record carries an LSN", budget=budget)["results"] for c in r["citations"]
        ]
        assert any(c["doc_id"] == "glossary.html" and "a byte position in the WAL stream" in c["text"] for c in served)


def test_startup_needs_no_framework() -> None:
    """``spire --help`` and the commands that fail before any model imports neither LlamaIndex nor nltk."""
    code = (
        "import sys\nfrom spire_app.cli import main\n"
        "for argv in (['query', '--store', 'no-such-store', 'q'], ['query', '--store', 'x', ' ']):\n"
        "    assert main(argv) == 2\n"
        "heavy = [m for m in ('llama_index.core', 'nltk', 'langchain_core', 'torch') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert proc.stderr.count("\n") == 2 and proc.stderr.startswith("spire: error: ")  # one line each


def _hash_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> Path:
    import spire_app.store as store_module
    import spire_llamaindex
    import spire_llamaindex.embedding as embedding_module
    from tests.support.hash_embedding import HashEmbedding

    for module in (spire_llamaindex, embedding_module, store_module):
        monkeypatch.setattr(module, "default_embeddings", lambda *a, **k: HashEmbedding())
    pages = tmp_path / "pages"
    pages.mkdir()
    for i in range(n):
        (pages / f"p{i}.html").write_text(f"<h1>Page {i}</h1><p>Fact {i} holds. Another one.</p>", encoding="utf-8")
    return pages


def test_index_progress_counts_pages_when_parsed_embedded_and_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import spire_app.store as store_module
    import spire_llamaindex
    import spire_llamaindex.index as index_module

    pages = _hash_pages(tmp_path, monkeypatch, 3)
    bars: list[spire_llamaindex.StageProgress] = []
    at_embed: list[dict[str, int]] = []
    at_save: list[dict[str, int]] = []

    class Recorded(spire_llamaindex.StageProgress):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            bars.append(self)

    embed, save = index_module.embed_texts, store_module.save_store
    monkeypatch.setattr(spire_llamaindex, "StageProgress", Recorded)
    monkeypatch.setattr(
        index_module, "embed_texts", lambda *a, **k: at_embed.append(bars[0].counts()) or embed(*a, **k)
    )
    monkeypatch.setattr(store_module, "save_store", lambda *a, **k: at_save.append(bars[0].counts()) or save(*a, **k))
    code, _, err = run(capsys, "index", pages, "--store", tmp_path / "store", "--batch-pages", "1")
    assert code == 0
    # batch k: its page is counted parsed before it is embedded, embedded before it is written
    assert at_embed == [{"parse": k, "embed": k - 1, "write": k - 1} for k in (1, 2, 3)]
    assert at_save[:3] == [{"parse": k, "embed": k, "write": k - 1} for k in (1, 2, 3)]
    assert at_save[3] == {"parse": 3, "embed": 3, "write": 3}  # the final save
    for stage in ("parse", "embed", "write"):
        assert re.search(rf"{stage} *: 100%.*3/3", err), err
    assert re.search(r"embed *: 100%.*, \d+ units", err), err


def test_an_interrupted_index_run_resumes_after_its_last_batch(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import spire_llamaindex.index as index_module
    from spire_app.store import read_manifest

    pages = _hash_pages(tmp_path, monkeypatch, 3)
    store = tmp_path / "store"
    embed = index_module.embed_texts
    calls: list[int] = []

    def interrupted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C (the SIGKILL case: tests/app/test_crash_safety.py)
        return embed(*a, **k)

    monkeypatch.setattr(index_module, "embed_texts", interrupted)
    code, _, err = run(capsys, "index", pages, "--store", store, "--batch-pages", "1", "-q")
    assert (code, err) == (130, "spire: interrupted; the next run resumes\n")  # one line, no traceback
    manifest = read_manifest(store)
    assert manifest["documents"] == ["p0.html"] and manifest["complete"] is False
    code, out, _ = run(capsys, "query", "--store", store, "Fact 0", "--json")  # the finished batch answers
    assert code == 0 and json.loads(out)["results"][0]["doc_id"] == "p0.html"
    assert any("interrupted `spire index` run" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(index_module, "embed_texts", embed)
    code, out, _ = run(capsys, "index", pages, "--store", store, "--batch-pages", "1", "-q")
    assert code == 0 and "2 added, 0 updated, 1 unchanged" in out
    assert read_manifest(store)["complete"] is True


def test_the_store_saves_its_bm25_index_in_step_with_its_pages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from spire_app.store import load_store
    from spire_llamaindex import SourceDocuments

    pages = _hash_pages(tmp_path, monkeypatch, 3)
    store = tmp_path / "store"
    assert run(capsys, "index", pages, "--store", store, "-q")[0] == 0
    opened = load_store(store)
    assert opened.lexical is not None and sorted(opened.lexical.pages) == ["p0.html", "p1.html", "p2.html"]
    parsed: list[str] = []
    read = SourceDocuments.__call__
    monkeypatch.setattr(
        SourceDocuments, "__call__", lambda self, d, *a, **k: parsed.append(d) or read(self, d, *a, **k)
    )
    lexicon = opened.retriever().lexicon
    assert lexicon is not None
    hits = lexicon.hits("Which fact is 1?", 1)
    assert parsed == [] and hits[0].doc_id == "p1.html"  # searched by words without parsing a page

    (pages / "p1.html").write_text("<h1>Page 1</h1><p>The turbine spins fast.</p>", encoding="utf-8")
    assert run(capsys, "index", pages, "--store", store, "-q")[0] == 0
    opened = load_store(store)
    assert opened.lexical is not None and opened.lexical.hits("turbine", 1)[0].doc_id == "p1.html"
    nodes = opened.retriever().retrieve("What does the turbine do?")
    assert "The turbine spins fast." in nodes[0].get_content()


def test_index_reads_xhtml_and_says_what_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = _hash_pages(tmp_path, monkeypatch, 1)
    (pages / "book.xhtml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Book'
        "</title></head><body><h1>Ferns</h1><p>Ferns reproduce by spores.</p></body></html>",
        encoding="utf-8",
    )
    for name in ("manual.pdf", "notes.txt", "more.TXT", "logo.png", "README"):
        (pages / name).write_bytes(b"x")
    (pages / ".git").mkdir()
    (pages / ".git" / "index").write_bytes(b"x")  # hidden: not worth a line
    code, out, err = run(capsys, "index", pages, "--store", tmp_path / "store", "-q")
    assert code == 0 and "indexed 2 page(s)" in out
    assert err.splitlines() == [
        "spire: left out 1 file(s) without a suffix: not an HTML or Markdown page",
        "spire: left out 1 .pdf file(s): PDF is not read (convert it to HTML first)",
        "spire: left out 1 .png file(s): not an HTML or Markdown page",
        "spire: left out 2 .txt file(s): plain text is not read from a folder (rename it .md to index it as Markdown)",
    ]
    code, out, _ = run(capsys, "query", "--store", tmp_path / "store", "How do ferns reproduce?", "--json")
    assert code == 0 and json.loads(out)["results"][0]["doc_id"] == "book.xhtml"


def test_index_shows_units_and_their_rate_while_a_large_page_embeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = _hash_pages(tmp_path, monkeypatch, 0)
    body = "".join(
        f"<h2>Part {i}</h2><p>Sentence {i} of a long page is here. Another {i} follows.</p>" for i in range(80)
    )
    (pages / "large.html").write_text(f"<h1>Large</h1>{body}", encoding="utf-8")
    code, _, err = run(capsys, "index", pages, "--store", tmp_path / "store")
    assert code == 0
    # before the one page is embedded (0/1), the bar counts the units embedded and their rate
    assert re.search(r"embed *: +0%.*0/1.*\d+ units, [\d.]+ units/s, \d+/\d+ of this batch", err), err
    assert re.search(r"embed *: 100%.*1/1.*, 81 units, [\d.]+ units/s\]", err), err


def test_version_and_help_texts(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"spire {version('spire-retrieval')}\n"
    for command, flag, words in (
        ("index", "--store DIR", "store folder"),
        ("query", "--store DIR", "store folder"),
        ("query", "--llm-api-key LLM_API_KEY", "API key"),
        ("serve", "--llm-api-key LLM_API_KEY", "SPIRE_LLM_API_KEY"),
        ("show", "--out OUT", "one file per page"),
    ):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        usage = " ".join(capsys.readouterr().out.split())
        assert re.search(rf"{re.escape(flag)} [^-]*{re.escape(words)}", usage), (command, usage)


def test_show_writes_one_file_per_page_for_citations_of_several_pages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = _hash_pages(tmp_path, monkeypatch, 2)
    store = tmp_path / "store"
    assert run(capsys, "index", pages, "--store", store, "-q")[0] == 0
    code, out, _ = run(capsys, "query", "--store", store, "Fact 0 holds. Fact 1 holds.", "--json")
    ids = {r["doc_id"]: r["citations"][0]["id"] for r in json.loads(out)["results"]}
    assert set(ids) == {"p0.html", "p1.html"}
    code, out, _ = run(capsys, "show", "--store", store, ids["p0.html"], ids["p1.html"], "--out", tmp_path / "s.html")
    assert code == 0
    assert out.splitlines() == [
        f"wrote {tmp_path / 's-p0.html'}: 1 citation(s) highlighted in p0.html",
        f"wrote {tmp_path / 's-p1.html'}: 1 citation(s) highlighted in p1.html",
    ]
    for i in (0, 1):
        marked = (tmp_path / f"s-p{i}.html").read_text(encoding="utf-8").split('data-citation="1"', 1)[1]
        assert f"Fact {i} holds." in marked.split("</mark>", 1)[0]
    assert not (tmp_path / "s.html").exists()
    bad = ids["p1.html"].rsplit("#", 1)[0] + "#9.9.9"  # one bad citation: nothing is written
    (tmp_path / "s-p0.html").unlink()
    one_line_error(
        *run(capsys, "show", "--store", store, ids["p0.html"], bad, "--out", tmp_path / "s.html")[::2], "is not in page"
    )
    assert not (tmp_path / "s-p0.html").exists()
