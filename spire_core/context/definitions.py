"""Definitions: a mention of a term defined on the same page brings the definition (Section 2.3.6).

The paper's glossary-aware policy. A *mention* is an element of the selection that points at a
definition on its own page:

- an ``<a href>`` whose reference (:mod:`spire_core.document.links`) names an anchor of the page
  itself that marks a definition;
- an ``<abbr>`` or ``<acronym>`` whose text (or ``title``) is the term of a ``<dfn>`` (its
  ``title``, else its text) or of a ``<dt>`` of the page.

An anchor marks a definition when it is a ``<dt>`` or lies inside one (the definition is then
the term and its description, the first ``<dd>`` after the term's run of ``<dt>``), when it is a
``<dfn>`` or lies inside one (the definition is the ``<dfn>``'s sentence and what follows it in
its block), or when it is a ``p``, ``li`` or ``dd`` or opens one, as glossary entries written
without ``<dl>`` do (``<p><a name="term"></a><b>term</b>: ...``; the definition is that block).
A section, a heading, a table or a ``div`` is no definition: following those is query-time
resolution's (:mod:`spire_core.query.references`).

What a mention contributes is bounded like the other labels, tighter: the term, then whole
sentences of the description's first block while they hold at most :data:`MAX_DEFINITION_CHARS`
characters (the first always, within :data:`~spire_core.context.policy.MAX_LABEL_CHARS`). A definition never
holds a mention itself (a link inside it is contributed by its text alone), so a glossary whose
entries link each other brings one definition per mention, not a chain through the glossary.
Decided by markup alone: no word list, any language.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from spire_core.context.policy import MAX_LABEL_CHARS, PageRule, Table
from spire_core.document.links import links
from spire_core.document.tree import INLINE_TAGS, Memo
from spire_core.reading.sentences import sentence_index

if TYPE_CHECKING:
    from spire_core.document.tree import Document

#: A definition's description holds at most this many characters of text (the first sentence always):
#: a gloss of one or two sentences, as a glossary gives (a fifth of what a label may hold).
#: Set at 02306ab without a recorded measurement; docs/tuned-constants.md.
MAX_DEFINITION_CHARS = 400
#: Elements that mention a term (and are left out of every definition, so that none chains).
MENTION_TAGS = frozenset({"a", "abbr", "acronym"})
#: Blocks an anchor may open (or be) as a glossary entry.
ENTRY_TAGS = frozenset({"p", "li", "dd"})
#: A term longer than this is not looked up (a ``dt`` holding a paragraph is no term).
MAX_TERM_CHARS = 128
_WS = re.compile(r"\s+")


def _term(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def within(doc: Document, node: int, tags: frozenset[str], stop: int = 8) -> int:
    """``node`` or its nearest ancestor, at most ``stop`` levels up, whose tag is in ``tags`` (-1: none)."""
    for _ in range(stop + 1):
        if node < 0:
            return -1
        if doc.tag[node] in tags:
            return node
        node = doc.parent[node]
    return -1


def description_of(doc: Document, dt: int) -> int:
    """The first ``dd`` after the run of ``dt`` holding ``dt`` (-1: none)."""
    parent = doc.parent[dt]
    if parent < 0:
        return -1
    siblings = doc.children[parent]
    for c in siblings[doc.pos[dt] + 1 :]:
        tag = doc.tag[c]
        if tag == "dd":
            return c
        if tag != "dt":
            return -1
    return -1


def _chars(doc: Document, node: int) -> int:
    """The characters of text under ``node``, counted up to just past :data:`MAX_DEFINITION_CHARS`."""
    chars = 0
    for i in range(node, doc.end[node]):
        if doc.tag[i] is None:
            chars += len(doc.text[i])
            if chars > MAX_DEFINITION_CHARS:
                break
    return chars


def _opens(doc: Document, anchor: int, block: int) -> bool:
    """Whether no text of ``block`` comes before ``anchor`` (an entry's anchor opens it)."""
    return not any(doc.tag[i] is None and doc.text[i].strip() for i in range(block + 1, anchor))


def definition_of(doc: Document, target: int) -> tuple[int, ...]:
    """The definition the anchored node ``target`` marks (empty: none; module docstring)."""
    dt = within(doc, target, frozenset({"dt"}))
    if dt >= 0:
        dd = description_of(doc, dt)
        term = (dt,) if _chars(doc, dt) <= MAX_DEFINITION_CHARS else ()  # (a term over it is no term)
        return _bounded_definition(doc, term, dd, dd + 1 if dd >= 0 else -1)
    dfn = within(doc, target, frozenset({"dfn"}))
    if dfn >= 0:
        block = _block(doc, dfn)
        return _bounded_definition(doc, (), block, dfn) if block >= 0 else ()
    block = within(doc, target, ENTRY_TAGS | INLINE_TAGS, stop=4)
    while block >= 0 and doc.tag[block] in INLINE_TAGS:
        block = doc.parent[block]
    if block < 0 or doc.tag[block] not in ENTRY_TAGS or not _opens(doc, target, block):
        return ()
    return _bounded_definition(doc, (), block, block + 1)


def _block(doc: Document, node: int) -> int:
    """The nearest ancestor of ``node`` that is not inline (-1: none)."""
    node = doc.parent[node]
    while node >= 0 and doc.tag[node] in INLINE_TAGS:
        node = doc.parent[node]
    return node


def _bounded_definition(doc: Document, term: tuple[int, ...], block: int, start: int) -> tuple[int, ...]:
    """``term`` and the whole sentences of ``block`` from the one holding node ``start`` on, while
    they hold :data:`MAX_DEFINITION_CHARS` characters (the first within ``MAX_LABEL_CHARS``), their
    mention elements left out; the term alone when ``block`` has none."""
    if block < 0:
        return term
    index = sentence_index(doc)
    k = max(index.before(start), 0)
    stop = doc.end[block]
    out: list[int] = list(term)
    chars = 0
    first = -1  # the block holding the first sentence: the definition is its sentences
    while k < len(index) and index.begins[k] < stop:
        nodes = index.nodes[k]
        if index.begins[k] < block:  # a sentence beginning before the block
            k += 1
            continue
        here = _block(doc, index.begins[k])
        if first >= 0 and here != first:
            break
        first = here
        size = sum(len(doc.text[i]) for i in nodes if doc.tag[i] is None)
        if chars + size > (MAX_DEFINITION_CHARS if chars else MAX_LABEL_CHARS):
            break
        chars += size
        out.extend(sorted(i for i in nodes if doc.tag[i] not in MENTION_TAGS))
        k += 1
        if chars >= MAX_DEFINITION_CHARS:
            break
    return tuple(out)


def _terms(doc: Document) -> dict[str, int]:
    """Term -> the ``dfn`` (first) or ``dt`` defining it on the page."""
    dfns: dict[str, int] = {}
    dts: dict[str, int] = {}
    for i, tag in enumerate(doc.tag):
        if tag == "dfn":
            title = doc.attrs[i].get("title")
            term = _term(title) if title else _term(doc.subtree_text(i)) if doc.end[i] - i <= 16 else ""
            if term and len(term) <= MAX_TERM_CHARS:
                dfns.setdefault(term, i)
        elif tag == "dt" and doc.end[i] - i <= 16:
            term = _term(doc.subtree_text(i))
            if term and len(term) <= MAX_TERM_CHARS:
                dts.setdefault(term, i)
    return {**dts, **dfns}


def _definitions(doc: Document) -> Table:
    """Each mention's definition, every other node nothing (one pass over the page's links)."""
    table: list[tuple[int, ...]] = [()] * len(doc)
    page = links(doc)
    found: dict[int, tuple[int, ...]] = {}  # target -> its definition (pages link a term many times)

    def defined(target: int) -> tuple[int, ...]:
        if target not in found:
            found[target] = definition_of(doc, target)
        return found[target]

    for a, ref in page.references.items():
        if ref.paths:  # an anchor of this page
            target = page.anchors[ref.anchor]
            if not (target <= a < doc.end[target]):  # a link inside what it names adds nothing
                table[a] = defined(target)
    terms: dict[str, int] | None = None
    for i, tag in enumerate(doc.tag):
        if tag == "abbr" or tag == "acronym":
            if terms is None:
                terms = _terms(doc)
            title = doc.attrs[i].get("title")
            for key in (_term(doc.subtree_text(i)) if doc.end[i] - i <= 16 else "", _term(title) if title else ""):
                term = terms.get(key, -1) if key else -1
                if term >= 0 and not (term <= i < doc.end[term]):
                    table[i] = defined(term)
                    break
    return table


_TABLE: Memo[Table] = Memo(_definitions)


class DefinitionsRule(PageRule):
    """A mention (a link to a definition on the page, an abbreviation the page defines) brings the definition."""

    name = "definitions"
    per_page = _TABLE
