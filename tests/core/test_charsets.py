"""Pages in legacy CJK and Cyrillic encodings, declared and undeclared, read as the text they hold
(issue 50: a page decoded with thousands of U+FFFD is never indexed silently)."""

from __future__ import annotations

import pytest

from spire_core import parse_html, parse_page, sentences
from spire_core.errors import SpireError, UndecodableError
from spire_core.reading.decoding import decode, garbled

JAPANESE = "\n\n".join(
    [
        (
            "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。"
            "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。"
            "吾輩はここで始めて人間というものを見た。"
        ),
        (
            "データベースの各テーブルに格納できる行数の上限は、ファイルシステムとページサイズによって決まります。"
            "バックアップは毎日午前三時に自動的に実行され、失敗した場合は管理者に電子メールで通知されます。"
        ),
        (
            "設定ファイルを変更した後は、サーバーを再起動してください。変更内容は次回の起動時に読み込まれます。"
            "古い設定は自動的に保存されるので、問題が起きた場合は元に戻すことができます。"
        ),
    ]
)
CHINESE = "\n\n".join(
    [
        (
            "数据库中每个表可以存储的最大行数取决于文件系统和页面大小。系统每天凌晨三点自动执行备份，"
            "如果备份失败，将通过电子邮件通知管理员。"
        ),
        (
            "修改配置文件后，请重新启动服务器。新的设置将在下次启动时生效。旧的配置会被自动保存，如果出现问题，"
            "可以随时恢复。"
        ),
        ("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。这首诗描写了春天早晨的景色，表达了诗人对春天的喜爱之情。"),
    ]
)
TRADITIONAL = "\n\n".join(
    [
        (
            "資料庫中每個資料表可以儲存的最大列數取決於檔案系統與頁面大小。系統每天凌晨三點自動執行備份，"
            "若備份失敗，將以電子郵件通知管理員。"
        ),
        (
            "修改設定檔之後，請重新啟動伺服器。新的設定將在下次啟動時生效。舊的設定會自動保存，如果發生問題，"
            "可以隨時還原。"
        ),
        ("春眠不覺曉，處處聞啼鳥。夜來風雨聲，花落知多少。這首詩描寫了春天早晨的景色，表達了詩人對春天的喜愛之情。"),
    ]
)
KOREAN = "\n\n".join(
    [
        (
            "데이터베이스의 각 테이블에 저장할 수 있는 최대 행 수는 파일 시스템과 페이지 크기에 따라 달라집니다. "
            "백업은 매일 새벽 세 시에 자동으로 실행되며, 실패하면 관리자에게 전자 우편으로 알림이 전송됩니다."
        ),
        (
            "설정 파일을 변경한 후에는 서버를 다시 시작하십시오. 변경 내용은 다음 시작할 때 적용됩니다. "
            "이전 설정은 자동으로 저장되므로 문제가 생기면 언제든지 되돌릴 수 있습니다."
        ),
        (
            "봄이 오면 산과 들에 꽃이 피고 새들이 노래합니다. "
            "사람들은 따뜻한 햇살 아래에서 산책을 즐기며 겨울 동안 미뤄 두었던 일들을 시작합니다."
        ),
    ]
)
RUSSIAN = "\n\n".join(
    [
        (
            "Все счастливые семьи похожи друг на друга, каждая несчастливая семья несчастлива по-своему. "
            "Всё смешалось в доме Облонских."
        ),
        (
            "Максимальное число строк в таблице зависит от файловой системы и размера страницы. "
            "Резервное копирование выполняется каждый день в три часа ночи, "
            "а в случае ошибки администратор получает письмо."
        ),
        (
            "После изменения файла настроек перезапустите сервер. "
            "Новые параметры вступят в силу при следующем запуске. Старые настройки сохраняются автоматически, "
            "поэтому их всегда можно восстановить."
        ),
    ]
)

#: Python codec -> (the WHATWG label a page declares it with, the prose written in it)
CHARSETS = {
    "shift_jis": ("shift_jis", JAPANESE),
    "cp932": ("windows-31j", JAPANESE),
    "euc_jp": ("euc-jp", JAPANESE),
    "iso2022_jp": ("iso-2022-jp", JAPANESE),
    "gbk": ("gbk", CHINESE),
    "gb2312": ("gb2312", CHINESE),
    "gb18030": ("gb18030", CHINESE),
    "big5": ("big5", TRADITIONAL),
    "big5hkscs": ("big5-hkscs", TRADITIONAL),
    "euc_kr": ("euc-kr", KOREAN),
    "cp949": ("windows-949", KOREAN),
    "koi8_r": ("koi8-r", RUSSIAN),
    "koi8_u": ("koi8-u", RUSSIAN),
    "cp1251": ("windows-1251", RUSSIAN),
    "iso8859_5": ("iso-8859-5", RUSSIAN),
    "cp866": ("ibm866", RUSSIAN),
    "mac_cyrillic": ("x-mac-cyrillic", RUSSIAN),
}


