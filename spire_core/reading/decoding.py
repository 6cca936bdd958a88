"""Turning input bytes into text: BOM, WHATWG `<meta charset>` labels, detection, replacement of bad sequences."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

import charset_normalizer

from spire_core.errors import DocumentTooLargeError, NotHTMLError, UndecodableError

#: Default ceiling on the size of one input page (bytes, or characters for ``str``).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

_MAGIC = {
    b"%PDF-": "a PDF file",
    b"\x89PNG": "a PNG image",
    b"GIF8": "a GIF image",
    b"\xff\xd8\xff": "a JPEG image",
    b"PK\x03\x04": "a ZIP archive (or an Office document)",
    b"\x1f\x8b": "gzip-compressed data",
    b"\x7fELF": "an executable",
}
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)
_XML_DECL = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)""", re.I)


#: The WHATWG Encoding Standard's labels, by the Python codec that decodes them. Only these
#: labels are honoured (as browsers do); anything else (``base64``, ``rot13``, ``utf-7``,
#: ``unicode_escape``, ...) is ignored with a warning. A declaration found by reading the
#: bytes as ASCII cannot be UTF-16, so it means UTF-8; Latin-1 and ASCII mean windows-1252.
_WHATWG = {
    "utf-8": "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8 utf-16 utf-16be"
    " utf-16le unicodefffe unicodefeff csunicode iso-10646-ucs-2 ucs-2 unicode",
    "cp866": "866 cp866 csibm866 ibm866",
    "iso8859-2": "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    "iso8859-3": "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    "iso8859-4": "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    "iso8859-5": "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 iso_8859-5:1988",
    "iso8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 iso-8859-6-e"
    " iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    "iso8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 iso88597"
    " iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    "iso8859-8": "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 iso88598"
    " iso_8859-8 iso_8859-8:1988 visual csiso88598i iso-8859-8-i logical",
    "iso8859-10": "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    "iso8859-13": "iso-8859-13 iso8859-13 iso885913",
    "iso8859-14": "iso-8859-14 iso8859-14 iso885914",
    "iso8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    "iso8859-16": "iso-8859-16",
    "koi8-r": "cskoi8r koi koi8 koi8-r koi8_r",
    "koi8-u": "koi8-ru koi8-u",
    "mac-roman": "csmacintosh mac macintosh x-mac-roman",
    "cp874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "cp1250": "cp1250 windows-1250 x-cp1250",
    "cp1251": "cp1251 windows-1251 x-cp1251",
    "cp1252": "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 iso88591"
    " iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    "cp1253": "cp1253 windows-1253 x-cp1253",
    "cp1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 iso_8859-9:1989 l5"
    " latin5 windows-1254 x-cp1254",
    "cp1255": "cp1255 windows-1255 x-cp1255",
    "cp1256": "cp1256 windows-1256 x-cp1256",
    "cp1257": "cp1257 windows-1257 x-cp1257",
    "cp1258": "cp1258 windows-1258 x-cp1258",
    "mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
    "gb18030": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk gb18030",
    "big5hkscs": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "euc-jp": "cseucpkdfmtjapanese euc-jp x-euc-jp",
    "iso2022-jp": "csiso2022jp iso-2022-jp",
    "cp932": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "cp949": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601"
    " windows-949",
}
_LABELS = {label: codec for codec, labels in _WHATWG.items() for label in labels.split()}
#: How a decoded page reports its encoding (the WHATWG name, where it differs from the codec's).
_NAMES = {**{f"cp125{k}": f"windows-125{k}" for k in range(9)}, "cp874": "windows-874", "cp932": "shift_jis"}
#: Python's name of each codec of :data:`_WHATWG` -> its key there (``euc_jp`` -> ``euc-jp``):
#: a detected encoding is named as a declared one.
_CODECS = {codecs.lookup(c).name: c for c in _WHATWG}
#: Codecs the detector may choose from for a page that declares no charset (WHATWG encodings only).
_DETECTABLE = [c for c in _WHATWG if c not in ("utf-8", "iso2022-jp")]
#: The detectable CJK encodings: two bytes a character, so random bytes seldom decode in them.
_MULTIBYTE = frozenset(["gb18030", "big5hkscs", "euc-jp", "cp932", "cp949"])
#: Bytes the detector reads of an undeclared page (it samples; more only costs time).
_DETECT_BYTES = 64 * 1024
#: ISO-2022-JP's escape sequences (JIS X 0208 in, ASCII or JIS-Roman back): its bytes are 7-bit,
#: so they read as valid UTF-8 (and lose every Japanese character) unless recognised first.
_ISO2022JP_ESCAPES = (b"\x1b$B", b"\x1b$@", b"\x1b(J")
#: An undeclared page that is not valid UTF-8 still is UTF-8 (its few corrupt bytes replaced) when
#: at least this share of its runs of non-ASCII bytes are valid UTF-8, each a whole: in a legacy
#: encoding's prose almost none is (none in the Shift_JIS, EUC-JP, GBK, Big5, EUC-KR and Cyrillic
#: pages of the tests), in a UTF-8 page with corrupt bytes most are.
_UTF8_RUNS = 0.2
_NON_ASCII_RUN = re.compile(rb"[\x80-\xff]+")
#: A decoded page whose U+FFFD replacements are at least this many and more than
#: :data:`MAX_REPLACED_SHARE` of its non-ASCII characters was not read as the text it holds: its
#: encoding is detected again, and if no other encoding reads it, :class:`UndecodableError` is raised.
_FEW_REPLACED = 8
MAX_REPLACED_SHARE = 0.05
#: Characters no HTML text can hold (lxml refuses them): C0 controls but tab/newline/CR/FF,
#: DEL, lone surrogates, U+FFFE/U+FFFF. Removed; surrogates become U+FFFD.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f\ufffe\uffff]")
_SURROGATES = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Decoded:
    """Text of a page with how it was obtained."""

    text: str
    encoding: str
    #: number of byte sequences that were invalid in ``encoding`` and replaced by U+FFFD
    replaced: int
    warnings: tuple[str, ...] = ()


