"""Size functions: ``approx_tokens`` charges exactly as the benchmark judge does."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spire_core import approx_tokens, model_tokens
from spire_core.size import WordPieceCount, default_size

# the judge's count (bench/score.py count_tokens), copied: one token per Han, kana or Hangul
# character, one per run of other word characters, one per punctuation mark
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
JUDGE = re.compile(rf"[{CJK}]|[^\W{CJK}]+|[^\w\s]")


def judge_tokens(text: str) -> int:
    return len(JUDGE.findall(text))


# expected counts are the judge's (bench/score.py count_tokens: words, punctuation marks, CJK characters)
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("   \n\t ", 0),
        ("Hello, world!", 4),
        ("The valid range is between 30 seconds and one day.", 11),
        ("# Foo\n\n## First header of Foo", 8),
        ("checkpoint_timeout (integer)", 4),
        ("don't", 3),
        ("3.14 km/h", 6),
        ("Grüße aus Köln", 3),
        ("| Year | Team |\n|---|---|", 14),
        ("<E1>Text.</E1>", 9),
        ("a  -  b", 3),
        ("東京 is 日本", 5),
        ("不建议在新版本发布后在 stable Debian 系统上使用 aptitude 命令来进行跨版本的系统升级。", 33),
        ("これはペンです。", 8),
        ("カタカナ・ひらがなー", 10),
        ("한국어 문장입니다.", 9),
        ("abc東def", 3),
        ("版本3.14，UTF-8编码", 11),
    ],
)
def test_approx_tokens_counts_like_the_judge(text: str, tokens: int) -> None:
    assert approx_tokens(text) == tokens


@settings(max_examples=500)
@given(st.text() | st.text(alphabet=" \n\t\u00a0_-.,|#*abcé東1ーあア・한。\u3099\u4dc0\uf900\ud7b0"))
def test_approx_tokens_counts_what_the_judges_regex_finds(text: str) -> None:
    assert approx_tokens(text) == judge_tokens(text)


@pytest.mark.parametrize(
    "text",
    [
        "aé" * 100,  # ASCII and other characters alternating, across many classing windows
        "word\ud800word \udfff.",  # lone surrogates (a page decoded with surrogateescape)
        "x\U0001f600y \u3000z\u00a0w\u0085v 東京 t",  # astral, CJK and non-ASCII spaces
        "é" * 70 + " end",
    ],
)
def test_approx_tokens_classes_non_ascii_text_as_the_regex_does(text: str) -> None:
    assert approx_tokens(text) == judge_tokens(text)


def test_approx_tokens_remembers_a_bounded_number_of_characters() -> None:
    from spire_core import size

    every = "".join(map(chr, range(0x100, 0x100 + 2 * size._CLASSES_KEPT)))  # a hostile page's alphabet
    assert approx_tokens(every) == judge_tokens(every)
    assert len(size._CLASSES) <= size._CLASSES_KEPT


def test_approx_tokens_is_additive_over_whitespace() -> None:
    a, b = "First part, with punctuation.", "Second (part)"
    assert approx_tokens(a + " " + b) == approx_tokens(a) + approx_tokens(b)


def test_approx_tokens_counts_english_as_words_and_marks() -> None:
    """Text without Han, kana or Hangul is counted as before: words and marks."""
    for text in ["The valid range is between 30 seconds and one day.", "Grüße, Zoë — naïve™ x²", "a_b: c-d"]:
        assert approx_tokens(text) == len(re.findall(r"\w+|[^\w\s]", text))


@settings(max_examples=300)
@given(st.lists(st.text(alphabet="ab東한 .,\n"), max_size=5))
def test_approx_tokens_of_joined_texts_is_at_most_their_sum(texts: list[str]) -> None:
    """What aggregation's lower bound (``_least_added``) relies on: joining texts never costs
    more than the texts apart, and putting characters between them never costs less."""
    joined = "".join(texts)
    assert approx_tokens(joined) <= sum(approx_tokens(t) for t in texts)
    assert approx_tokens(joined) <= approx_tokens(" x ".join(texts))


def test_model_tokens_works_offline() -> None:
    # conftest sets HF_HUB_OFFLINE: the packaged tokenizer (or the fallback) needs no network
    assert model_tokens("") == 0
    short = model_tokens("hello world")
    assert 1 <= short <= 4
    assert model_tokens("word " * 1000) >= 1000  # no truncation at the model's window
    assert model_tokens("checkpoint_timeout") > approx_tokens("checkpoint_timeout")  # sub-word pieces
    assert default_size()("hello world") == short


# characters a BERT tokenizer treats in every way: separators, punctuation, CJK (spaced
# out), accents (stripped), controls (dropped), symbols inside words, special tokens
TRICKY = list(" \n\t\r\x0b\x0c\x1c\x85\xa0\u2028\u3000\u200b\ufeff\x00\ufffd\uffff_-.,|#*[]()'\"")
TRICKY += list("abcXYZ019éÉüßİıΣς東京한국\u0301\u0300\u037e\u1fef°©€±→…—’“¶")
TRICKY += ["[MASK]", "[CLS]", "##", " word", "Tokenizer", "checkpoint_timeout", "x" * 120]


def _encoded(text: str) -> int:
    from spire_core.size import _model_count

    count = _model_count()
    assert isinstance(count, WordPieceCount)
    return len(count._tok.encode(text, add_special_tokens=False).ids)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TRICKY), max_size=40).map("".join) | st.text())
def test_model_tokens_counts_what_the_tokenizer_encodes(text: str) -> None:
    assert model_tokens(text) == _encoded(text)


def test_word_piece_count_encodes_each_word_once_and_remembers_a_bounded_number() -> None:
    from spire_core import size

    count = size._model_count()
    assert isinstance(count, WordPieceCount)
    text = "Passages repeat their words: words, words and more words."
    assert count(text) == _encoded(text)
    encoded: list[str] = []
    tok = count._tok

    class Spy:
        def encode(self, s: str, add_special_tokens: bool = True) -> object:
            encoded.append(s)
            return tok.encode(s, add_special_tokens=add_special_tokens)

    fresh = WordPieceCount(tok)
    fresh._words._tok = Spy()
    assert fresh(text + " " + text) == 2 * count(text)
    assert sorted(encoded) == sorted({"Passages", "repeat", "their", "words", ":", ",", "and", "more", "."})
    many = " ".join(f"w{i}" for i in range(size._WORDS_KEPT + 10))  # a hostile page's vocabulary
    assert fresh(many) == _encoded(many)
    assert len(fresh._words) <= size._WORDS_KEPT
