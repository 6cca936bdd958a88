"""Turning input bytes into text: BOM, ``<meta charset>``, replacement of bad sequences."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from .errors import DocumentTooLargeError, NotHTMLError

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


#: Declared labels that browsers read otherwise (WHATWG Encoding): a declaration found by
#: reading the bytes as ASCII cannot be UTF-16/32, so it is UTF-8; Latin-1 and ASCII mean windows-1252.
_DECLARED_AS = {
    **dict.fromkeys(["utf-16", "utf-16le", "utf-16be", "utf-32", "utf-32le", "utf-32be"], "utf-8"),
    **dict.fromkeys(
        ["iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1", "cp819", "ibm819", "ascii", "us-ascii"],
        "windows-1252",
    ),
}


@dataclass(frozen=True)
class Decoded:
    """Text of a page with how it was obtained."""

    text: str
    encoding: str
    #: number of byte sequences that were invalid in ``encoding`` and replaced by U+FFFD
    replaced: int
    warnings: tuple[str, ...] = ()


def decode(data: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Decoded:
    """Decode ``data`` (honouring a BOM, then ``<meta charset>``, else UTF-8), never failing on bad bytes.

    Raises :class:`DocumentTooLargeError` past ``max_bytes`` and :class:`NotHTMLError` for binary data.
    """
    if len(data) > max_bytes:
        raise DocumentTooLargeError(len(data), max_bytes)
    if isinstance(data, str):
        _reject_binary(data[:4096].encode("utf-8", "surrogatepass"), bom=False)
        return Decoded(data, "str", 0)
    encoding, skip, bom = _sniff(data)
    _reject_binary(data[:4096], bom=bom)
    warnings: list[str] = []
    try:
        codecs.lookup(encoding)
    except LookupError:
        warnings.append(f"unknown charset {encoding!r} declared; decoded as utf-8")
        encoding = "utf-8"
    body = data[skip:]
    try:
        return Decoded(body.decode(encoding), encoding, 0, tuple(warnings))
    except UnicodeDecodeError:
        text = body.decode(encoding, errors="replace")
        replaced = text.count("\ufffd") - body.decode(encoding, errors="ignore").count("\ufffd")
        warnings.append(f"{replaced} invalid {encoding} byte sequence(s) replaced by U+FFFD")
        return Decoded(text, encoding, replaced, tuple(warnings))


def _sniff(data: bytes) -> tuple[str, int, bool]:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom), True
    head = data[:4096]
    found = _XML_DECL.search(head) or _META_CHARSET.search(head)
    if found:
        label = found.group(1).decode("ascii").lower()
        return _DECLARED_AS.get(label, label), 0, False
    return "utf-8", 0, False


def _reject_binary(head: bytes, *, bom: bool) -> None:
    for magic, what in _MAGIC.items():
        if head.startswith(magic):
            raise NotHTMLError(f"input is {what}, not HTML")
    if not bom and head and head.count(b"\x00") > len(head) // 100:
        raise NotHTMLError("input contains NUL bytes: binary data, not HTML")