def decode(data: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, doc_id: str | None = None) -> Decoded:
    """Decode ``data``, replacing a few bad bytes: a BOM decides (or UTF-16 recognised without
    one: :func:`_utf16_without_bom`), then a ``<meta charset>`` holding a WHATWG label, else
    ISO-2022-JP when its escapes say so, else UTF-8 when the bytes are (mostly) UTF-8, else a
    detected legacy encoding. Characters HTML cannot hold (controls, lone surrogates) are removed
    or replaced, also in ``str``. A decoding that replaces too much (:func:`garbled`) is tried
    again with the encoding detected in the bytes; a ``str`` that holds too many U+FFFD gets a
    warning (its bytes are gone).

    Raises :class:`DocumentTooLargeError` past ``max_bytes``, :class:`NotHTMLError` for binary
    data and :class:`UndecodableError` when no encoding reads the bytes (mixed encodings, corrupt
    bytes), each naming ``doc_id``.
    """
    if len(data) > max_bytes:
        raise DocumentTooLargeError(len(data), max_bytes, doc_id=doc_id)
    if isinstance(data, str):
        _reject_binary(data[:4096].encode("utf-8", "surrogatepass"), bom=False, doc_id=doc_id)
        held = data.count("\ufffd")
        if garbled(data, held):  # decoded before it got here, its bad bytes replaced: nothing to re-read
            warning = f"text holds {held} U+FFFD: decoded with the wrong encoding before SPIRE read it?"
            return _clean(data, "str", 0, [warning])
        return _clean(data, "str", 0, [])
    declared, skip, bom = _sniff(data)
    _reject_binary(data[:4096], bom=bom, doc_id=doc_id)
    warnings: list[str] = []
    body = data[skip:]
    if bom or declared is None:
        encoding = declared or _undeclared(body)
    else:
        encoding = _LABELS.get(declared) or _undeclared(body)
        if declared not in _LABELS:
            warnings.append(f"charset {declared!r} is not a WHATWG encoding label; ignored")
    text, replaced = _decoded(body, encoding)
    if garbled(text, replaced):
        encoding, text, replaced = _redetected(body, encoding, replaced, warnings, doc_id)
    if replaced:
        warnings.append(f"{replaced} invalid {_name(encoding)} byte sequence(s) replaced by U+FFFD")
    return _clean(text, _name(encoding), replaced, warnings)


