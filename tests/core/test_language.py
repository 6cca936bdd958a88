"""The page's language (declared, else detected) chooses Punkt's parameters, stop words and stems (issue 38);
English is the fallback."""

from __future__ import annotations

import lxml.html
import pytest

from spire_core import parse_html, parse_page, sentences
from spire_core.query.lexical import tokenizer as lexical_tokenizer
from spire_core.reading.language import (
    PUNKT_LANGUAGES,
    detected_language,
    primary_subtag,
    prose_sample,
    punkt_language,
    stem_words,
    stop_words,
)
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


def test_an_undeclared_page_is_read_in_the_language_detected_in_its_prose() -> None:
    doc = parse_html(f"<html><body>{GERMAN}</body></html>")
    assert doc.language == "de"
    assert [s.text for s in sentences(doc)] == GERMAN_SENTENCES  # English would end sentences at "3." and "Vgl."


def test_detection_reads_prose_not_code() -> None:
    code = "<pre>for line in open(path): print(line) if the value is not None else return the default</pre>"
    prose = "<p>Die Datei wird zeilenweise gelesen und jede Zeile ausgegeben, bis das Ende erreicht ist.</p>"
    page = f"<p>Ja.</p>{code}{prose}"
    assert parse_html(page).language == "de"
    assert parse_html(f"<p>Ja.</p>{code}").language is None  # no prose to tell: read as English


@pytest.mark.parametrize(
    "page",
    [
        "<table><tr><td>Ajax</td><td>1990</td></tr><tr><td>PSV</td><td>1991</td></tr></table>",
        "<p>Smith 3. Jones 4. Miller 7.</p>",
        "<p>1, 2, 3</p>",
        "",
    ],
)
def test_a_page_the_detector_is_unsure_of_says_no_language_and_is_read_as_english(page: str) -> None:
    doc = parse_html(page)
    assert doc.language is None
    assert detected_language(prose_sample(lxml.html.document_fromstring(page or "<html></html>"))) is None


def test_a_declared_language_is_not_second_guessed() -> None:
    doc = parse_html(f"<html lang='en'><body>{GERMAN}</body></html>")
    assert doc.language == "en" and [s.text for s in sentences(doc)] != GERMAN_SENTENCES


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
