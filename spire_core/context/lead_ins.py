"""List lead-ins: the paragraph just before a list labels it, whatever its last character.

The lists rule (:mod:`spire_core.context.lists`) takes a paragraph ending with a colon as a
list's lead-in ("The standard names include:"). Pages as often write the lead-in without one
("Some exit codes are", "the following pairs of options are incompatible") or as a sentence
of its own ("Memcheck merges these cases into the following four leak kinds.", "However,
there are some caveats."), and an item read alone ("2 - the file was not found") then lacks
what it is an item of. This rule takes the paragraph immediately before a ``ul``/``ol``/``menu``
(or before the wrapper ``div`` the list opens; a ``p``, a ``div`` of inline content or a ``div``
wrapping one, with only elements that show nothing between them:
:func:`~spire_core.context.lists.lead_in_paragraph`) as its lead-in and contributes that
paragraph's last sentence to everything inside the list: the sentence nearest the list,
which is the one that announces it. Decided by position alone, with no word list: anything
else between the paragraph and the list (a heading, a table, another list) means no lead-in,
and a definition list's entries have their terms instead. Loose text just before the list (no
paragraph around it, as LaTeX2HTML and hand-written pages leave it) is a lead-in only when its
last sentence ends with a colon (:func:`loose_lead_in`).

A paragraph of its own just above a list (a README's "Our CI status can be found at
hud.example.org." above its table of contents) is taken too and costs its items' citations
that sentence. A rule that took only paragraphs not ending a sentence missed the second kind
of lead-in: on the tuning manuals (``benchmarks/tuning/manuals``) interpretable 0.912 with it
against 0.956 without, the dev sets unchanged.

Inside nested lists each list's lead-in counts, of the lists at most
:data:`~spire_core.context.lists.MAX_LIST_DEPTH` deep, as for the lists rule's labels.

**Lists written as paragraphs** (:func:`paragraph_lists`): some generators and hand-written
pages set a list as sibling paragraphs that each open with an item mark ("<p>- Outside the
selection ...</p><p>- Inside the selection ...</p>", GIMP's help). Two or more such paragraphs
in a row, opening with the same mark (:data:`ITEM_MARKS`, then a space), right after a
paragraph ending with a colon, are that paragraph's list: its last sentence leads each of them
in. The colon is required here: a run of dash-opened paragraphs after a plain one is as often
dialogue (French or Russian prose opens each reply with a dash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spire_core.context.headers import unlabelled_headings
from spire_core.context.lists import LIST_TAGS, MAX_LIST_DEPTH, last_sentence, lead_in_paragraph
from spire_core.context.policy import PageRule, Table
from spire_core.document.tree import SENTENCE_END, Memo
from spire_core.reading.sentences import sentence_index

if TYPE_CHECKING:
    from spire_core.document.tree import Document

#: Lists a lead-in labels (a ``dl`` has its terms).
LED_LISTS = frozenset({"ul", "ol", "menu"})


#: How a lead-in ends when a colon must end it (loose text, a list written as paragraphs): ASCII or full-width.
COLONS = (":", "\uff1a")
#: Characters that open an item of a list written as paragraphs, followed by a space (:func:`paragraph_lists`).
ITEM_MARKS = frozenset("-\u2013\u2014\u2022\u00b7\u2023\u25e6\u25aa*")
#: A lead-in paragraph of at most this many characters is taken whole (see :func:`lead_in`).
#: Tuned on benchmarks/tuning/manuals2 at b5b3d26; docs/tuned-constants.md.
SHORT_LEAD_IN_CHARS = 200


def lead_in(doc: Document, lst: int) -> tuple[int, ...]:
    """The last sentence of the paragraph just before the list ``lst`` (empty: none); the whole
    paragraph when it is short (:data:`SHORT_LEAD_IN_CHARS`): a list announced, then a remark
    on it ("Here is a recipe for nettle soup. 4 servings.")."""
    para = lead_in_paragraph(doc, lst)
    if para < 0:
        return loose_lead_in(doc, lst)
    last = last_sentence(doc, para)
    if last[0] > para and len(doc.subtree_text(para).strip()) <= SHORT_LEAD_IN_CHARS:
        index = sentence_index(doc)
        k = index.before(last[0])
        nodes = set(last)
        while k > 0 and index.begins[k - 1] > para:
            k -= 1
            nodes |= index.nodes[k]
        return tuple(sorted(nodes))
    return tuple(last)


def loose_lead_in(doc: Document, lst: int) -> tuple[int, ...]:
    """The sentence of loose text (no paragraph around it) ending with a colon just before the
    list ``lst`` (empty: none): older generators (LaTeX2HTML, hand-written pages) leave "There
    could be several reasons to change the value here:" bare between blocks."""
    parent = doc.parent[lst]
    k = doc.pos[lst]
    if parent < 0 or k == 0:
        return ()
    prev = doc.children[parent][k - 1]
    if doc.tag[prev] is not None and doc.tag[prev] != SENTENCE_END:
        return ()
    index = sentence_index(doc)
    unit = index.before(prev)
    if unit < 0 or doc.parent[index.begins[unit]] != parent:
        return ()  # the unit begins inside another block: not loose text of this parent
    nodes = index.nodes[unit]
    text = "".join(doc.text[i] for i in sorted(nodes) if doc.tag[i] is None)
    return tuple(sorted(nodes)) if text.rstrip().endswith(COLONS) else ()


