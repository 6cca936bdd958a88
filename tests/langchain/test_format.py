"""The LCEL recipe sends what the budget paid for: one merged view per page, numbered citation markers inside."""

from __future__ import annotations

import re
from operator import itemgetter

import pytest
from langchain_core.documents import Document
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

from spire_langchain import SpireRetriever, numbered_citations
from tests.langchain.conftest import EXAMPLE_PAGES, KeywordEmbeddings

QUESTION = "What is the valid range of checkpoint_timeout?"


@pytest.fixture(scope="module")
def wal_retriever() -> SpireRetriever:
    page = EXAMPLE_PAGES / "postgresql-wal.html"
    pages = [Document(page_content=page.read_text(encoding="utf-8"), metadata={"source": page.name})]
    return SpireRetriever.from_documents(pages, KeywordEmbeddings(), budget=1000)


@pytest.mark.parametrize("budget", [150, 1000])
def test_the_prompt_context_is_within_the_budget(wal_retriever: SpireRetriever, budget: int) -> None:
    retriever = wal_retriever.model_copy(update={"budget": budget})
    sent: list[str] = []

    def llm(prompt: PromptValue) -> str:
        sent.append(prompt.to_string())
        return "Between 30 seconds and one day [1]."

    prompt = ChatPromptTemplate.from_messages([("human", "Sources:\n\n{context}\n\nQuestion: {question}")])
    chain = (
        RunnableParallel(docs=retriever, question=RunnablePassthrough())
        .assign(context=itemgetter("docs") | RunnableLambda(retriever.format_citations))
        .assign(answer=prompt | RunnableLambda(llm))
    )
    out = chain.invoke(QUESTION)
    context = sent[0].split("Sources:\n\n", 1)[1].rsplit("\n\nQuestion:", 1)[0]
    assert retriever.size(context) <= budget
    assert context == out["context"]
    # one view per page: the page's headings once, however many citations it has
    cited = numbered_citations(out["docs"])
    assert len(cited) > 1
    assert context.count("Source: postgresql-wal.html") == 1
    assert context.count("## 20.5. Write Ahead Log") == 1
    # every marker is a citation of the retrieved documents, in their numbering
    marks = [int(n) for n in re.findall(r" \[(\d+)\]", context)]
    assert marks and all(1 <= n <= len(cited) for n in marks)
    assert sorted(set(marks)) == list(range(1, max(marks) + 1))  # one sequence, strongest first


def test_a_marker_points_at_its_citation(wal_retriever: SpireRetriever) -> None:
    docs = wal_retriever.invoke(QUESTION)
    context = wal_retriever.format_citations(docs)
    cited = numbered_citations(docs)
    n = next(i for i, c in enumerate(cited, 1) if "30 seconds and one day" in c.text)
    after = context.split("30 seconds and one day.", 1)[1]
    assert re.search(r" \[(\d+)\]", after).group(1) == str(n)  # the citation's marker ends its text
    assert sorted({int(m) for m in re.findall(r" \[(\d+)\]", context)}) == list(range(1, len(cited) + 1))
    assert cited[n - 1].doc_id == "postgresql-wal.html" and cited[n - 1].paths
