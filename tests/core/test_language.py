"""The page's declared language chooses Punkt's parameters (issue 38); English is the fallback."""

from __future__ import annotations

import pytest

from spire_core import parse_html, parse_page, sentences
from spire_core.reading.language import PUNKT_LANGUAGES, primary_subtag, punkt_language
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
