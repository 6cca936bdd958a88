"""Offline NLTK Punkt sentence segmentation.

NLTK's Punkt parameters for English, German, French, Spanish, Italian, Portuguese and Dutch
ship inside the package (``spire_core/reading/data/punkt_tab``), so nothing is downloaded at
run time; a page's declared language chooses them (:mod:`spire_core.reading.language`).

Scripts written without spaces between words (Japanese, Chinese; Korean spaces its words but may
use the same marks) end sentences with full-width marks that Punkt does not know: a text is first
cut after each ``。``, ``！``, ``？`` or half-width ``｡`` (:data:`FULL_STOPS`, with the closing
quotes and brackets after it), whatever the page's language, since no other script writes them;
each piece is then segmented by Punkt, which breaks at ``.``, ``!`` and ``?`` before a space or a
closing quote, as those scripts also use them (:func:`sentence_spans`).
"""

from __future__ import annotations

import _imp
import importlib
import importlib.util
import re
import sys
import types
from functools import lru_cache
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first segmentation, not with spire_core (punkt_module)
    from nltk.tokenize.punkt import PunktSentenceTokenizer

_DATA = FsPath(__file__).parent / "data" / "punkt_tab"

#: In a language's folder, beside NLTK's trained files: abbreviations (lower case, without the
#: final period, one per line) that SPIRE adds to the trained ones, e.g. the English ones that
#: technical manuals and encyclopedic pages use mid-sentence. A language without it adds none.
EXTRA_ABBREVIATIONS_FILE = "extra_abbrev_types.txt"


@lru_cache(maxsize=1)
def punkt_module() -> types.ModuleType:
    """NLTK's ``nltk.tokenize.punkt``, imported without running the ``nltk`` package's ``__init__``.

    That ``__init__`` imports all of NLTK, and with it SciPy, scikit-learn and pandas where they
    are installed: about 195 MB of memory and 4 s, for a module that needs a few of NLTK's own.
    Where ``nltk`` is already imported, its module is used as it is. Otherwise its two packages
    stand in as bare packages while Punkt loads, and every ``nltk`` module this loaded leaves
    ``sys.modules`` after: an application's own ``import nltk`` later loads the whole of NLTK as usual.
    """
    if "nltk" in sys.modules:
        return importlib.import_module("nltk.tokenize.punkt")
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("NLTK is not installed: pip install nltk")
    roots = list(spec.submodule_search_locations)
    _imp.acquire_lock()  # no other thread imports nltk meanwhile and gets a bare package
    before = set(sys.modules)
    try:
        for name, folders in (("nltk", roots), ("nltk.tokenize", [f"{r}/tokenize" for r in roots])):
            package = types.ModuleType(name)
            package.__path__ = folders
            sys.modules[name] = package
        return importlib.import_module("nltk.tokenize.punkt")
    finally:
        for name in set(sys.modules) - before:
            if name == "nltk" or name.startswith("nltk."):
                del sys.modules[name]
        _imp.release_lock()


def languages() -> list[str]:
    """The languages whose Punkt parameters ship (folder names: ``"english"``, ``"german"``, ...)."""
    return sorted(p.name for p in _DATA.iterdir() if p.is_dir())


@lru_cache(maxsize=8)
def tokenizer(language: str = "english") -> PunktSentenceTokenizer:
    """The Punkt tokenizer for ``language`` (one of :func:`languages`)."""
    punkt = punkt_module()
    folder = _DATA / language
    if not language.isalpha() or not folder.is_dir():
        raise ValueError(f"no Punkt parameters for {language!r}; available: {', '.join(languages())}")
    params = punkt.PunktParameters()
    params.abbrev_types = set(_lines(folder / "abbrev_types.txt"))
    if (folder / EXTRA_ABBREVIATIONS_FILE).is_file():
        params.abbrev_types |= set(_lines(folder / EXTRA_ABBREVIATIONS_FILE))
    params.sent_starters = set(_lines(folder / "sent_starters.txt"))
    params.collocations = {tuple(line.split("\t")[:2]) for line in _lines(folder / "collocations.tab")}
    for line in _lines(folder / "ortho_context.tab"):
        word, flags = line.rsplit("\t", 1)
        params.ortho_context[word] = int(flags)
    out: PunktSentenceTokenizer = punkt.PunktSentenceTokenizer(params)
    return out


@lru_cache(maxsize=8)
def _candidates(language: str) -> Any:
    """The pattern of Punkt's candidate sentence breaks (its period contexts) for ``language``."""
    return tokenizer(language)._lang_vars.period_context_re()


def _lines(file: FsPath) -> list[str]:
    return [line for line in file.read_text(encoding="utf-8").splitlines() if line]


#: A text longer than this is segmented in pieces, each cut after a sentence end (``.``, ``?``
#: or ``!`` before a space) near this length, else at a space: NLTK runs Punkt's regular
#: expressions under a 5 s wall-clock limit (``nltk.redos``), which one 1.2 MB paragraph of short
#: sentences exceeded, and a busy machine would exceed sooner.
MAX_PUNKT_CHARS = 20_000
_PIECE_END = re.compile(r"[.?!][\"')\]]*\s")
_SPACE = re.compile(r"\s")

