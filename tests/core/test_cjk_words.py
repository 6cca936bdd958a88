"""Words of scripts written without spaces: passage members and table names match a CJK question."""

from __future__ import annotations

from spire_core import PassageHit, parse_html, seeds
from spire_core.query.passages import expand
from spire_core.reading.language import cjk_bigrams, script_words

PAGE = """<html lang="zh"><head><title>系统升级</title></head><body><h1>系统升级</h1>
<p>本章介绍软件包的管理方法。不建议在新版本发布后在 stable Debian 系统上使用 aptitude
命令来进行跨版本的系统升级。请使用 apt 命令。</p>
</body></html>"""


def test_a_cjk_run_reads_as_its_bigrams_and_latin_words_stay() -> None:
    assert cjk_bigrams("系统升级") == ["系统", "统升", "升级"] and cjk_bigrams("系") == ["系"]
    assert script_words(["跨版本的系统升级", "aptitude"]) == [
        "跨版",
        "版本",
        "本的",
        "的系",
        "系统",
        "统升",
        "升级",
        "aptitude",
    ]
    assert script_words(["checkpoint", "timeout"]) == ["checkpoint", "timeout"]  # no CJK: as it is


def test_passage_members_sharing_the_questions_cjk_words_come_first() -> None:
    doc = parse_html(PAGE, doc_id="upgrade.html")
    passage = next(u for u in seeds(doc, unit="passage") if u.members and len(u.members) >= 3)
    hit = PassageHit("upgrade.html", passage.members, 0.5)
    ordered = expand(
        [hit], query="可以用 aptitude 命令进行跨版本的系统升级吗?", documents={"upgrade.html": doc}, order="overlap"
    )
    first = " ".join(doc.text[i] for i in sorted(doc.indices(ordered[0].paths)) if doc.tag[i] is None)
    assert "跨版本的系统升级" in first  # not the chapter's opening sentence, first in reading order
