"""A lexical signal over sentences (BM25), fused with the passage ranking (:mod:`spire_core.query.fusion`).

The default index embeds *passages* and cites their member sentences (:mod:`spire_core.indexing.passages`);
a passage's vector averages a sentence that names the question's rare words away. This module
ranks the sentences themselves by BM25 (the `bm25s <https://github.com/xhluca/bm25s>`_ library,
Snowball stemmers from `PyStemmer <https://github.com/snowballstem/pystemmer>`_), which embeds
nothing; :mod:`spire_core.query.fusion` fuses that ranking with the passage ranking expanded
to sentences by reciprocal rank fusion. What comes out are :class:`~spire_core.values.Hit`
objects whose path sets are sentences' path sets, so :func:`~spire_core.query.aggregate.aggregate`
and every citation are unchanged.

**Tokenizer** (:func:`tokenizer`): the text is NFKC-normalised and case-folded, words are the
runs of Unicode word characters (``\\w+``: letters of any script, digits, ``_``, so
``checkpoint_timeout`` stays one word and ``Größe`` or ``élève`` stay whole), the language's
stop words are dropped (bm25s's lists, chosen by the same language code through
:func:`spire_core.reading.language.stop_words`, where the table views take theirs; a language
without a list keeps every word) and the rest are stemmed by the language's Snowball stemmer (a
language without one keeps its words whole). The language is a PyStemmer name or ISO code
(``"english"``, ``"fr"``, ``"german"``, ...; :func:`languages`). Each page is tokenized in its
own language (:attr:`Document.language <spire_core.document.tree.Document.language>`: declared,
else detected; the index's language when it has none), and a question in each language of the
indexed pages. Nothing in it is specific to English but the default.

**Han, kana, Hangul** (:data:`spire_core.size.CJK`), chosen by script, not by language, in
pages and questions alike: Japanese and Chinese write no spaces between words, so ``\\w+``
would make a clause one term that no question holds. A run of those characters gives terms by
script instead (:func:`~spire_core.reading.language.cjk_terms`), with no dictionary and no word
list: Han as overlapping character bigrams, as Lucene's CJKAnalyzer does ("系统升级" -> "系统",
"统升", "升级"; a lone character is itself), a katakana run as one term (a loanword: "パッケージ"
weighs as one word, not as four bigrams), hiragana dropped beside Han or katakana (Japanese
writes its particles and endings in it: "の", "ですか"; a run of hiragana alone, and Hangul, are
bigrams). Spaces between two Han or kana characters (a line break in a page's source) are
bridged, spaces between Hangul words (Korean spaces its words) are not. A Chinese or Japanese
question matches a sentence by the terms they share, and the words of other scripts beside them
("stable Debian 系统升级") are words as above, stop words dropped and stemmed. On the Japanese
tuning set (``benchmarks/tuning/cjk-ja``) the script terms found 3 answers more than bigrams
over every kana (docs/benchmarks.md); Chinese reads as before.

**Weight in the fusion** (:func:`fusion_weight`): the packaged embedding model is
English-trained and ranks Japanese and Chinese passages poorly, so a question written in Han,
kana or Hangul weighs the lexical ranking more in the rank fusion: ``1 + (CJK_FUSION_WEIGHT -
1) * share``, ``share`` the question's share of such characters
(:func:`~spire_core.reading.language.cjk_share`); a question without any keeps 1, the weight
tuned on the English dev sets.

**Unseen terms** (:meth:`LexicalIndex.parts`): a question's term that no indexed sentence holds
is matched, at half weight (:data:`PART_WEIGHT`), through the indexed terms that contain it or
that it contains, of at least :data:`MIN_PART_CHARS` characters. Compounding languages write
one thing as one word or several ("Festplattenabbilder" asked, "Abbilder" on the page;
"Verlage" asked, "Notenverlagen" on the page), which no stemmer joins. Decided by the index's
own vocabulary, with no word list: a term the pages hold is matched only as itself. On the
German tuning sets it found the two answers a split compound had hidden
(``benchmarks/tuning/handbook-de``, ``manuals-de3``); no English, French or dev-set score
changed (docs/benchmarks.md).

**Units** (:func:`sentence_units`): each sentence is indexed with the text its own sentence
seed embeds (``seeds(doc, unit="sentence")``): its words under its global context (title,
headings, a term's ``dt``, a cell's row and column labels), since a question names the
parameter a definition sits under more often than the definition names it.

:class:`LexicalIndex` is a corpus index over every sentence, searched per question (optionally
within some pages) and fused with the dense ranking by
:func:`~spire_core.query.fusion.fused_search`; :class:`Lexicon` keeps one in step with a store's
pages and saves it beside the store's vectors.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import re
import threading
import time
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

import numpy as np

from spire_core.context import HTML, Policy
from spire_core.document.paths import decode_paths, decoded_paths, encode_paths
from spire_core.document.tree import Document, Path
from spire_core.errors import SpireError
from spire_core.indexing.units import seeds
from spire_core.options import Fmt
from spire_core.reading.language import cjk_share, cjk_terms, stop_words
from spire_core.size import CJK
from spire_core.values import Hit

__all__ = [
    "CJK_FUSION_WEIGHT",
    "DEFAULT_LANGUAGE",
    "LexicalIndex",
    "Lexicon",
    "fusion_weight",
    "languages",
    "sentence_units",
    "tokenizer",
]

#: The language of the stemmer and stop words when none is given (a PyStemmer name or ISO code).
DEFAULT_LANGUAGE = "english"
#: An unseen query term is matched through indexed terms of at least this many characters
#: that contain it or that it contains (module docstring, *Unseen terms*) ...
MIN_PART_CHARS = 5
#: ... each scoring this share of what the term itself would ...
PART_WEIGHT = 0.5
#: ... at most this many containing it, and as many contained in it; terms longer than
#: :data:`MAX_SPLIT_CHARS` are not split (the pieces looked up grow with the square of the length).
MAX_PARTS = 64
MAX_SPLIT_CHARS = 64
#: A question's first this many unseen terms get stand-ins (a question pasted from a page may hold thousands).
MAX_UNSEEN_TERMS = 16
#: The lexical ranking's weight in the rank fusion for a question written wholly in Han, kana or
#: Hangul (:func:`fusion_weight`; Japanese tuning set, terms by script: recall 0.788 at 1, 0.846
#: at 2, 1.0 from 3 to 8; docs/benchmarks.md).
CJK_FUSION_WEIGHT = 4.0
#: BM25 parameters (bm25s's defaults, Lucene's variant).
DEFAULT_K1 = 1.5
DEFAULT_B = 0.75

#: One indexed unit: its page, its path set (a sentence's) and its text.
LexicalUnit = tuple[str, frozenset[Path], str]

#: The saved index's format: 2 since runs of Han, kana and Hangul are indexed as character bigrams,
#: 3 since they are indexed by script (:func:`~spire_core.reading.language.cjk_terms`).
_FORMAT = 3
#: The files :meth:`LexicalIndex.save` writes in a folder.
INDEX_FILE, TERMS_FILE, LENGTHS_FILE = "lexical.json.gz", "lexical-terms.npy", "lexical-lengths.npy"


def languages() -> tuple[str, ...]:
    """The Snowball stemmers' names PyStemmer knows (each also takes its ISO 639 code)."""
    import Stemmer

    return tuple(Stemmer.algorithms())


