"""The page's declared language chooses Punkt's parameters, stop words and stems (issue 38); English is the fallback."""

from __future__ import annotations

import pytest

from spire_core import parse_html, parse_page, sentences
from spire_core.query.lexical import tokenizer as lexical_tokenizer
from spire_core.reading.language import PUNKT_LANGUAGES, primary_subtag, punkt_language, stem_words, stop_words
from spire_core.reading.punkt import languages, tokenizer

GERMAN = "<p>Der Termin ist am 3. Januar im Saal. Vgl. Abschnitt 2 der Anleitung.</p>"
GERMAN_SENTENCES = ["Der Termin ist am 3. Januar im Saal.", "Vgl. Abschnitt 2 der Anleitung."]


@pytest.mark.parametrize(
    "page",
    [
        f"<html lang='de'><body>{GERMAN}</body></html>",
        f"<html lang='de-CH'><body>{GERMAN}</body></html>",
        f"<html xml:lang='de'><body>{GERMAN}</body></html>",
        f"<html><head><meta http-equiv='Content-Language' content='de, en'></head><body>{GERMAN}</body></html>",
    ],
)
def test_a_page_declaring_german_is_segmented_with_german_parameters(page: str) -> None:
    doc = parse_html(page)
    assert doc.language == "de"
    assert [s.text for s in sentences(doc)] == GERMAN_SENTENCES


def test_an_undeclared_page_is_segmented_as_english_and_says_no_language() -> None:
    doc = parse_html(f"<html><body>{GERMAN}</body></html>")
    assert doc.language is None
    assert [s.text for s in sentences(doc)] != GERMAN_SENTENCES  # English reads "3." and "Vgl." as ends


def test_a_language_given_by_the_caller_wins_and_reaches_every_reader() -> None:
    assert parse_html(f"<html lang='en'><body>{GERMAN}</body></html>", language="de").language == "de"
    doc = parse_page("Der Termin ist am 3. Januar im Saal. Vgl. Abschnitt 2 der Anleitung.\n", language="de-AT")
    assert doc.language == "de" and [s.text for s in sentences(doc)] == GERMAN_SENTENCES


def test_a_language_without_parameters_is_kept_but_segmented_as_english() -> None:
    doc = parse_html("<html lang='sw'><body><p>Habari. Nzuri.</p></body></html>")
    assert doc.language == "sw" and [s.text for s in sentences(doc)] == ["Habari.", "Nzuri."]
    assert punkt_language("sw") == punkt_language(None) == "english"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("de", "de"), ("pt-BR", "pt"), ("EN_us", "en"), (" fr ", "fr"), ("de, en", "de"), ("", None), ("1x", None)],
)
def test_primary_subtags(value: str, expected: str | None) -> None:
    assert primary_subtag(value) == expected


def test_every_mapped_language_ships_and_loads() -> None:
    assert sorted(PUNKT_LANGUAGES.values()) == languages()
    for folder in languages():
        assert tokenizer(folder)._params.abbrev_types
    with pytest.raises(ValueError, match="available"):
        tokenizer("klingon")


def test_stop_words_and_stems_by_language_code_english_when_undeclared() -> None:
    """One source of stop words (bm25s's lists) for the lexical index and the table views."""
    assert stop_words(None) == stop_words("en") == stop_words("english") and "the" in stop_words(None)
    assert {"welcher", "der", "und"} <= stop_words("de") and "welcher" not in stop_words("en")
    assert stop_words("fi") == frozenset()  # no list: every word kept
    # English: Lucene's short list for the lexical index, NLTK's (as for the other languages) on request
    assert "which" in stop_words("en", full=True) and "which" not in stop_words("en")
    assert stop_words("de", full=True) == stop_words("de")
    assert stem_words(["inseln", "punkte"], "de") == ["insel", "punkt"]  # words come casefolded
    assert stem_words(["islands", "scored"], None) == ["island", "score"]
    assert stem_words(["ねこ", "cats"], "ja") == ["ねこ", "cats"]  # no stemmer: words kept whole
    # the lexical tokenizer drops the same words
    assert lexical_tokenizer("de", stem=False)("Welcher Fahrer und der Rückstand") == ["fahrer", "rückstand"]


def test_stemmers_are_per_thread() -> None:
    import threading

    out: list[list[str]] = []
    threads = [threading.Thread(target=lambda: out.append(stem_words(["running"] * 50, "en"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [["run"] * 50] * 4
