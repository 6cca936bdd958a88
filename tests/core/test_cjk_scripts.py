"""Japanese and Chinese questions against an English-trained embedding model (issue 52).

The lexical terms of a Han, kana or Hangul run are chosen by Unicode script (Han bigrams,
katakana runs whole, hiragana dropped beside them), and a question written in those scripts
weighs the lexical ranking more in the rank fusion; a question without them is fused exactly
as before.
"""

from __future__ import annotations

import re

import pytest

from spire_core import parse_html, pipeline
from spire_core.indexing.passages import passages
from spire_core.options import QueryOptions
from spire_core.pipeline import run_query
from spire_core.query.lexical import CJK_FUSION_WEIGHT, LexicalIndex, fusion_weight, tokenizer
from spire_core.query.passages import PassageHit
from spire_core.reading.language import cjk_bigrams, cjk_share, cjk_terms

# the judge's count (bench/score.py count_tokens): one token per Han, kana or Hangul character
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
JUDGE = re.compile(rf"[{CJK}]|[^\W{CJK}]+|[^\w\s]")


@pytest.mark.parametrize(
    ("run", "terms"),
    [
        ("ヘルプブラウザを開くキーは何ですか", ["ヘルプブラウザ", "開", "キー", "何"]),
        ("新しいリリースへの移行", ["新", "移行", "リリース"]),
        ("系统升级", ["系统", "统升", "升级"]),  # Chinese: Han bigrams, as before
        ("ですか", ["です", "すか"]),  # hiragana alone: bigrams, nothing dropped
        ("한국어문장", ["한국", "국어", "어문", "문장"]),  # Hangul: bigrams
        ("猫", ["猫"]),
    ],
)
def test_terms_by_script(run: str, terms: list[str]) -> None:
    assert sorted(cjk_terms(run)) == sorted(terms)


def test_han_only_text_reads_as_bigrams() -> None:
    for run in ("不建议在新版本发布后", "系统", "安装程序支持多少种语言"):
        assert cjk_terms(run) == cjk_bigrams(run)


def test_a_japanese_questions_function_words_do_not_match() -> None:
    """The particles and endings of a question ("は", "どの", "されていますか") match no sentence:
    a sentence sharing only them stays far below the one naming the question's words."""
    terms = tokenizer("english")("lsb_release はどのパッケージで提供されていますか")
    assert terms == ["lsb_releas", "パッケージ", "提供"]
    index = LexicalIndex()
    units = [
        "lsb_release は lsb-release パッケージで提供。",
        "それは、どのようにしても提供されていますか、と聞かれています。",
        "設定ファイルはここにあります。",
    ]
    index.add_page("p", [(frozenset({(i,)}), text) for i, text in enumerate(units)], language="ja")
    for question in ("lsb_release はどのパッケージで提供されていますか", "どのパッケージで提供されていますか"):
        hits = index.search(question, 3)
        assert hits[0][1] == frozenset({(0,)})
        assert hits[0][2] > 2 * hits[1][2]


def test_the_lexical_weight_follows_the_questions_script() -> None:
    assert fusion_weight("What is the default port?") == 1.0
    assert fusion_weight("") == 1.0
    assert fusion_weight("ヘルプブラウザを開くキーは何ですか") == CJK_FUSION_WEIGHT
    assert fusion_weight("系统升级？") == CJK_FUSION_WEIGHT
    mixed = fusion_weight("Xcos のヘルプブラウザを開くキーは何ですか")
    assert 1.0 < mixed < CJK_FUSION_WEIGHT
    assert cjk_share("Xcos のヘルプ") == 0.5  # 4 of 8 word characters


SECTIONS = [
    ("ファイルメニュー", "新規を選ぶと空のダイアグラムが開きます。", "保存のデフォルトの拡張子は .zcos です。"),
    ("編集メニュー", "元に戻すを選ぶと直前の操作が取り消されます。", "全て選択を選ぶとブロックが全て選ばれます。"),
    ("表示メニュー", "拡大を選ぶとダイアグラムが 10% 拡大されます。", "縮小を選ぶとダイアグラムが 10% 縮小されます。"),
    ("シミュレーションメニュー", "開始を選ぶと始まります。", "停止を選ぶと中断されます。"),
    ("フォーマットメニュー", "回転を選ぶとブロックが左に 90° 回転します。", "グリッドを選ぶとグリッドが表示されます。"),
    (
        "ツールメニュー",
        "コード生成を選ぶとブロックが置き換えられます。",
        "これは何ですか、と聞かれたらここを読みます。",
    ),
    ("ヘルプメニュー", "F1 キーを押すとヘルプブラウザが開きます。", "デモを選ぶとダイアグラムの例が開きます。"),
]
PAGE = (
    '<html lang="ja"><head><title>Xcos のメニュー</title></head><body><h1>Xcos のメニュー</h1>'
    + "".join(f"<h2>{h}</h2><p>{a}</p><p>{b}</p>" for h, a, b in SECTIONS)
    + "</body></html>"
)


@pytest.mark.parametrize("budget", [80, 100, 160])
def test_a_japanese_answer_the_dense_ranking_puts_last_is_delivered_within_budget(
    budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packaged model ranks Japanese poorly: here the answer's passage comes last of eight.
    The lexical ranking finds its sentence first, and weighed as a Japanese question weighs it,
    the sentence is delivered (at 80 tokens it was not, fused at weight 1)."""
    doc = parse_html(PAGE, doc_id="xcos.html")
    ranked = [PassageHit("xcos.html", p.members, 0.9 - i / 100) for i, p in enumerate(passages(doc))]
    index = LexicalIndex()
    index.add_document(doc)
    question = "ヘルプブラウザを開くキーは何ですか"
    assert index.search(question, 1)[0][1] in ranked[-1].members  # the lexical ranking's first

    def delivered() -> str:
        options = QueryOptions(budget=budget)
        results = run_query(question, lambda n: ranked[:n], {"xcos.html": doc}, options, lexical=index.hits)
        return "\n\n".join(r.text for r in results)

    text = delivered()
    assert "F1 キーを押すとヘルプブラウザが開きます。" in text
    assert len(JUDGE.findall(text)) <= budget
    if budget == 80:
        monkeypatch.setattr(pipeline, "fusion_weight", lambda query: 1.0)
        assert "F1 キー" not in delivered()  # what the weight is for


def test_a_japanese_answer_the_dense_ranking_puts_last_is_cited_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same question: its lexical match counts in each citation's strength as much more as it
    counts in the fusion, so the sentence the lexical ranking found is the first citation (with
    the English weight, the passages the model ranked first outrank it: similarities falling
    from 0.9 to 0.34, as the packaged model's do on Japanese)."""
    doc = parse_html(PAGE, doc_id="xcos.html")
    ranked = [PassageHit("xcos.html", p.members, 0.9 - i * 0.08) for i, p in enumerate(passages(doc))]
    index = LexicalIndex()
    index.add_document(doc)
    question = "ヘルプブラウザを開くキーは何ですか"

    def first() -> str:
        results = run_query(question, lambda n: ranked[:n], {"xcos.html": doc}, QueryOptions(), lexical=index.hits)
        return max((c for r in results for c in r.citations), key=lambda c: c.score or 0.0).text

    assert "F1 キーを押すとヘルプブラウザが開きます。" in first()
    monkeypatch.setattr(pipeline, "fusion_weight", lambda query: 1.0)
    assert "F1 キー" not in first()
