"""LlamaIndex adapter speed: index build per page (parse + seeds, embedding) and query latency.

    python -m benchmarks.llamaindex_speed [--pages DIR] [--questions N] [--budget N] [--json]

Index build is timed page by page: ``SpireNodeParser`` (parse, segment, render each seed
with its global context) and embedding of the page's seeds with the packaged model
(through ``embed_texts``, in the batches ``spire index`` uses). Query latency is the median over
the questions, each asked once untimed first (so the parsed-page cache is warm), of
``SpireRetriever.retrieve`` with the query embedding included, and excluded (a
``QueryBundle`` carrying a precomputed embedding: vector search + aggregation + result
nodes). Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "pages"
#: Questions over examples/pages (PostgreSQL WAL settings, Python json, airports of France).
QUESTIONS = [
    "What is the valid range of checkpoint_timeout?",
    "What is the default value of max_wal_size?",
    "What does wal_level minimal do?",
    "How often are WAL checkpoints taken by default?",
    "What happens when fsync is turned off?",
    "Which setting controls the WAL buffer size?",
    "What does synchronous_commit off risk?",
    "What is the purpose of archive_command?",
    "How does full_page_writes protect against torn pages?",
    "What does checkpoint_completion_target control?",
    "How do I decode JSON with a custom object hook?",
    "What does json.dumps do with sort_keys?",
    "Which exception does json.loads raise for invalid input?",
    "How are Python tuples encoded in JSON?",
    "What is the indent parameter of json.dump for?",
    "How can I serialize a custom class with JSONEncoder?",
    "What is the ICAO code of Périgueux Bassillac airport?",
    "Which airport serves Mende?",
    "What is the IATA code of Le Mans Arnage aerodrome?",
    "Which airports in France are military?",
]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _questions(nodes: list[Any], n: int, examples: bool) -> list[str]:
    if examples:
        return QUESTIONS[:n]
    step = max(1, len(nodes) // max(n, 1))  # other pages: sentences of their own as questions
    return [" ".join(node.get_content().split()[-12:]) for node in nodes[::step][:n]]


def run(pages: Path, n_questions: int, budget: int) -> dict[str, Any]:
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import MetadataMode, QueryBundle

    from spire_llamaindex import SpireNodeParser, SpireRetriever, default_embeddings, html_files, read_page
    from spire_llamaindex.embedding import embed_texts
    from spire_llamaindex.index import store_sources

    start = time.perf_counter()
    embed = default_embeddings()
    embed.get_text_embedding("warm up")
    load_s = time.perf_counter() - start
    parser = SpireNodeParser()
    rows: list[dict[str, Any]] = []
    all_nodes: list[Any] = []
    documents: list[Any] = []
    for path in html_files(pages):
        doc = read_page(path, pages)
        t0 = time.perf_counter()
        nodes = parser.get_nodes_from_documents([doc])
        t1 = time.perf_counter()
        vectors = embed_texts(embed, [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes])
        for node, vector in zip(nodes, vectors, strict=True):
            node.embedding = vector
        t2 = time.perf_counter()
        rows.append(
            {
                "page": doc.id_,
                "kib": round(len(doc.text.encode()) / 1024, 1),
                "nodes": len(nodes),
                "parse_ms": _ms(t1 - t0),
                "embed_ms": _ms(t2 - t1),
                "embed_ms_per_node": round(_ms(t2 - t1) / max(1, len(nodes)), 2),
            }
        )
        all_nodes.extend(nodes)
        documents.append(doc)
    if not documents:
        raise SystemExit(f"no *.html pages under {pages}")
    context = StorageContext.from_defaults()
    index = VectorStoreIndex(nodes=all_nodes, storage_context=context, embed_model=embed)
    store_sources(context.docstore, documents)
    retriever = SpireRetriever(index, budget=budget)

    questions = _questions(all_nodes, n_questions, pages.resolve() == EXAMPLES)
    included, excluded, embedding = [], [], []
    for q in questions:
        retriever.retrieve(q)  # warm: pages parsed once, as in a long-running service
        t0 = time.perf_counter()
        vector = embed.get_query_embedding(q)
        t1 = time.perf_counter()
        retriever.retrieve(QueryBundle(q, embedding=vector))
        t2 = time.perf_counter()
        retriever.retrieve(q)
        t3 = time.perf_counter()
        embedding.append(t1 - t0)
        excluded.append(t2 - t1)
        included.append(t3 - t2)
    return {
        "pages_dir": str(pages),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        "model_load_s": round(load_s, 2),
        "pages": rows,
        "index": {
            "pages": len(rows),
            "nodes": len(all_nodes),
            "parse_s": round(sum(r["parse_ms"] for r in rows) / 1000, 2),
            "embed_s": round(sum(r["embed_ms"] for r in rows) / 1000, 2),
        },
        "query": {
            "questions": len(questions),
            "budget": budget,
            "median_ms_embedding_excluded": _ms(statistics.median(excluded)),
            "median_ms_embedding_included": _ms(statistics.median(included)),
            "median_ms_query_embedding": _ms(statistics.median(embedding)),
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--pages", type=Path, default=EXAMPLES, help="folder of *.html pages (default examples/pages)")
    ap.add_argument("--questions", type=int, default=20, help="number of questions (default 20)")
    ap.add_argument("--budget", type=int, default=1000, help="retriever token budget (default 1000)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if not args.pages.is_dir():
        print(f"no such folder: {args.pages}", file=sys.stderr)
        return 2
    result = run(args.pages, args.questions, args.budget)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(f"{result['machine']}; model load {result['model_load_s']} s\n")
    print(f"{'page':<40} {'KiB':>8} {'nodes':>6} {'parse ms':>9} {'embed ms':>9} {'ms/node':>8}")
    for r in result["pages"]:
        print(
            f"{r['page'][:40]:<40} {r['kib']:>8} {r['nodes']:>6} {r['parse_ms']:>9} {r['embed_ms']:>9} "
            f"{r['embed_ms_per_node']:>8}"
        )
    idx, q = result["index"], result["query"]
    print(f"\nindex: {idx['pages']} pages, {idx['nodes']} nodes: parse {idx['parse_s']} s, embed {idx['embed_s']} s")
    print(
        f"query (median of {q['questions']}, budget {q['budget']}): {q['median_ms_embedding_excluded']} ms "
        f"without the query embedding, {q['median_ms_embedding_included']} ms with it "
        f"(embedding alone {q['median_ms_query_embedding']} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
