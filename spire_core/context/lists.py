"""List rule (Section 2.3.3), with definition lists and list lead-ins.

For a node inside nested list items, each enclosing item but the innermost contributes
its *label*: its leading children before the child that leads to the node and before any
nested list (never sibling items). The path down to the node needs no rule: rendering
links ancestors. Inside a ``dd``, the label is the ``dt`` term(s) just before it. A list whose preceding paragraph
ends with a colon ("The standard names include:") also gets that paragraph's last
sentence, its lead-in. A label is at most :data:`MAX_LABEL_CHILDREN` leading children (terms: the
nearest ones), and only lists at most :data:`MAX_LIST_DEPTH` deep give labels, terms and lead-ins,
which keeps every context, and so the work over a page, linear in the page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spire_core.context.blocks import paragraph_in, previous_block
from spire_core.context.headers import unlabelled_headings
from spire_core.context.policy import PageRule, Table, inherited
from spire_core.document.tree import Memo
from spire_core.reading.sentences import sentence_index

if TYPE_CHECKING:
    from spire_core.document.tree import Document

LIST_TAGS = frozenset({"ul", "ol", "dl", "menu"})
ITEM_TAGS = frozenset({"li", "dd"})
_SPECIAL = ITEM_TAGS | LIST_TAGS
#: At most this many leading children of an item (or ``dt`` terms of a ``dd``) label what is
#: nested in it: a label is a few words, and a page whose items lead with thousands of
#: children would otherwise put them all in the context of every nested item.
MAX_LABEL_CHILDREN = 32
#: Items, terms and lead-ins of lists nested in more than this many lists label nothing. A
#: context's labels would otherwise grow with the nesting: a page nesting 2,000 lists, one
#: label each, rendered 49 MB of passages from 30 KB of HTML. (The bench pages nest 5 deep.)
MAX_LIST_DEPTH = 16
#: A list's lead-in may sit before at most this many wrapper ``div`` the list opens.
MAX_WRAPPERS = 8
_LABELS: Memo[Table] = Memo(lambda doc: unlabelled_headings(doc, inherited(doc, _SPECIAL, _walk)))


def _deep_nodes(doc: Document) -> dict[int, tuple[int, bool]]:
    """Each node inside more than :data:`MAX_LIST_DEPTH` lists (itself counted) -> the outermost
    such list above it, and whether an ``li`` lies on the way up to it (one pass: parents first)."""
    depth: list[int] = []
    deep: dict[int, tuple[int, bool]] = {}
    if _list_depth(doc) <= MAX_LIST_DEPTH:
        return deep
    for i, (tag, parent) in enumerate(zip(doc.tag, doc.parent, strict=True)):
        d = (depth[parent] if parent >= 0 else 0) + (tag in LIST_TAGS)
        depth.append(d)
        if d > MAX_LIST_DEPTH:
            top, item = deep.get(parent, (i, False))
            deep[i] = (top, item or tag == "li")
    return deep


def _list_depth(doc: Document) -> int:
    """How deep the page nests lists (the lists alone are visited: a page has few)."""
    ends: list[int] = []  # subtree ends of the lists open at i
    most = 0
    for i in [i for i, tag in enumerate(doc.tag) if tag in LIST_TAGS]:
        while ends and ends[-1] <= i:
            ends.pop()
        ends.append(doc.end[i])
        most = max(most, len(ends))
    return most


_DEEP: Memo[dict[int, tuple[int, bool]]] = Memo(_deep_nodes)
#: (list crossing the cap, an item below it) -> what every node it holds so gets (:func:`_walk`)
_DEEP_WALKS: Memo[dict[tuple[int, bool], tuple[int, ...]]] = Memo(lambda doc: {})


class ListsRule(PageRule):
    name = "lists"
    per_page = _LABELS


def _walk(doc: Document, node: int) -> tuple[int, ...]:
    """The labels, terms and lead-ins the list structure around ``node`` contributes."""
    deep = _DEEP(doc).get(node)
    if deep is None:
        return _walk_from(doc, node, node, innermost=True)
    # nothing nested past the cap labels: go on from the list that crosses it
    walks = _DEEP_WALKS(doc)
    if deep not in walks:
        top, item = deep
        walks[deep] = _walk_from(doc, doc.parent[top], top, innermost=not item)
    return walks[deep]


def _walk_from(doc: Document, node: int, child: int, *, innermost: bool) -> tuple[int, ...]:
    """:func:`_walk` from ``node`` up, come from ``child`` (``node`` itself at the start), and
    whether no item was passed yet (the innermost item gives no label)."""
    out: list[int] = []
    for anc in (node, *doc.ancestors(node)):  # the node itself may be an item or a list
        tag = doc.tag[anc]
        if tag == "dd":
            out.extend(_terms(doc, anc))
        elif tag == "li":
            if not innermost:
                out.extend(_label(doc, anc, child))
            innermost = False
        elif tag in LIST_TAGS and tag != "dl":
            out.extend(_lead_in(doc, anc))
        child = anc
    return tuple(out)


def _terms(doc: Document, dd: int) -> tuple[int, ...]:
    """The ``dt`` elements just before ``dd`` (nearest first, at most :data:`MAX_LABEL_CHILDREN`)."""
    terms = _DD_TERMS(doc)
    if dd not in terms:
        terms.update(_run_terms(doc, doc.parent[dd]))
    return terms[dd]


def _run_terms(doc: Document, parent: int) -> dict[int, tuple[int, ...]]:
    """Each ``dd`` child of ``parent`` -> the ``dt`` run just before its run of ``dd`` (one pass)."""
    out: dict[int, tuple[int, ...]] = {}
    run: list[int] = []  # the latest run of dt
    terms: tuple[int, ...] = ()
    before: str | None = None
    for c in doc.children[parent]:
        tag = doc.tag[c]
        if tag == "dt":
            if before != "dt":
                run = []
            run.append(c)
        elif tag == "dd":
            if before == "dt":
                terms = tuple(reversed(run[-MAX_LABEL_CHILDREN:]))
            elif before != "dd":  # dd, dd after one dt share it
                terms = ()
            out[c] = terms
        before = tag
    return out


#: Per page: dd -> its terms (:func:`_terms`), filled one parent at a time.
_DD_TERMS: Memo[dict[int, tuple[int, ...]]] = Memo(lambda doc: {})


def _label(doc: Document, item: int, toward: int) -> list[int]:
    """Leading children of ``item`` before ``toward`` and any nested list (at most :data:`MAX_LABEL_CHILDREN`)."""
    label: list[int] = []
    for c in doc.children[item]:
        if c == toward or doc.tag[c] in LIST_TAGS or len(label) == MAX_LABEL_CHILDREN:
            break
        label.append(c)
    return label


def lead_in_paragraph(doc: Document, lst: int) -> int:
    """The paragraph (:func:`~spire_core.context.blocks.paragraph_in`: a ``p`` or a ``div`` of
    inline content, or a ``div`` wrapping one) just before the list ``lst`` or the wrapper
    ``div`` it opens, elements that show nothing between them passed over (-1: none)."""
    prev = previous_block(doc, lst, climb=MAX_WRAPPERS)
    return paragraph_in(doc, prev) if prev >= 0 else -1


def _lead_in(doc: Document, lst: int) -> list[int]:
    para = lead_in_paragraph(doc, lst)
    if para < 0 or not doc.subtree_text(para).rstrip().endswith(":"):
        return []
    return last_sentence(doc, para)


def last_sentence(doc: Document, block: int) -> list[int]:
    """The nodes of the last sentence of ``block`` (the block itself when it has no sentence seeds)."""
    index = sentence_index(doc)
    k = index.before(doc.end[block] - 1)
    if not index.by_sentence or k < 0 or index.begins[k] < block:
        return [block]  # no sentence seeds (segment=False): the whole paragraph
    return sorted(index.nodes[k])