def page(prose: str, head: str = "", title: str = "Manual") -> str:
    paragraphs = "".join(f"<p>{p}</p>\n" for p in prose.split("\n\n"))
    head = f"<head>{head}<title>{title}</title></head>"
    return f"<!DOCTYPE html>\n<html>{head}<body><h1>{title}</h1>\n{paragraphs}</body></html>"


def words(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("declared", [False, True], ids=["undeclared", "declared"])
@pytest.mark.parametrize("codec", sorted(CHARSETS))
def test_a_legacy_page_reads_as_the_text_it_holds(codec: str, declared: bool) -> None:
    label, prose = CHARSETS[codec]
    text = page(prose, f'<meta charset="{label}">' if declared else "")
    decoded = decode(text.encode(codec), doc_id=f"{codec}.html")
    assert decoded.text == text
    assert decoded.replaced == 0 and not decoded.warnings
    doc = parse_page(text.encode(codec), doc_id=f"{codec}.html")
    assert doc.decode_errors == 0
    assert words(" ".join(s.text for s in sentences(doc))) == words("Manual" + prose)


@pytest.mark.parametrize("codec", ["shift_jis", "euc_jp", "gbk", "big5", "euc_kr", "koi8_r", "cp866"])
def test_a_page_declared_utf8_in_a_legacy_encoding_is_read_in_the_one_its_bytes_hold(codec: str) -> None:
    """The declaration is wrong (a server's default): read as UTF-8 it would be mostly U+FFFD."""
    _, prose = CHARSETS[codec]
    text = page(prose, '<meta charset="utf-8">')
    doc = parse_html(text.encode(codec), doc_id="wrong.html")
    assert "\ufffd" not in " ".join(s.text for s in sentences(doc))
    assert words(" ".join(s.text for s in sentences(doc))) == words("Manual" + prose)
    assert any("utf-8" in w and "read as" in w for w in doc.warnings)


def test_a_short_legacy_page_is_detected() -> None:
    for codec in ("shift_jis", "gbk", "euc_kr", "cp1251"):
        prose = CHARSETS[codec][1].split("。")[0].split(".")[0]
        text = page(prose)
        assert decode(text.encode(codec)).text == text, codec


def test_a_page_of_mixed_encodings_is_refused_naming_it() -> None:
    """UTF-8 paragraphs beside windows-1252 ones: no single encoding reads the page, and reading
    it as either would index garbled words silently."""
    utf8 = "<p>Le café crème coûte trois euros. Les élèves naïfs paient aussi.</p>" * 3
    latin = "<p>Ancien texte : élève très âgé, café noir, crème brûlée.</p>" * 3
    data = utf8.encode() + latin.encode("cp1252")
    with pytest.raises(UndecodableError, match=r"mixed\.html") as err:
        parse_page(data, doc_id="mixed.html")
    assert err.value.doc_id == "mixed.html"
    assert isinstance(err.value, SpireError) and isinstance(err.value, ValueError)


def test_a_legacy_page_garbled_beyond_reading_is_refused() -> None:
    """Shift_JIS bytes cut to pieces at random: no encoding reads them."""
    data = page(JAPANESE).encode("shift_jis")
    broken = bytes(b for n, b in enumerate(data) if not (b > 0x7F and n % 3 == 0))
    with pytest.raises(UndecodableError):
        decode(broken, doc_id="broken.html")


def test_a_few_bad_bytes_in_utf8_are_replaced_not_refused() -> None:
    text = "<p>Café crème, naïve élève, Zoë. " * 20 + "</p>"
    data = text.encode()[:-10] + b"\xff" + text.encode()[-10:]
    decoded = decode(data)
    assert decoded.encoding == "utf-8" and decoded.replaced == 1


def test_text_already_garbled_before_spire_read_it_is_warned_about() -> None:
    text = page(JAPANESE).encode("shift_jis").decode("utf-8", errors="replace")
    decoded = decode(text)
    assert any("U+FFFD" in w for w in decoded.warnings)
    assert not decode(page(JAPANESE)).warnings


def test_garbled_threshold() -> None:
    assert not garbled("\ufffd" * 7, 7)  # a few bad bytes: replaced, counted, warned about
    assert garbled("\ufffd" * 8, 8)
    assert not garbled("é" * 200 + "\ufffd" * 8, 8)  # 4% of the page's non-ASCII characters
    assert garbled("é" * 100 + "\ufffd" * 8, 8)