def _item_mark(text: str) -> str | None:
    """The item mark ``text`` (a paragraph's) opens with (:data:`ITEM_MARKS`, then a space), else None."""
    head = text.lstrip()[:2]
    return head[0] if len(head) == 2 and head[0] in ITEM_MARKS and head[1].isspace() else None


def paragraph_lists(doc: Document) -> dict[int, tuple[int, ...]]:
    """Each item of a list written as paragraphs -> its lead-in (the module docstring): runs of
    two or more sibling ``p`` opening with the same item mark, right after a ``p`` whose text
    ends with a colon; anything else between them (an element, loose text) ends the run. One
    pass over each parent's children."""
    out: dict[int, tuple[int, ...]] = {}
    for parent in range(len(doc.tag)):
        lead: tuple[int, ...] = ()
        mark: str | None = None
        run: list[int] = []
        for c in (*doc.children[parent], -1):  # -1: the end, which closes the last run
            tag = doc.tag[c] if c >= 0 else ""
            if tag == SENTENCE_END or (tag is None and not doc.text[c].strip()):
                continue
            text = doc.subtree_text(c) if tag == "p" else ""
            own = _item_mark(text)
            if tag == "p" and own is not None and lead and mark in (None, own):
                run.append(c)
                mark = own
                continue
            if len(run) >= 2:
                out.update((item, lead) for item in run)
            run, mark = [], None
            colon = tag == "p" and own is None and text.rstrip().endswith(COLONS)
            lead = tuple(last_sentence(doc, c)) if colon else ()
    return out


def _lead_ins(doc: Document) -> Table:
    """Every node's lead-ins: those of the lists around it, nearest first (one pass, parents first).

    Only lists inside at most :data:`~spire_core.context.lists.MAX_LIST_DEPTH` lists (itself
    counted) give one. A lead-in sits inside the list around its own list, so a closure brings
    the lead-ins of every list up the nesting: without the cap a page nesting 2,000 led lists
    gave every item 2,000 sentences of context.
    """
    out: list[tuple[int, ...]] = []
    depth: list[int] = []
    items = paragraph_lists(doc)
    for i, (tag, parent) in enumerate(zip(doc.tag, doc.parent, strict=True)):
        d = depth[parent] if parent >= 0 else 0
        around = out[parent] if parent >= 0 else ()
        if i in items:
            around = items[i] + around
        if tag in LIST_TAGS:
            d += 1
            if tag in LED_LISTS and d <= MAX_LIST_DEPTH:
                own = lead_in(doc, i)
                if own:
                    around = own + around
        depth.append(d)
        out.append(around)
    return out


_TABLE: Memo[Table] = Memo(lambda doc: unlabelled_headings(doc, _lead_ins(doc)))


class ListLeadInRule(PageRule):
    """A ``ul``/``ol`` (or a list written as paragraphs) labelled by the last sentence of the paragraph before it."""

    name = "lead-ins"
    per_page = _TABLE