def garbled(text: str, replaced: int) -> bool:
    """Whether ``text``, decoded with ``replaced`` replacements, is not the text its bytes hold:
    at least :data:`_FEW_REPLACED` replacements, over :data:`MAX_REPLACED_SHARE` of its
    non-ASCII characters (markup is ASCII: the share is that of the page's words)."""
    if replaced < _FEW_REPLACED:
        return False
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    return replaced > MAX_REPLACED_SHARE * non_ascii


def _name(codec: str) -> str:
    return _NAMES.get(codec, codec)


def _decoded(body: bytes, encoding: str) -> tuple[str, int]:
    """``body`` decoded with ``encoding`` and how many invalid sequences became U+FFFD."""
    try:
        return body.decode(encoding), 0
    except UnicodeDecodeError:
        text = body.decode(encoding, errors="replace")
        return text, text.count("\ufffd") - body.decode(encoding, errors="ignore").count("\ufffd")


def _redetected(
    body: bytes, tried: str, replaced: int, warnings: list[str], doc_id: str | None
) -> tuple[str, str, int]:
    """(codec, text, replacements) of a page that ``tried`` garbled: another encoding that reads
    it (:func:`garbled` no longer), with a warning; else :class:`UndecodableError` naming the page.

    Bytes that hold UTF-8 (:func:`_holds_utf8`) are not read in a legacy encoding: that would
    garble their UTF-8 text instead (a page of mixed encodings, or of corrupt UTF-8)."""
    candidates: list[str] = []
    if _iso2022jp(body):
        candidates.append("iso2022-jp")
    if _strict(body, "utf-8"):
        candidates.append("utf-8")
    elif not _holds_utf8(body):
        candidates.append(_detected(body, exclude=tried))
    for codec in candidates:
        if codec == tried:
            continue
        text, n = _decoded(body, codec)
        if not garbled(text, n):
            warnings.append(
                f"{replaced} byte sequence(s) invalid in {_name(tried)}: read as {_name(codec)}, which reads the page"
            )
            return codec, text, n
    raise UndecodableError(
        f"{replaced} byte sequence(s) are invalid in {_name(tried)} (over {MAX_REPLACED_SHARE:.0%} of its "
        "non-ASCII characters) and no other encoding reads the page (mixed encodings or corrupt bytes?): "
        "declare its charset, or convert it to UTF-8",
        doc_id=doc_id,
    )


def _holds_utf8(body: bytes) -> bool:
    """Whether ``body`` (its first :data:`_DETECT_BYTES`) holds UTF-8 text: at least
    :data:`_UTF8_RUNS` of its runs of non-ASCII bytes are valid UTF-8."""
    runs = _NON_ASCII_RUN.findall(body[:_DETECT_BYTES])
    valid = sum(1 for run in runs if _strict(run, "utf-8"))
    return bool(runs) and valid >= _UTF8_RUNS * len(runs)


def _strict(data: bytes, codec: str) -> bool:
    """Whether ``data`` decodes in ``codec`` without error."""
    try:
        data.decode(codec)
    except UnicodeDecodeError:
        return False
    return True


def _iso2022jp(body: bytes) -> bool:
    """Whether ``body`` is ISO-2022-JP: 7-bit bytes holding its escape sequences, decoding without error."""
    head = body[:_DETECT_BYTES]
    if not any(e in head for e in _ISO2022JP_ESCAPES) or max(head, default=0) > 0x7F:
        return False
    try:
        body.decode("iso2022-jp")
    except UnicodeDecodeError:
        return False
    return True


def _undeclared(body: bytes) -> str:
    """The codec of a page without BOM or declaration: ISO-2022-JP when its escapes say so, UTF-8
    when the bytes are UTF-8 or hold UTF-8 among corrupt bytes (:func:`_holds_utf8`), else what
    charset-normalizer detects."""
    if _iso2022jp(body):
        return "iso2022-jp"
    try:
        body.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    if _holds_utf8(body):
        return "utf-8"
    return _detected(body)


