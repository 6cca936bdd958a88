"""The ``spire`` command: index a folder of HTML pages, query it, highlight a citation in its page.

    spire index PAGES_DIR --store DIR
    spire index PAGES_DIR --db postgresql://... [--ray local|ADDRESS --workers N]   (docs/scale.md)
    spire query --store DIR "question" [--budget N] [--max-citations N] [--min-score S] [--resolve-refs]
                [--llm-base-url URL --llm-model NAME] [--json]
    spire query --db postgresql://... "question"
    spire show --store DIR 'DOC_ID#PATHS' ... --out FILE.html   (citations of several pages: FILE-PAGE.html each)
    spire serve --store DIR [--host 127.0.0.1 --port 8765] [--resolve-refs]   (/: the viewer; /query?q=...: JSON)

Everything runs offline with the packaged embedding model. Exit codes: 0 success, 1 some
pages could not be indexed (the others were), 2 usage or input error (one line on stderr),
130 interrupted (Ctrl-C: one line; ``spire index`` resumes after its last saved batch).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spire_core.options import DEFAULT_BUDGET, DEFAULT_FIRST_K, DEFAULT_MAX_CITATIONS, DEFAULT_MIN_SCORE
from spire_runtime.defaults import DEFAULT_BATCH_PAGES, DEFAULT_INDEX_NAME

if TYPE_CHECKING:
    from collections.abc import Iterator

    from llama_index.core.schema import Document, NodeWithScore


PROG = "spire"
#: the distribution the command comes with (pyproject.toml's project name), for ``--version``
DISTRIBUTION = "spire-retrieval"
#: the files ``spire index`` reads as pages: HTML (XHTML too) and Markdown
INDEXED_SUFFIXES = (".html", ".htm", ".xhtml", ".md", ".markdown")
#: why ``spire index`` leaves a file of another kind out (reported, one line per kind, with a count)
SKIP_REASONS = {
    ".pdf": "PDF is not read (convert it to HTML first)",
    ".txt": "plain text is not read from a folder (rename it .md to index it as Markdown)",
}


class UsageError(Exception):
    """A problem with the command line or its inputs: reported on one line, exit code 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="SPIRE: structure-preserving retrieval of evidence from HTML"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    index = sub.add_parser(
        "index",
        help="index every HTML (*.html, *.htm, *.xhtml) and Markdown (*.md) page under PAGES_DIR "
        "(re-running updates changed pages; other files are reported, by kind, and left out)",
    )
    index.add_argument("pages", metavar="PAGES_DIR", type=Path)
    index.add_argument(
        "--store", type=Path, metavar="DIR", help="store folder: created if needed, updated when it holds a store"
    )
    index.add_argument("--db", metavar="URI", help="index into Postgres + pgvector instead (postgresql://...)")
    index.add_argument("--table", default=DEFAULT_INDEX_NAME, help=f"index name in --db (default {DEFAULT_INDEX_NAME})")
    index.add_argument(
        "--ray", metavar="ADDRESS", help="ingest on Ray into --db: 'local' (a cluster of --workers CPUs) or an address"
    )
    index.add_argument("--workers", type=int, default=2, help="Ray embedding workers (default 2)")
    index.add_argument(
        "--unit",
        choices=["passage", "sentence", "block"],
        default="passage",
        help="indexed unit (default passage: sentences of one section embedded together, cited one by one)",
    )
    index.add_argument("--no-global-context", action="store_true", help="embed bare sentences (ablation)")
    index.add_argument("--rebuild", action="store_true", help="discard what the store holds and index afresh")
    index.add_argument(
        "--batch-pages",
        type=int,
        default=DEFAULT_BATCH_PAGES,
        metavar="N",
        help=f"pages per batch, each saved when done: a killed run resumes after it (default {DEFAULT_BATCH_PAGES})",
    )
    index.add_argument("--quiet", "-q", action="store_true", help="no progress bars")

    query = sub.add_parser("query", help="retrieve cited evidence for a question")
    query.add_argument("--store", type=Path, metavar="DIR", help="store folder written by `spire index`")
    query.add_argument("--db", metavar="URI", help="query a Postgres + pgvector index instead of --store")
    query.add_argument("--table", default=DEFAULT_INDEX_NAME, help=f"index name in --db (default {DEFAULT_INDEX_NAME})")
    query.add_argument("question")
    _query_arguments(query)
    _llm_arguments(query)
    query.add_argument("--json", action="store_true", help="print JSON")

    serve = sub.add_parser("serve", help="answer queries over HTTP (JSON), the store and model loaded once")
    serve.add_argument("--store", required=True, type=Path, metavar="DIR", help="store folder written by `spire index`")
    serve.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free port)")
    _query_arguments(serve, "default ")
    _llm_arguments(serve)

    show = sub.add_parser("show", help="write a page with citations highlighted")
    show.add_argument("--store", required=True, type=Path, metavar="DIR", help="store folder written by `spire index`")
    show.add_argument("citations", metavar="CITATION_ID", nargs="+", help="DOC_ID#PATHS as printed by `spire query`")
    show.add_argument(
        "--out",
        required=True,
        type=Path,
        help="HTML file to write; citations of several pages write one file per page beside it, "
        "FILE-PAGE.html (PAGE: the page id, its suffix dropped, other characters than letters, digits, . - _ as _)",
    )
    return parser


