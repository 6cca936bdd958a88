"""The language a page declares, and the Punkt parameters that go with it.

A page declares its language with ``<html lang="de">`` (or ``xml:lang``), or with
``<meta http-equiv="Content-Language" content="de">``; the first one found is the page's
(:attr:`Document.language <spire_core.document.tree.Document.language>`: the primary
subtag in lower case, ``"de"`` for ``de-CH``; None when the page declares none). Sentence
segmentation uses Punkt's parameters for that language where they ship
(:data:`PUNKT_LANGUAGES`, NLTK's ``punkt_tab`` copied into ``reading/data/punkt_tab``), and
English's otherwise. Nothing is guessed from the text.

The words of a page's language that the lexical index and the table views match on come
from the same place: :func:`stop_words` (bm25s's lists, NLTK's stop-word corpus for most
languages) and :func:`stem_words` (PyStemmer's Snowball stemmers). A page without a declared
language is read as English; one whose language has no list (or no stemmer) keeps every word
(or every word whole).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import cache
from typing import Any

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


def punkt_language(language: str | None) -> str:
    """The Punkt parameters to segment a page of ``language`` (an ISO 639-1 code) with."""
    return PUNKT_LANGUAGES.get(language or "", FALLBACK)


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