#: The full-width sentence ends of Japanese and Chinese (ideographic full stop, full-width
#: exclamation and question marks, the half-width ideographic full stop): a sentence ends after
#: each, with the marks and closing quotes or brackets that follow it (``？！``, ``。」``, ``！）``),
#: no space needed (:func:`sentence_spans`).
FULL_STOPS = "\u3002\uff01\uff1f\uff61"
#: Quotes that close after a sentence's end mark (a quoted sentence may go on in the one quoting it) ...
_QUOTES = "\u300d\u300f\u201d\u2019\"'"
#: ... and brackets (what follows one is another sentence).
_BRACKETS = "\uff09\u3015\u3011\u3009\u300b\u3017\u3019\u301b)\\]"
_FULL_END = re.compile(f"[{FULL_STOPS}][{FULL_STOPS}!?]*[{_QUOTES}{_BRACKETS}]*")
_FULL_STOP = re.compile(f"[{FULL_STOPS}]")


def sentence_spans(text: str, language: str = "english") -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text``; together they cover every non-space character.

    The text is cut after each full-width sentence end (:data:`FULL_STOPS`; :func:`full_stop_cuts`)
    and each piece segmented by Punkt with ``language``'s parameters (:func:`punkt_spans`).
    """
    if text.isascii() or _FULL_STOP.search(text) is None:
        return punkt_spans(text, language)
    out: list[tuple[int, int]] = []
    start = 0
    for cut in [*full_stop_cuts(text), len(text)]:
        out.extend((start + b, start + e) for b, e in punkt_spans(text[start:cut], language))
        start = cut
    return out


def full_stop_cuts(text: str) -> list[int]:
    """Where the sentences of ``text`` end at a full-width mark (:data:`FULL_STOPS`): after the mark,
    the marks after it and the closing quotes or brackets after those, unless a quote closes
    last there and a word follows it (``「そうです。」と言った。`` is one sentence: the quoted one
    is part of it); never at the very end of the text."""
    cuts: list[int] = []
    for m in _FULL_END.finditer(text):
        end = m.end()
        if end >= len(text) or (text[end - 1] in _QUOTES and (text[end].isalnum() or text[end] == "_")):
            continue
        cuts.append(end)
    return cuts


def punkt_spans(text: str, language: str = "english") -> list[tuple[int, int]]:
    """Character spans of the sentences Punkt finds in ``text``, covering every non-space character.

    A text over :data:`MAX_PUNKT_CHARS` is segmented piece by piece (a piece cut inside a word,
    where a window holds no space, joins its first sentence to the last one before it).
    """
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        stop = _piece_end(text, start)
        for b, e in _spans(text[start:stop], language):
            if out and out[-1][1] == start + b:  # cut inside a word: one sentence
                out[-1] = (out[-1][0], start + e)
            else:
                out.append((start + b, start + e))
        start = stop
    return out


def _piece_end(text: str, start: int) -> int:
    """Where the piece of ``text`` from ``start`` ends (see :data:`MAX_PUNKT_CHARS`)."""
    if len(text) - start <= MAX_PUNKT_CHARS:
        return len(text)
    lo, hi = start + MAX_PUNKT_CHARS // 2, start + MAX_PUNKT_CHARS
    for pattern in (_PIECE_END, _SPACE):
        cuts = [m.end() for m in pattern.finditer(text, lo, hi)]
        if cuts:
            return cuts[-1]
    return hi


#: Texts up to this long are segmented once per process (:func:`_short_spans`): pages repeat
#: short texts (table cells, list items, menu entries), each a Punkt call of its own.
SHORT_TEXT = 256


def _spans(text: str, language: str) -> list[tuple[int, int]]:
    """:func:`sentence_spans` of a text of at most :data:`MAX_PUNKT_CHARS`."""
    if len(text) <= SHORT_TEXT:
        return list(_short_spans(text, language))
    return _punkt_spans(text, language)


@lru_cache(maxsize=4096)
def _short_spans(text: str, language: str) -> tuple[tuple[int, int], ...]:
    return tuple(_punkt_spans(text, language))


def _punkt_spans(text: str, language: str) -> list[tuple[int, int]]:
    punkt = tokenizer(language)  # (raises ValueError for a language that does not ship)
    if ("." not in text and "?" not in text and "!" not in text) or _candidates(language).search(text) is None:
        # Punkt breaks only at a match of its candidate pattern (a sentence-end character
        # followed by punctuation or by a word): without one the text is one sentence (or none)
        return [(len(text) - len(text.lstrip()), len(text.rstrip()))] if text.strip() else []
    spans = list(punkt.span_tokenize(text))
    out: list[tuple[int, int]] = []
    covered = 0
    for start, end in spans:
        if out and start == covered:  # no space after the boundary ("[-+]?[0-7]+"): one sentence
            out[-1] = (out[-1][0], end)
            covered = end
            continue
        if out and text[covered:start].strip():  # glue stray non-space text to the sentence before
            out[-1] = (out[-1][0], start)
        out.append((start, end))
        covered = end
    if text[covered:].strip():
        tail = len(text.rstrip())
        if out:
            out[-1] = (out[-1][0], tail)
        else:
            out.append((len(text) - len(text.lstrip()), tail))
    return [_trim(text, start, end) for start, end in out]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