def tokenizer(
    language: str = DEFAULT_LANGUAGE, *, stem: bool = True, stopwords: bool = True
) -> Callable[[str], list[str]]:
    """``text -> terms``: NFKC, case-folded ``\\w+`` words less ``language``'s stop words, Snowball-stemmed;
    runs of Han, kana and Hangul as terms by script (:func:`cjk_terms`; module docstring).

    ``stem=False`` keeps the words as they are; ``stopwords=False`` keeps every word.
    Raises ``KeyError`` for a language PyStemmer has no stemmer for (when stemming).
    """
    import Stemmer

    stop = stop_words(language) if stopwords else frozenset()
    stemmer = Stemmer.Stemmer(language.lower()) if stem else None

    def tokenize(text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text).casefold()
        if text.isascii() or _CJK_CHAR.search(text) is None:
            words = [w for w in _WORD.findall(text) if w not in stop]
            return stemmer.stemWords(words) if stemmer is not None else words
        terms: list[str] = []
        words = []  # the other words, stemmed together
        at: list[int] = []  # where each goes in ``terms``
        for run in _CJK_OR_WORD.findall(_CJK_GAP.sub("", text)):
            if _CJK_CHAR.match(run):
                terms.extend(cjk_terms(run))
            elif run not in stop:
                at.append(len(terms))
                words.append(run)
                terms.append(run)
        if stemmer is not None:
            for i, stemmed in zip(at, stemmer.stemWords(words), strict=True):
                terms[i] = stemmed
        return terms

    return tokenize


