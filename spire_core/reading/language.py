"""The language a page declares, and the Punkt parameters that go with it.

A page declares its language with ``<html lang="de">`` (or ``xml:lang``), or with
``<meta http-equiv="Content-Language" content="de">``; the first one found is the page's
(:attr:`Document.language <spire_core.document.tree.Document.language>`: the primary
subtag in lower case, ``"de"`` for ``de-CH``; None when the page declares none). Sentence
segmentation uses Punkt's parameters for that language where they ship
(:data:`PUNKT_LANGUAGES`, NLTK's ``punkt_tab`` copied into ``reading/data/punkt_tab``), and
English's otherwise. Nothing is guessed from the text.
"""

from __future__ import annotations

import re
from typing import Any

#: ISO 639-1 code -> the ``punkt_tab`` folder shipped for it.
PUNKT_LANGUAGES = {
    "en": "english",
    "de": "german",
    "fr": "french",
    "es": "spanish",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
}
#: What a page without a declared language (or with one that does not ship) is segmented as.
FALLBACK = "english"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_PRIMARY = re.compile(r"\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9-]*)?\s*(?:[,;]|$)")


def primary_subtag(value: str | None) -> str | None:
    """The primary language subtag of a BCP 47 tag (``"pt-BR"`` -> ``"pt"``), lower case; None if
    ``value`` is no language tag. A list (``"de, en"``, as Content-Language allows) gives its first."""
    if not value:
        return None
    m = _PRIMARY.match(value)
    return m.group(1).lower() if m else None


def declared_language(lx_root: Any) -> str | None:
    """The language the lxml page ``lx_root`` declares (module docstring), or None."""
    for value in (lx_root.get("lang"), lx_root.get(_XML_LANG), lx_root.get("xml:lang")):
        got = primary_subtag(value)
        if got:
            return got
    head = lx_root.find("head")
    for meta in () if head is None else head.iterfind("meta[@http-equiv]"):
        if str(meta.get("http-equiv", "")).strip().lower() == "content-language":
            got = primary_subtag(meta.get("content"))
            if got:
                return got
    return None


def punkt_language(language: str | None) -> str:
    """The Punkt parameters to segment a page of ``language`` (an ISO 639-1 code) with."""
    return PUNKT_LANGUAGES.get(language or "", FALLBACK)
