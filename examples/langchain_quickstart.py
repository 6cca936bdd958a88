"""SPIRE with LangChain: index HTML pages, ask a question, get an answer with numbered citations.

    python examples/langchain_quickstart.py                      # offline: packaged model, fake chat model
    python examples/langchain_quickstart.py --base-url http://localhost:8000/v1 --model NAME
    python examples/langchain_quickstart.py --question "..." --pages a.html b.html

The LCEL chain is ``retriever | numbered citations | ChatPromptTemplate | chat model |
StrOutputParser``; every ``[n]`` in the answer maps back to a page and a path set.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from operator import itemgetter
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnableParallel, RunnablePassthrough

from spire_core import encode_paths
from spire_langchain import SpireRetriever, numbered_citations

PAGES = Path(__file__).parent / "pages"
QUESTION = "What is the valid range of checkpoint_timeout?"
#: what the offline fake model says (it cannot read): the answer a real model gives from source [1]
CANNED = "checkpoint_timeout can be set between 30 seconds and one day; the default is five minutes [1]."

PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "Answer the question from the numbered sources only. Cite each claim with its source "
            "number in brackets, e.g. [1]. If the sources do not answer it, say so.",
        ),
        ("human", "Sources:\n\n{context}\n\nQuestion: {question}"),
    ]
)


def build_chain(retriever: SpireRetriever, model: Runnable[Any, Any]) -> Runnable[str, dict[str, Any]]:
    """question -> ``{"docs", "question", "context", "answer"}``: retrieve, cite per page, prompt, answer."""
    return (
        RunnableParallel(docs=retriever, question=RunnablePassthrough())
        .assign(context=itemgetter("docs") | RunnableLambda(retriever.format_citations))
        .assign(answer=PROMPT | model | StrOutputParser())
    )


def load_pages(paths: list[Path]) -> list[Document]:
    """HTML files as LangChain Documents (``source`` = file name: the id used for upserts)."""
    return [Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.name}) for p in paths]


def chat_model(args: argparse.Namespace) -> BaseChatModel:
    if not args.base_url:
        canned = CANNED if args.question == QUESTION else "I am an offline fake model; see the sources [1]."
        return FakeListChatModel(responses=[canned])
    from langchain_openai import ChatOpenAI

    key = os.environ.get("OPENAI_API_KEY", "not-needed")
    return ChatOpenAI(base_url=args.base_url, model=args.model, api_key=key, temperature=0)  # type: ignore[arg-type]


def main(argv: list[str] | None = None, *, retriever: SpireRetriever | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--pages", nargs="+", type=Path, default=sorted(PAGES.glob("*.html")))
    parser.add_argument("--budget", type=int, default=1000, help="tokens of evidence handed to the model")
    parser.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    parser.add_argument("--model", default="default", help="the model name on that server")
    args = parser.parse_args(argv)

    if retriever is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        print(f"indexing {len(args.pages)} page(s) with the packaged all-MiniLM-L6-v2 ...", file=sys.stderr)
        retriever = SpireRetriever.from_documents(load_pages(args.pages), budget=args.budget)
    out = build_chain(retriever, chat_model(args)).invoke(args.question)

    citations = numbered_citations(out["docs"])
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", out["answer"]) if 0 < int(n) <= len(citations)})
    print(f"Q: {args.question}\n\nA: {out['answer']}\n")
    print(f"Sources ({sum(d.metadata['spire_cost'] for d in out['docs'])} tokens from {len(out['docs'])} page(s)):")
    for n in cited or range(1, len(citations) + 1):
        c = citations[n - 1]
        text = "\n".join("    " + line for line in c.text.strip().splitlines() if line.strip())
        print(f"[{n}] {c.doc_id} paths={encode_paths(c.paths)}\n{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