_WORD = re.compile(r"\w+")
_CJK_CHAR = re.compile(f"[{CJK}]")
#: a run of Han, kana and Hangul word characters (not ``・``), or a run of other word characters
_CJK_OR_WORD = re.compile(rf"(?:(?=\w)[{CJK}])+|[^\W{CJK}]+")
#: Han and kana: :data:`~spire_core.size.CJK` less Hangul, whose words are written apart
_HAN_KANA = CJK.replace("\uac00-\ud7af", "")
#: spaces between two Han or kana characters (a line break in the page's source), bridged
_CJK_GAP = re.compile(rf"(?<=[{_HAN_KANA}])\s+(?=[{_HAN_KANA}])")


def fusion_weight(query: str) -> float:
    """The lexical ranking's weight against the dense one's (1) in the rank fusion for ``query``:
    1 for a question without Han, kana or Hangul, up to :data:`CJK_FUSION_WEIGHT` for one written
    wholly in them (module docstring, *Weight in the fusion*)."""
    share = cjk_share(query)
    return 1.0 + (CJK_FUSION_WEIGHT - 1.0) * share if share else 1.0


@dataclass(frozen=True)
class _Settings:
    language: str = DEFAULT_LANGUAGE
    stem: bool = True
    stopwords: bool = True
    k1: float = DEFAULT_K1
    b: float = DEFAULT_B


