"""The indexing surface (Section 3.1): one seed per sentence (or per block), rendered with context.

The seed's path set is its identity; ``text`` is only what gets embedded. A table cell is
a block leaf like a paragraph: its sentences are seeds, rendered under their row and
column labels.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from threading import Lock
from typing import Any

from .context import HTML, Policy
from .decoding import decode
from .document import INLINE_TAGS, Document, Path, parse_html, parse_text
from .errors import SpireError, naming
from .render import render_indices
from .sentences import sentence_indices

UNITS = ("sentence", "block")


@dataclass(frozen=True)
class Seed:
    """One unit of the indexing surface."""

    doc_id: str | None
    #: the seed path set ``S_b`` (the unit's identity)
    paths: frozenset[Path]
    #: the begin path (for a block: the block element's path)
    begin: Path
    #: ``render(global_context(S_b))``: the text to embed
    text: str
    #: the unit's own words, without context
    own_text: str


def seeds(doc: Document, *, policy: Policy = HTML, fmt: str = "markdown", unit: str = "sentence") -> list[Seed]:
    """The seeds of ``doc``: each sentence (``unit="sentence"``) or block leaf (``"block"``)."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    groups: list[tuple[int, list[int], str]] = []
    for s in doc.sentences:
        nodes = sentence_indices(doc, *s.span)
        anchor = _block_of(doc, s.span[0]) if unit == "block" else s.span[0]
        if unit == "block" and groups and groups[-1][0] == anchor:
            groups[-1][1].extend(nodes)
            groups[-1] = (anchor, groups[-1][1], groups[-1][2] + " " + s.text)
            continue
        groups.append((anchor, nodes, s.text))
    return [
        Seed(
            doc_id=doc.doc_id,
            paths=doc.to_paths(nodes),
            begin=doc.path(anchor),
            text=render_indices(doc, policy.indices(doc, nodes), fmt=fmt),
            own_text=own,
        )
        for anchor, nodes, own in groups
    ]


_TAGS = (
    "html|head|body|title|div|p|span|a|ul|ol|li|dl|dt|dd|table|thead|tbody|tr|td|th|caption|h[1-6]|br|hr|pre|code"
    "|section|article|main|header|footer|nav|aside|em|strong|b|i|img|meta|link|script|style|blockquote|figure"
)
_HTML = re.compile(rf"<!doctype\s+html|<(?:{_TAGS})(?:\s[^<>]*)?/?>|</(?:{_TAGS})\s*>", re.I)


def is_html(text: str) -> bool:
    """Whether ``text`` looks like HTML (a doctype or a known HTML tag)."""
    return _HTML.search(text) is not None


def parse_page(content: str | bytes, *, doc_id: str | None = None, **options: Any) -> Document:
    """Parse a page that may be HTML or plain text (paragraphs separated by blank lines).

    Binary data raises :class:`~spire_core.errors.NotHTMLError`; every SPIRE error raised
    names ``doc_id`` in its message and ``doc_id`` attribute.
    """
    try:
        text = decode(content, **{k: v for k, v in options.items() if k == "max_bytes"}).text
        if is_html(text):
            return parse_html(content, doc_id=doc_id, **options)
        return parse_text(text, doc_id=doc_id, segment=options.get("segment", True))
    except SpireError as err:
        raise naming(err, doc_id) from None


def _block_of(doc: Document, node: int) -> int:
    for anc in doc.ancestors(node):
        if doc.tag[anc] not in INLINE_TAGS:
            return anc
    return 0


class DocumentCache:
    """A bounded LRU of parsed documents: ``cache(doc_id)`` parses ``load(doc_id)`` once (with :func:`parse_page`)."""

    def __init__(self, load: Callable[[str], str | bytes], *, maxsize: int = 64, **parse_options: Any) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive")
        self.load = load
        self.maxsize = maxsize
        self.parse_options = parse_options
        self._docs: OrderedDict[str, Document] = OrderedDict()
        self._lock = Lock()

    def __call__(self, doc_id: str) -> Document:
        with self._lock:
            doc = self._docs.get(doc_id)
            if doc is not None:
                self._docs.move_to_end(doc_id)
                return doc
        doc = parse_page(self.load(doc_id), doc_id=doc_id, **self.parse_options)
        with self._lock:
            self._docs[doc_id] = doc
            while len(self._docs) > self.maxsize:
                self._docs.popitem(last=False)
        return doc

    def invalidate(self, doc_id: str) -> None:
        """Forget ``doc_id`` (after its source changed)."""
        with self._lock:
            self._docs.pop(doc_id, None)
