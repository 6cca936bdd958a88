"""Highlight the citations for a question in their source page (no model needed).

Indexes the sentence seeds of ``examples/pages/postgresql-wal.html``, ranks them by plain
word overlap with the question, aggregates the best hits under a small budget and writes
the page with the cited sentences marked to ``examples/highlight/``::

    python examples/highlight_example.py ["question"]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from spire_core import Hit, aggregate, highlight, parse_html, seeds

HERE = Path(__file__).resolve().parent
PAGE = HERE / "pages" / "postgresql-wal.html"
OUT = HERE / "highlight" / "postgresql-wal-highlighted.html"
QUESTION = "What is the valid range of checkpoint_timeout?"
STOP = frozenset({"a", "an", "and", "are", "for", "in", "is", "it", "of", "on", "or", "the", "to", "what", "which"})


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if w not in STOP}


def main(argv: list[str]) -> int:
    question = argv[0] if argv else QUESTION
    raw = PAGE.read_bytes()
    doc = parse_html(raw, doc_id=PAGE.name)
    asked = words(question)
    scored = [(len(asked & words(s.text)) / (1 + len(asked)), s) for s in seeds(doc)]
    ranked = sorted((x for x in scored if x[0] > 0), key=lambda x: -x[0])[:5]
    hits = [Hit(PAGE.name, s.paths, score) for score, s in ranked]
    results = aggregate(hits, documents={PAGE.name: doc}, budget=200)
    citations = [c for r in results for c in r.citations]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(highlight(raw, citations, doc_id=PAGE.name), encoding="utf-8")
    print(f"{question}\n{len(citations)} citations -> {OUT.relative_to(HERE.parent)}")
    for n, c in enumerate(citations, 1):
        print(f"[{n}] {c.text.splitlines()[-1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