def _bm25s() -> Any:
    """The bm25s module, its logger following the application's logging configuration (bm25s
    sets it to DEBUG on import, which printed "Building index from tokens" under any handler)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.NOTSET)
    return bm25s


class LexicalIndex:
    """BM25 (bm25s) over sentence units, searchable within some pages, saved to a folder.

    The units are kept per page as their terms, so a page is added or replaced
    (:meth:`add_page`) without tokenizing the others again; held compactly (path sets encoded,
    terms as vocabulary ids in one array per page: 63,341 bench sentences held 65 MB of Python
    objects as sets and lists of strings). bm25s stores each unit's score for
    each term with the collection's IDF and mean length folded in, and both change with any
    page, so the next search after a change re-indexes the stored terms (no tokenizing; bm25s's
    index step is Python loops over every unit: 12 s wall for the 140 bench pages' 63,341
    sentences on a 2-core machine under load, about 2 s unloaded).
    """

    def __init__(
        self,
        *,
        language: str = DEFAULT_LANGUAGE,
        stem: bool = True,
        stopwords: bool = True,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
    ) -> None:
        self.settings = _Settings(language, stem, stopwords, k1, b)
        #: language -> its tokenizer (:meth:`tokenizer`)
        self._tokenizers: dict[str, Callable[[str], list[str]]] = {}
        #: per page, the language its units were tokenized in
        self.languages: dict[str, str] = {}
        #: per page, in insertion order: its units' encoded path sets, their terms as ids into
        #: ``_words`` (one array), and each unit's number of terms
        self._pages: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
        self._vocab: dict[str, int] = {}
        self._words: list[str] = []
        #: per page, the version it was indexed at (e.g. the store's hash of the page; ``None``: unknown)
        self.versions: dict[str, str | None] = {}
        self._bm25: Any = None
        #: the BM25 index's vocabulary, one term a line (:meth:`parts`), made at the first search after indexing
        self._joined: str | None = None
        self._rows: dict[str, tuple[int, int]] = {}
        self._doc_of: list[str] = []
        self._paths: list[str] = []
        #: seconds the last (re-)indexing took
        self.index_seconds = 0.0

    # -- building ------------------------------------------------------------------------
    @classmethod
    def build(cls, units: Iterable[LexicalUnit], **settings: Any) -> LexicalIndex:
        """An index of ``units`` (``(doc_id, paths, text)``; a page's units together or not)."""
        index = cls(**settings)
        pages: dict[str, list[tuple[frozenset[Path], str]]] = {}
        for doc_id, paths, text in units:
            pages.setdefault(doc_id, []).append((paths, text))
        for doc_id, page in pages.items():
            index.add_page(doc_id, page)
        return index

    def tokenizer(self, language: str | None) -> Callable[[str], list[str]]:
        """The tokenizer of ``language`` (None: the index's), with the index's settings; a
        language without a Snowball stemmer keeps its words whole."""
        name = language or self.settings.language
        got = self._tokenizers.get(name)
        if got is None:
            stem, stopwords = self.settings.stem, self.settings.stopwords
            try:
                got = tokenizer(name, stem=stem, stopwords=stopwords)
            except KeyError:
                got = tokenizer(name, stem=False, stopwords=stopwords)
            self._tokenizers[name] = got
        return got

    def add_page(
        self,
        doc_id: str,
        units: Iterable[tuple[frozenset[Path], str]],
        *,
        version: str | None = None,
        language: str | None = None,
    ) -> None:
        """Add page ``doc_id``'s units (``(paths, text)``) at ``version``, replacing what it had,
        tokenized in the page's ``language`` (an ISO code or a name; None: the index's)."""
        paths: list[str] = []
        ids: list[int] = []
        lengths: list[int] = []
        tokenize = self.tokenizer(language)
        for p, text in units:
            paths.append(encode_paths(p))
            terms = tokenize(text)
            ids.extend(self._term_id(t) for t in terms)
            lengths.append(len(terms))
        self._store(doc_id, paths, ids, lengths, version, language)

    def add_document(
        self, doc: Document, *, policy: Policy = HTML, version: str | None = None, doc_id: str | None = None
    ) -> None:
        """Add ``doc``'s sentences (:func:`sentence_units`) in its language (declared or detected:
        :attr:`Document.language <spire_core.document.tree.Document.language>`), as page
        ``doc_id`` (default: the document's own id)."""
        units = [(paths, text) for _, paths, text in sentence_units(doc, policy=policy)]
        self.add_page(doc_id or doc.doc_id or "", units, version=version, language=doc.language)

    def _term_id(self, term: str) -> int:
        found = self._vocab.get(term)
        if found is None:
            found = self._vocab[term] = len(self._words)
            self._words.append(term)
        return found

    def _store(
        self,
        doc_id: str,
        paths: list[str],
        ids: list[int],
        lengths: list[int],
        version: str | None,
        language: str | None,
    ) -> None:
        self._pages.pop(doc_id, None)
        self._pages[doc_id] = (paths, np.asarray(ids, dtype=np.int32), np.asarray(lengths, dtype=np.int32))
        self.versions[doc_id] = version
        self.languages[doc_id] = language or self.settings.language
        self._bm25 = None

    def _terms(self, doc_id: str) -> list[list[str]]:
        """Page ``doc_id``'s units as lists of terms."""
        _, ids, lengths = self._pages[doc_id]
        words = [self._words[i] for i in ids.tolist()]
        out: list[list[str]] = []
        start = 0
        for n in lengths.tolist():
            out.append(words[start : start + n])
            start += n
        return out

    def remove_page(self, doc_id: str) -> None:
        """Forget page ``doc_id`` (nothing when it is not indexed)."""
        self.versions.pop(doc_id, None)
        self.languages.pop(doc_id, None)
        if self._pages.pop(doc_id, None) is not None:
            self._bm25 = None

    def __len__(self) -> int:
        return sum(len(p) for p, _, _ in self._pages.values())

    @property
    def pages(self) -> tuple[str, ...]:
        return tuple(self._pages)

    def _index(self) -> Any:
        if self._bm25 is not None:
            return self._bm25
        bm25s = _bm25s()
        start = time.perf_counter()
        corpus: list[list[str]] = []
        self._rows, self._doc_of, self._paths = {}, [], []
        for doc_id, (paths, _, _) in self._pages.items():
            self._rows[doc_id] = (len(corpus), len(corpus) + len(paths))
            corpus.extend(self._terms(doc_id))
            self._paths.extend(paths)
            self._doc_of.extend([doc_id] * len(paths))
        bm25 = bm25s.BM25(k1=self.settings.k1, b=self.settings.b)
        if corpus:
            bm25.index(corpus, show_progress=False)
        self._bm25, self._joined = bm25, None
        self.index_seconds = time.perf_counter() - start
        return bm25

    # -- searching -----------------------------------------------------------------------
    def search(
        self, query: str, k: int, *, doc_ids: Iterable[str] | None = None
    ) -> list[tuple[str, frozenset[Path], float]]:
        """The ``k`` units with the highest BM25 score for ``query`` (``(doc_id, paths, score)``,
        best first, ties in index order), only among the pages ``doc_ids`` when given; units
        sharing no term with the query are never returned."""
        return [(h.doc_id, h.paths, h.score) for h in self.hits(query, k, doc_ids=doc_ids)]

    def query_terms(self, query: str) -> list[str]:
        """``query``'s terms in each language of the indexed pages (a question is matched
        against every page in that page's terms), each term once where the languages differ."""
        readings = dict.fromkeys(tuple(self.tokenizer(lang)(query)) for lang in dict.fromkeys(self.languages.values()))
        if len(readings) <= 1:
            return list(next(iter(readings), ()))
        return list(dict.fromkeys(t for terms in readings for t in terms))

    def parts(self, terms: Sequence[str]) -> list[str]:
        """The indexed terms that stand in for the ``terms`` the index holds none of (module
        docstring, *Unseen terms*): those containing one, or contained in one, of at least
        :data:`MIN_PART_CHARS` characters; at most :data:`MAX_PARTS` per unseen term, for the
        first :data:`MAX_UNSEEN_TERMS` unseen terms."""
        vocab: dict[str, int] = self._index().vocab_dict
        if self._joined is None:
            self._joined = "\n" + "\n".join(vocab) + "\n"
        joined = self._joined
        seen = set(terms)
        out: dict[str, None] = {}
        unseen = [t for t in dict.fromkeys(terms) if t not in vocab and len(t) >= MIN_PART_CHARS]
        for term in unseen[:MAX_UNSEEN_TERMS]:
            found: list[str] = []
            at = joined.find(term)
            while at >= 0 and len(found) < MAX_PARTS:  # indexed terms holding it
                start, end = joined.rfind("\n", 0, at) + 1, joined.find("\n", at)
                found.append(joined[start:end])
                at = joined.find(term, end)
            if len(term) <= MAX_SPLIT_CHARS:  # indexed terms it holds, longest first
                n = len(term)
                for size in range(n - 1, MIN_PART_CHARS - 1, -1):
                    for i in range(n - size + 1):
                        if len(found) < 2 * MAX_PARTS and term[i : i + size] in vocab:
                            found.append(term[i : i + size])
            out.update((t, None) for t in found if t not in seen)
        return list(out)

    def hits(self, query: str, k: int, *, doc_ids: Iterable[str] | None = None) -> list[Hit]:
        """:meth:`search` as :class:`~spire_core.values.Hit` objects."""
        if k <= 0 or not self._pages:
            return []
        bm25 = self._index()
        if not self._doc_of:
            return []
        terms = self.query_terms(query)
        ids = bm25.get_tokens_ids(terms)
        parts = bm25.get_tokens_ids(self.parts(terms))
        if not ids and not parts:
            return []
        scores = np.zeros(len(self._doc_of), dtype=np.float64)
        if ids:
            scores += np.asarray(bm25.get_scores_from_ids(ids), dtype=np.float64)
        if parts:
            scores += PART_WEIGHT * np.asarray(bm25.get_scores_from_ids(parts), dtype=np.float64)
        if doc_ids is not None:
            rows = [self._rows[d] for d in dict.fromkeys(doc_ids) if d in self._rows]
            if not rows:
                return []
            candidates = np.concatenate([np.arange(a, b) for a, b in rows])
        else:
            candidates = np.arange(len(scores))
        sub = scores[candidates]
        positive = candidates[sub > 0]
        sub = scores[positive]
        if len(positive) > k:
            keep = np.argpartition(-sub, k - 1)[:k]
            positive, sub = positive[keep], sub[keep]
        order = np.lexsort((positive, -sub))  # score descending, then index order
        return [Hit(self._doc_of[i], decoded_paths(self._paths[i]), float(scores[i])) for i in positive[order]]

    # -- persistence ---------------------------------------------------------------------
    def save(self, folder: str | FsPath) -> None:
        """Write the index to ``folder``: :data:`INDEX_FILE` (settings, pages, their versions and
        sentences' path sets, vocabulary: gzipped JSON), :data:`TERMS_FILE` and
        :data:`LENGTHS_FILE` (every unit's terms as vocabulary ids). The BM25 matrix is not
        written: :meth:`load` re-indexes the terms, so a loaded index can still be updated."""
        folder = FsPath(folder)
        folder.mkdir(parents=True, exist_ok=True)
        meta, ids, lengths = self._parts()
        (folder / INDEX_FILE).write_bytes(meta)
        np.save(folder / TERMS_FILE, ids)
        np.save(folder / LENGTHS_FILE, lengths)

    def to_bytes(self) -> bytes:
        """The index as one blob (e.g. for a database): what :meth:`save` writes, its three files
        as the members of an ``.npz`` archive (CRC-checked when read). :meth:`from_bytes` reads it."""
        meta, ids, lengths = self._parts()
        out = io.BytesIO()
        np.savez(out, index=np.frombuffer(meta, dtype=np.uint8), terms=ids, lengths=lengths)
        return out.getvalue()

    def _parts(self) -> tuple[bytes, np.ndarray, np.ndarray]:
        """The contents of :meth:`save`'s three files: gzipped JSON, terms, lengths."""
        vocab: dict[str, int] = {}
        ids: list[int] = []
        lengths: list[int] = []
        pages = []
        for doc_id, (paths, page_ids, page_lengths) in self._pages.items():
            language = self.languages.get(doc_id)
            pages.append({"id": doc_id, "version": self.versions.get(doc_id), "language": language, "paths": paths})
            lengths.extend(page_lengths.tolist())
            ids.extend(vocab.setdefault(self._words[t], len(vocab)) for t in page_ids.tolist())
        meta = {"format": _FORMAT, "settings": self.settings.__dict__, "vocab": list(vocab), "pages": pages}
        text = json.dumps(meta, ensure_ascii=False, separators=(",", ":"))
        return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0), _narrow(ids), _narrow(lengths)

    @classmethod
    def load(cls, folder: str | FsPath) -> LexicalIndex:
        """The index :meth:`save` wrote to ``folder``. Raises ``OSError`` or ``ValueError`` when
        the files are missing or are not what :meth:`save` writes."""
        folder = FsPath(folder)
        try:
            return cls._read(
                (folder / INDEX_FILE).read_bytes(),
                np.load(folder / TERMS_FILE),
                np.load(folder / LENGTHS_FILE),
                str(folder),
            )
        except (EOFError, zlib.error, KeyError, IndexError, TypeError, AttributeError) as err:
            raise ValueError(f"{folder}: not a lexical index ({type(err).__name__}: {err})") from None

    @classmethod
    def from_bytes(cls, data: bytes) -> LexicalIndex:
        """The index :meth:`to_bytes` made. Raises ``ValueError`` for anything else: a damaged or
        foreign blob, or an index of another format (to be rebuilt, never misread)."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                meta, ids, lengths = archive["index"].tobytes(), archive["terms"], archive["lengths"]
            return cls._read(meta, ids, lengths, "blob")
        except ValueError:
            raise
        except Exception as err:  # zipfile, gzip, numpy and json each raise their own on damaged bytes
            raise ValueError(f"not a lexical index ({type(err).__name__}: {err})") from None

    @classmethod
    def _read(cls, gzipped: bytes, terms_ids: np.ndarray, terms_lengths: np.ndarray, where: str) -> LexicalIndex:
        meta = json.loads(gzip.decompress(gzipped))
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise ValueError(f"{where}: not a lexical index of format {_FORMAT}")
        if terms_ids.dtype.kind != "u" or terms_lengths.dtype.kind != "u":
            raise ValueError(f"{where}: the terms are not unsigned integers")
        index = cls(**meta["settings"])
        vocab: list[str] = meta["vocab"]
        terms = [index._term_id(t) for t in vocab]  # the file's ids -> the index's
        ids = terms_ids.tolist()
        lengths = terms_lengths.tolist()
        row = start = 0
        for page in meta["pages"]:
            paths = page["paths"]
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise ValueError(f"{where}: the path sets of page {page.get('id')!r} are not strings")
            for p in paths:
                decode_paths(p)  # raises PathFormatError (a ValueError) on a damaged one
            page_lengths = lengths[row : row + len(paths)]
            end = start + sum(page_lengths)
            if len(page_lengths) != len(paths) or end > len(ids):
                raise ValueError(f"{where}: the terms do not match the pages")
            language = page.get("language")
            if language is not None and not isinstance(language, str):
                raise ValueError(f"{where}: the language of page {page.get('id')!r} is not a string")
            words = [terms[t] for t in ids[start:end]]
            index._store(page["id"], paths, words, page_lengths, page.get("version"), language)
            start, row = end, row + len(paths)
        if start != len(ids) or row != len(lengths):
            raise ValueError(f"{where}: the terms do not match the pages")
        return index


def _narrow(values: list[int]) -> np.ndarray:
    """``values`` (non-negative) as the narrowest unsigned array that holds them."""
    top = max(values, default=0)
    dtype = np.uint16 if top <= np.iinfo(np.uint16).max else np.uint32
    return np.asarray(values, dtype=dtype)


class Lexicon:
    """A :class:`LexicalIndex` kept in step with a corpus's pages, for the adapters' retrievers.

    ``versions()`` lists the pages (``doc_id -> version``, e.g. the docstore's hashes; ``None``
    when the store keeps none) and ``pages(doc_id)`` parses one. The index is built from the pages
    at the first search, then, at most every ``refresh_s`` seconds, pages whose version changed are
    indexed again and pages gone are removed; :meth:`forget` marks one page for indexing again
    (a write that keeps no version). Hits of a lagging index are checked against the pages as read
    by the query pipeline, so a lag costs recall for a moment, never a wrong citation.

    :meth:`save` writes the index beside a store's other files (:meth:`to_bytes`: as one blob, e.g.
    into a database) and :meth:`restore` reads it back, so a reopened store re-indexes only the
    pages that changed since (no page parsed otherwise). ``saved`` reads such an index at the first
    search instead (e.g. from a database; it answers None when none is saved).
    """

    def __init__(
        self,
        versions: Callable[[], Mapping[str, str | None]],
        pages: Callable[[str], Document],
        *,
        policy: Policy = HTML,
        refresh_s: float = 10.0,
        language: str = DEFAULT_LANGUAGE,
        saved: Callable[[], LexicalIndex | None] | None = None,
    ) -> None:
        self.versions = versions
        self.pages = pages
        self.policy = policy
        self.refresh_s = refresh_s
        self.index = LexicalIndex(language=language)
        self._stale: set[str] = set()
        self._checked = -float("inf")
        self._lock = threading.Lock()
        #: where the index starts from, read at the first search (e.g. from a database; None: it
        #: answers none saved); a :meth:`restore` before it wins
        self._saved = saved

    def forget(self, doc_id: str) -> None:
        """Index ``doc_id`` again at the next search (it was replaced or removed)."""
        with self._lock:
            self._stale.add(doc_id)
            self._checked = -float("inf")

    def _sync(self, *, now: bool = False) -> None:
        if self._saved is not None:
            read, self._saved = self._saved, None
            found = read()
            if found is not None:
                self.index = found
            self._checked = -float("inf")
        if not now and time.monotonic() - self._checked < self.refresh_s:
            return
        versions = dict(self.versions())
        indexed = self.index.versions
        for doc_id in [d for d in indexed if d not in versions]:
            self.index.remove_page(doc_id)
        for doc_id, version in versions.items():
            if doc_id in indexed and indexed[doc_id] == version and doc_id not in self._stale:
                continue
            try:
                doc = self.pages(doc_id)
            except SpireError:  # unreadable or gone meanwhile: its units are not searched
                self.index.remove_page(doc_id)
                continue
            self.index.add_document(doc, policy=self.policy, version=version, doc_id=doc_id)
        self._stale.clear()
        self._checked = time.monotonic()

    def refresh(self) -> None:
        """Bring the index in step with the pages now (an application that just indexed its
        pages calls it, so that its first question does not wait for it)."""
        with self._lock:
            self._sync(now=True)

    def save(self, folder: str | FsPath) -> None:
        """Bring the index in step with the pages now and write it to ``folder`` (:meth:`LexicalIndex.save`)."""
        with self._lock:
            self._sync(now=True)
            self.index.save(folder)

    def to_bytes(self) -> bytes:
        """Bring the index in step with the pages now and return it as one blob
        (:meth:`LexicalIndex.to_bytes`; :meth:`LexicalIndex.from_bytes` and :meth:`restore` read it back)."""
        with self._lock:
            self._sync(now=True)
            return self.index.to_bytes()

    def restore(self, index: LexicalIndex) -> None:
        """Start from ``index`` (e.g. :meth:`LexicalIndex.load` of what :meth:`save` wrote): the
        next search indexes only the pages whose version differs from the one it was saved at."""
        with self._lock:
            self.index = index
            self._saved = None
            self._checked = -float("inf")

    def hits(self, query: str, n: int) -> list[Hit]:
        """The ``n`` best sentence hits of ``query`` over the corpus (:meth:`LexicalIndex.hits`)."""
        with self._lock:
            self._sync()
            return self.index.hits(query, n)


# -- units -----------------------------------------------------------------------------------
def sentence_units(doc: Document, *, policy: Policy = HTML, fmt: Fmt = "markdown") -> list[LexicalUnit]:
    """``doc``'s sentences as lexical units: each sentence seed's path set and embedded text
    (its words under its global context)."""
    doc_id = doc.doc_id or ""
    return [(doc_id, s.paths, s.text) for s in seeds(doc, policy=policy, fmt=fmt, unit="sentence")]