def _detected(body: bytes, exclude: str | None = None) -> str:
    """The legacy encoding charset-normalizer finds for ``body`` (:data:`_DETECTABLE`, less
    ``exclude``); windows-1252 when it finds none, or ties with it."""
    isolation = [c for c in _DETECTABLE if c != exclude]
    matches = list(charset_normalizer.from_bytes(body[:_DETECT_BYTES], cp_isolation=isolation))
    if not matches:
        return "cp1252"
    best = matches[0]
    named = [(m, _CODECS.get(n, n)) for m, n in ((m, codecs.lookup(m.encoding).name) for m in matches)]
    if named[0][1] not in _MULTIBYTE:  # a short page reads as Latin letters too: CJK if it reads as CJK
        for m, name in named[1:]:
            if name in _MULTIBYTE and m.chaos <= best.chaos + 0.01 and _reads_cjk(body, name):
                return name
    tied = [name for m, name in named if _tie(m, best)]
    sample = body[:_DETECT_BYTES]
    # windows-1252 (the browsers' default for legacy pages) wins any tie, and so does any codec
    # reading the page as it does: short texts fit many codecs
    if "cp1252" in tied or sample.decode(tied[0], "replace") == sample.decode("cp1252", "replace"):
        return "cp1252"
    return tied[0]


#: Where the characters of CJK text are: general punctuation (quotes, dashes, ellipsis), CJK
#: symbols, kana, Hangul compatibility jamo, ideographs, Hangul syllables, compatibility
#: ideographs, full- and half-width forms.
_CJK = re.compile("[^\x00-\x7f\u2010-\u2027\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def _reads_cjk(body: bytes, codec: str) -> bool:
    """Whether ``body`` decodes in ``codec`` without error into ASCII and CJK characters alone
    (Latin-1 text seldom decodes in a CJK encoding, and never into CJK characters alone)."""
    try:
        text = body.decode(codec)
    except UnicodeDecodeError:
        return False
    return _CJK.search(text) is None


def _tie(a: Any, b: Any) -> bool:
    return bool(abs(a.chaos - b.chaos) <= 0.01 and abs(a.coherence - b.coherence) <= 0.01)


def _clean(text: str, encoding: str, replaced: int, warnings: list[str]) -> Decoded:
    """``text`` without the characters HTML text cannot hold (see :data:`_CONTROLS`)."""
    surrogates = len(_SURROGATES.findall(text))
    if surrogates:
        text = _SURROGATES.sub("\ufffd", text)
        replaced += surrogates
        warnings.append(f"{surrogates} lone surrogate(s) replaced by U+FFFD")
    text, removed = _CONTROLS.subn("", text)
    if removed:
        warnings.append(f"{removed} control character(s) removed")
    return Decoded(text, encoding, replaced, tuple(warnings))


def _sniff(data: bytes) -> tuple[str | None, int, bool]:
    """(BOM codec or declared label or None, bytes to skip, whether a BOM decided)."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom), True
    head = data[:4096]
    utf16 = _utf16_without_bom(head)
    if utf16:
        return utf16, 0, True
    found = _XML_DECL.search(head) or _META_CHARSET.search(head)
    if found:
        return found.group(1).decode("ascii").lower(), 0, False
    return None, 0, False


def _utf16_without_bom(head: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` when ``head`` reads as UTF-16 text without a BOM, as
    browsers' sniffers find it: NUL in most bytes of one parity (the high bytes of ASCII
    markup) and in almost none of the other, and the sample decodes with no error."""
    n = len(head) // 2 * 2
    if n < 8:
        return None
    odd, even = head[1:n:2].count(0), head[0:n:2].count(0)
    half = n // 2
    for codec, high, low in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        if high >= half * 0.3 and low <= half * 0.02:
            try:
                text = head[:n].decode(codec)
            except UnicodeDecodeError:
                # a sample may end inside a surrogate pair
                try:
                    text = head[: n - 2].decode(codec)
                except UnicodeDecodeError:
                    continue
            if "<" in text or "\n" in text:
                return codec
    return None


def _reject_binary(head: bytes, *, bom: bool, doc_id: str | None) -> None:
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            raise NotHTMLError(f"input is {what}, not HTML", doc_id=doc_id)
    if not bom and head.count(b"\x00") > max(len(head) // 100, 8):  # a stray NUL in text is not binary
        raise NotHTMLError("input contains NUL bytes: binary data, not HTML", doc_id=doc_id)
