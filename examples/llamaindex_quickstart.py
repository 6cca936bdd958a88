"""Quickstart: index the example pages with LlamaIndex (offline), ask one question, print the citations.

    python examples/llamaindex_quickstart.py ["your question"]

The packaged all-MiniLM-L6-v2 embeds the sentence seeds on the CPU (about a minute for the
three pages); nothing is downloaded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is packaged: never look online

from spire_llamaindex import SpireRetriever, citations_of, html_files, read_page

PAGES = Path(__file__).resolve().parent / "pages"


def main(argv: list[str]) -> int:
    question = argv[0] if argv else "What is the valid range of checkpoint_timeout?"
    # Documents: id = path under PAGES, text = the page's HTML
    documents = [read_page(path, PAGES) for path in html_files(PAGES)]
    # SpireNodeParser + VectorStoreIndex + the sources in the docstore, in one call
    retriever = SpireRetriever.from_documents(documents, budget=400, show_progress=True)

    print(f"\nQ: {question}\n")
    for node in retriever.retrieve(question):
        print(f"== {node.node.metadata['spire_doc_id']} (score {node.score:.3f})")
        for citation in citations_of(node):
            print(f"-- citation {citation.key()}")
            print(citation.text, end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