def _llm_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--llm-base-url", help="OpenAI-compatible server for the evidence filter")
    command.add_argument("--llm-model", help="model name on that server")
    command.add_argument(
        "--llm-api-key",
        default=os.environ.get("SPIRE_LLM_API_KEY", "unused"),
        help="API key of that server (default: $SPIRE_LLM_API_KEY, else none: a local server needs none)",
    )
    command.add_argument("--llm-timeout", type=float, default=60.0, help="seconds (default 60)")


def _llm(args: argparse.Namespace) -> Any:
    """The OpenAI-compatible LLM of ``--llm-base-url``/``--llm-model``, or None."""
    if not args.llm_base_url:
        return None
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        api_base=args.llm_base_url,
        model=args.llm_model,
        api_key=args.llm_api_key,
        is_chat_model=True,
        timeout=args.llm_timeout,
        max_retries=0,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``spire`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    from spire_core import SpireError

    try:
        if args.command == "index":
            return _index(args)
        if args.command == "query":
            return _query(args)
        if args.command == "serve":
            return _serve(args)
        return _show(args)
    except (UsageError, SpireError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback (each finished batch is saved)
        start = "\n" if sys.stderr.isatty() else ""  # after the terminal's ^C (and any progress bar)
        resumes = "; the next run resumes" if args.command == "index" else ""
        print(f"{start}{PROG}: interrupted{resumes}", file=sys.stderr)
        return 130


# -- index --------------------------------------------------------------------------------
def _index(args: argparse.Namespace) -> int:
    from spire_core import HTML, NONE
    from spire_runtime.model import mmap_large_allocations

    mmap_large_allocations()  # this process embeds: keep its heap from fragmenting

    pages: Path = args.pages
    if not pages.is_dir():
        raise UsageError(f"pages folder {str(pages)!r} does not exist or is not a folder")
    if (args.store is None) == (args.db is None):
        raise UsageError("give --store DIR or --db URI (one of them)")
    if args.db is not None:
        return _index_db(args)

    from spire_llamaindex import (
        IndexUpdate,
        SourceDocuments,
        SpireNodeParser,
        StageProgress,
        build_index,
        default_embeddings,
        delete_sources,
        update_index,
    )

    from .store import MANIFEST, StoreError, is_store_leftover, load_store, parser_settings, save_store, store_lock

    if args.ray is not None:
        raise UsageError("--ray writes to a database: give --db URI")
    if args.batch_pages < 1:
        raise UsageError("--batch-pages must be at least 1")
    files, skipped = _page_files(pages)
    if not files:
        held = f" (it holds {sum(skipped.values())} other file(s))" if skipped else ""
        raise UsageError(f"no pages ({', '.join('*' + s for s in INDEXED_SUFFIXES)}) under {str(pages)!r}{held}")
    for kind, count in sorted(skipped.items()):
        what = f"{kind} file(s)" if kind else "file(s) without a suffix"
        reason = SKIP_REASONS.get(kind, "not an HTML or Markdown page")
        print(f"{PROG}: left out {count} {what}: {reason}", file=sys.stderr)
    store: Path = args.store
    if store.exists() and not store.is_dir():
        raise UsageError(f"--store {str(store)!r} is a file, not a folder")
    if store.is_dir() and not (store / MANIFEST).is_file():
        foreign = sorted(p.name for p in store.iterdir() if not is_store_leftover(p.name))
        if foreign:  # what an interrupted first run leaves (data folders, temporary files) is no obstacle
            raise UsageError(
                f"--store {str(store)!r} is a non-empty folder that is not a SPIRE store "
                f"(it holds {foreign[0]!r}): choose another"
            )
    parser = SpireNodeParser(unit=args.unit, policy=NONE if args.no_global_context else HTML)
    documents = _Pages(files, pages, max_bytes=parser.max_bytes)
    failed = documents.failed
    with store_lock(store):  # one writer at a time: a second gets a StoreLockedError naming this one
        exists = (store / MANIFEST).is_file()
        embed = default_embeddings()
        previous: list[str] = []
        saved_lexical = None
        if exists and not args.rebuild:
            opened = load_store(store, embed_model=embed)
            if parser_settings(opened.parser) != parser_settings(parser):
                raise StoreError(
                    f"the store at {str(store)!r} was built with other settings ({parser_settings(opened.parser)}): "
                    "use --rebuild or another --store"
                )
            previous = list(opened.manifest.get("documents", []))
            index, saved_lexical = opened.index, opened.lexical
        else:  # a new store, --rebuild, or a first run that was interrupted: start from an empty index
            index = build_index([], parser=parser, embed_model=embed)
        # the BM25 index over the stored pages' sentences, saved with each batch (each page parsed once more)
        lexicon = SourceDocuments(index.docstore, maxsize=2).lexicon(parser.policy)
        if saved_lexical is not None:
            lexicon.restore(saved_lexical)
        extra = {"pages_dir": str(pages.resolve())}

        def commit(report: IndexUpdate) -> None:
            """Save each finished batch: a killed run resumes after it (its pages are then unchanged)."""
            done = set(previous) | set(report.added) | set(report.updated) | set(report.unchanged)
            nodes = len(index.index_struct.nodes_dict)
            save_store(
                store, index, parser, sorted(done), extra={**extra, "nodes": nodes}, complete=False, lexicon=lexicon
            )

        progress = StageProgress(len(files), disable=args.quiet)
        try:
            report = update_index(
                index,
                documents,
                parser=parser,
                errors="skip",
                batch_pages=args.batch_pages,
                progress=progress,
                on_batch=commit,
            )
        finally:
            progress.close()
        current = {path.relative_to(pages).as_posix() for path in files}
        removed = delete_sources(index, [d for d in previous if d not in current and d not in failed])
        failed.update(report.failed)
        kept = set(report.added) | set(report.updated) | set(report.unchanged)
        kept |= {d for d in previous if d in failed}  # an unreadable new version keeps the old one
        if not kept:
            for doc_id, reason in sorted(failed.items()):
                print(f"{PROG}: skipped {doc_id}: {reason}", file=sys.stderr)
            raise UsageError(f"none of the {len(files)} page(s) under {str(pages)!r} could be read")
        nodes = len(index.index_struct.nodes_dict)
        save_store(store, index, parser, sorted(kept), extra={**extra, "nodes": nodes}, lexicon=lexicon)
    print(
        f"indexed {len(kept)} page(s), {nodes} nodes, into {store}: "
        f"{len(report.added)} added, {len(report.updated)} updated, {len(report.unchanged)} unchanged, "
        f"{len(removed)} removed, {len(failed)} skipped"
    )
    for doc_id, reason in sorted(failed.items()):
        print(f"{PROG}: skipped {doc_id}: {reason}", file=sys.stderr)
    return 1 if failed else 0


def _page_files(folder: Path) -> tuple[list[Path], Counter[str]]:
    """The page files under ``folder`` (recursively, sorted: :data:`INDEXED_SUFFIXES`) and how many
    other files it holds, by suffix (files and folders whose names start with ``.`` are not counted)."""
    pages: list[Path] = []
    others: Counter[str] = Counter()
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        suffix = path.suffix.lower()
        if suffix in INDEXED_SUFFIXES:
            pages.append(path)
        elif not any(part.startswith(".") for part in path.relative_to(folder).parts):
            others[suffix] += 1
    return sorted(pages), others


class _Pages:
    """The pages of ``files`` as ``Document`` objects, each read when indexing reaches it (none is held
    longer); an unreadable one is recorded in :attr:`failed` (document id -> reason) and skipped."""

    def __init__(self, files: list[Path], root: Path, *, max_bytes: int) -> None:
        self.files, self.root, self.max_bytes = files, root, max_bytes
        self.failed: dict[str, str] = {}

    def __len__(self) -> int:  # the progress bar's total
        return len(self.files)

    def __iter__(self) -> Iterator[Document]:
        from spire_core import SpireError
        from spire_llamaindex import read_page

        for path in self.files:
            try:
                yield read_page(path, self.root, max_bytes=self.max_bytes)
            except (SpireError, OSError) as err:
                self.failed[path.relative_to(self.root).as_posix()] = str(err)


def _index_db(args: argparse.Namespace) -> int:
    """``spire index PAGES --db URI [--ray ADDRESS]``: Postgres + pgvector, in this process or on Ray."""
    from spire_core import HTML, NONE
    from spire_llamaindex import SpireNodeParser

    from .ray_ingest import ray_index

    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    parser = SpireNodeParser(unit=args.unit, policy=NONE if args.no_global_context else HTML)
    # without --ray, a local cluster of one worker: one ingestion path whatever the scale
    address, workers = (args.ray, args.workers) if args.ray is not None else ("local", 1)
    report = ray_index(args.pages, args.db, table=args.table, address=address, workers=workers, parser=parser)
    print(
        f"indexed {report.pages - len(report.failed)} page(s), {report.units} units written, into table "
        f"{args.table!r}: {len(report.added)} added, {len(report.updated)} updated, {len(report.unchanged)} "
        f"unchanged, {len(report.failed)} skipped ({report.pages_per_s:.2f} pages/s on {workers} worker(s))"
    )
    for doc_id, reason in sorted(report.failed.items()):
        print(f"{PROG}: skipped {doc_id}: {reason}", file=sys.stderr)
    return 1 if report.failed else 0


# -- query --------------------------------------------------------------------------------
def _query_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``QueryOptions`` fields the command line sets, checked (a bad value is a usage error)."""
    from spire_core.options import QueryOptions

    if bool(args.llm_base_url) != bool(args.llm_model):
        raise UsageError("--llm-base-url and --llm-model go together")
    options = {
        "budget": args.budget,
        "first_k": args.first_k,
        "max_citations": args.max_citations or None,
        "min_score": args.min_score,
        "resolve_refs": args.resolve_refs,
    }
    try:
        QueryOptions(**options)
    except ValueError as err:
        raise UsageError(str(err)) from None
    return options


def _warn_incomplete(manifest: dict[str, Any], store: Path) -> None:
    if manifest.get("complete", True) is False:
        logging.getLogger("spire_app").warning(
            "the store at %r holds the pages of an interrupted `spire index` run: run it again to finish", str(store)
        )


def _query(args: argparse.Namespace) -> int:
    from .store import load_store, read_manifest

    if not args.question.strip():
        raise UsageError("the question is empty")
    options = _query_options(args)
    if (args.store is None) == (args.db is None):
        raise UsageError("give --store DIR or --db URI (one of them)")
    if args.db is not None:
        from spire_llamaindex import SpireRetriever
        from spire_llamaindex.postgres import postgres_index

        retriever = SpireRetriever(postgres_index(args.db, table=args.table), **options)
    else:
        _warn_incomplete(read_manifest(args.store), args.store)  # a clear error before the model loads
        retriever = load_store(args.store).retriever(**options)
    from .serve import payload_of, query_nodes

    nodes, report = query_nodes(retriever, args.question, llm=_llm(args))
    if args.json:
        print(json.dumps(payload_of(args.question, args.budget, nodes, report), ensure_ascii=False, indent=2))
        return 0
    if not nodes:
        print("no evidence found")
        return 0
    _print_sources(nodes, retriever, args.budget)
    if args.store is not None:
        print(f"\nhighlight one: {PROG} show --store {shlex.quote(str(args.store))} CITATION_ID --out page.html")
    return 0


def _query_arguments(parser: argparse.ArgumentParser, default: str = "") -> None:
    """The query options (``QueryOptions``) a command takes (``default``: "default " where a request overrides them)."""
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        help=f"{default}token budget of the result (default {DEFAULT_BUDGET})",
    )
    parser.add_argument(
        "--max-citations",
        type=int,
        default=DEFAULT_MAX_CITATIONS,
        metavar="N",
        help=f"{default}citations named as evidence at most, strongest first; the rest of what the budget paid for "
        f"is delivered as context (default {DEFAULT_MAX_CITATIONS}; 0: no limit)",
    )
    parser.add_argument(
        "--min-score",
        type=float,
        default=DEFAULT_MIN_SCORE,
        metavar="S",
        help=f"{default}strength (0 to 1) a citation needs to be named as evidence (default {DEFAULT_MIN_SCORE})",
    )
    parser.add_argument(
        "--first-k",
        type=int,
        default=DEFAULT_FIRST_K,
        metavar="K",
        help=f"{default}sentence hits aggregated in the first round, doubled while the budget is not filled "
        f"(default {DEFAULT_FIRST_K})",
    )
    parser.add_argument(
        "--resolve-refs",
        action="store_true",
        help="follow each cited sentence's links one hop into the indexed pages and cite what they name "
        "(a definition, a section head) within the same budget; a link it cannot follow is reported",
    )


# -- serve --------------------------------------------------------------------------------
def _serve(args: argparse.Namespace) -> int:
    from .store import load_store, read_manifest

    options = _query_options(args)
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    _warn_incomplete(read_manifest(args.store), args.store)
    from .serve import QueryService, SpireServer

    service = QueryService(load_store(args.store), llm=_llm(args), **options)
    service.warm()
    try:
        server = SpireServer(service, args.host, args.port)
    except OSError as err:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None
    print(f"serving {args.store} on {server.url} (/: the viewer, /query?q=..., /health); Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _print_sources(nodes: list[NodeWithScore], retriever: Any, budget: int) -> None:
    """Each page once with ``[n]`` after its cited sentences (within ``budget``), then the ids behind ``[n]``."""
    from spire_core.results.sources import cite_sources
    from spire_llamaindex import subdocument_of

    subs = [s for s in (subdocument_of(n) for n in nodes) if s is not None and s.citations]
    options = retriever.options
    view = cite_sources(
        subs, retriever.sources, budget=budget, size=options.size, policy=options.policy, fmt=options.fmt
    )
    print(f"{len(subs)} page(s), {len(view.shown)} citation(s), {view.cost} of {budget} tokens\n")
    print(view.text)
    print("\ncitations (paste an id into `spire show` as it is):")
    for n, cit in enumerate(view.citations, 1):
        if n in view.shown:
            score = f"  (score {cit.score:.3f})" if cit.score is not None else ""
            print(f"  [{n}] {shell_word(cit.key())}{score}")


#: a word a POSIX shell reads as it is: ``#`` and ``~`` are literal past a word's first character
_SHELL_WORD = re.compile(r"[\w@%+=:,./-][\w@%+=:,./#~-]*", re.ASCII)


def shell_word(text: str) -> str:
    """``text`` as a shell word: bare when the shell reads it as it is (a citation id of a plain page
    id: ``page.html#1.0.3,1.0.4``), else quoted."""
    return text if _SHELL_WORD.fullmatch(text) else shlex.quote(text)


# -- show ---------------------------------------------------------------------------------
def _show(args: argparse.Namespace) -> int:
    from spire_core import Citation, UnknownPathError

    from .serve import citation_of, highlighted_page
    from .store import open_docstore, read_manifest

    citations = []
    for key in args.citations:
        try:
            citations.append(citation_of(key))
        except ValueError as err:
            raise UsageError(str(err)) from None
    read_manifest(args.store)
    from spire_llamaindex import SourceDocuments

    sources = SourceDocuments(open_docstore(args.store))
    by_page: dict[str, list[Citation]] = {}
    for cit in citations:
        by_page.setdefault(cit.doc_id, []).append(cit)
    for doc_id, cited in by_page.items():  # every citation checked before any file is written
        if doc_id not in sources:
            raise UsageError(f"page {doc_id!r} is not in the store at {str(args.store)!r}")
        doc = sources(doc_id)
        for cit in cited:
            try:
                doc.indices(cit.paths)
            except UnknownPathError:
                raise UsageError(f"citation {cit.key()!r} is not in page {doc_id!r} (re-indexed since?)") from None
    outputs = _show_files(args.out, list(by_page))
    for doc_id, cited in by_page.items():
        page = highlighted_page(sources, doc_id, cited)
        out = outputs[doc_id]
        try:
            out.write_text(page, encoding="utf-8")
        except OSError as err:
            raise UsageError(f"cannot write {str(out)!r}: {err.strerror or err}") from None
        print(f"wrote {out}: {len(cited)} citation(s) highlighted in {doc_id}")
    return 0


def _show_files(out: Path, doc_ids: list[str]) -> dict[str, Path]:
    """Where ``spire show`` writes each page: ``out`` for one page; for several, ``OUT-PAGE.html`` beside
    ``out``, PAGE being the page id without its suffix, characters other than letters, digits, ``.``,
    ``-`` and ``_`` as ``_`` (``-2``, ``-3``, ... when two ids give the same name)."""
    if len(doc_ids) == 1:
        return {doc_ids[0]: out}
    suffix = out.suffix or ".html"
    files: dict[str, Path] = {}
    for doc_id in doc_ids:
        stem = Path(doc_id).stem if Path(doc_id).suffix.lower() in INDEXED_SUFFIXES else doc_id
        name = re.sub(r"[^\w.-]+", "_", f"{Path(doc_id).parent.as_posix()}/{stem}".removeprefix("./"))
        name = name.strip("._") or "page"
        path, n = out.with_name(f"{out.stem}-{name}{suffix}"), 1
        while path in files.values():
            n += 1
            path = out.with_name(f"{out.stem}-{name}-{n}{suffix}")
        files[doc_id] = path
    return files


if __name__ == "__main__":
    sys.exit(main())
