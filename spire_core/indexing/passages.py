"""Passages: what is embedded, stored and searched, while the sentence stays what is cited.

A *passage* is a run of consecutive sentence seeds, in document order, under one section
(the same innermost active heading), packed while its rendering stays under a token cap.
Its embedded text is ``render(global_context(union of its seeds))``, rendered once, so the
title, the headings, a list's label and a table's header row are paid once per passage
instead of once per sentence (a table's rows are packed under one header rendering). The
passage keeps its members' seed path sets: at query time
:func:`~spire_core.query.passages.expand` turns passage
hits back into sentence hits (each member inherits its passage's score), which
:func:`~spire_core.query.aggregate` merges per page as usual, so every citation is still a
sentence's path set into the source page.

Packing never crosses a heading. The cap is counted on the passage's own and context text
with ``size`` (the embedding model's tokenizer by default); a passage whose exact
rendering still exceeds ``window`` tokens is split in two, so what is embedded is what the
model reads (a single sentence longer than the window stays one passage). A passage whose
context holds more than :data:`~spire_core.context.policy.MAX_CONTEXT_CHARS` characters
(never on the bench pages; a hostile page's can hold 46 KB) renders its context's nearest part
(:meth:`~spire_core.context.Policy.nearest`).

What a page embeds in all is bounded by its size (:class:`ContextBudget`): once its units'
renderings have used :data:`CONTEXT_PER_CHAR` times the page's size plus
:data:`CONTEXT_PER_PAGE` characters, later units are embedded without context, and
sentences of one section are then packed by their own words (a flood of tiny sentences
becomes a few passages, not one 4 KB context each). No bench page comes near the bound
(the costliest uses 10x its size).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from spire_core.context import HTML, Policy
from spire_core.context.headers import headings
from spire_core.context.policy import MAX_CONTEXT_CHARS
from spire_core.document.links import Reference, references
from spire_core.document.paths import down_indices
from spire_core.document.render import rendered
from spire_core.document.tree import SENTINELS, Document, Path
from spire_core.errors import PathFormatError
from spire_core.options import DEFAULT_PASSAGE_TOKENS, DEFAULT_SIZE, MODEL_WINDOW, Fmt
from spire_core.reading.sentences import Sentence, sentence_indices, sentences
from spire_core.size import SizeFn, model_tokens

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Passage:
    """One indexed passage: consecutive sentence seeds of one section, embedded together."""

    doc_id: str | None
    #: union of the members' path sets (the passage's identity)
    paths: frozenset[Path]
    #: the first member's begin path
    begin: Path
    #: the sentence seed path sets, in document order (what citations are made of)
    members: tuple[frozenset[Path], ...]
    #: ``render(global_context(paths))`` (the nearest part of a context over the bounds): the text to embed
    text: str
    #: the references its members' text makes (:func:`~spire_core.document.links.references`)
    references: tuple[Reference, ...] = ()


#: Characters of embedded text a page may use per unit of its :func:`page_size`, plus
#: :data:`CONTEXT_PER_PAGE` (:class:`ContextBudget`).
CONTEXT_PER_CHAR = 16
CONTEXT_PER_PAGE = 64 * 1024


def page_size(doc: Document) -> int:
    """A page's size as parsed: its text characters plus 4 per element (an element takes at
    least ``<p>`` and a byte in its page; the sentence boundary markers SPIRE inserts do not count)."""
    tags = doc.tag
    return sum(len(doc.text[i]) if t is None else (0 if t in SENTINELS else 4) for i, t in enumerate(tags))


class ContextBudget:
    """The embedded text a page may still use: :data:`CONTEXT_PER_CHAR` x :func:`page_size`
    + :data:`CONTEXT_PER_PAGE` characters at first, less every rendering made (its characters,
    or the nodes it visited where they are more: the rendering work is bounded too).

    While :attr:`low` (less than two full contexts left), units are embedded with their own
    nodes only, so a page's total embedded text is at most that budget plus, per unit, its own
    words as rendered (and one unit's overshoot): linear in the page, whatever its shape.
    """

    def __init__(self, doc: Document) -> None:
        self.doc_id = doc.doc_id
        self.left = CONTEXT_PER_CHAR * page_size(doc) + CONTEXT_PER_PAGE
        self._told = False

    @property
    def low(self) -> bool:
        if self.left >= 2 * MAX_CONTEXT_CHARS:
            return False
        if not self._told:
            self._told = True
            log.warning(
                "page %r: its units' contexts reached %dx the page's size: later units are embedded without context",
                self.doc_id,
                CONTEXT_PER_CHAR,
            )
        return True

    def spend(self, text: str, nodes: int = 0) -> str:
        """Charge a rendering of ``text`` that visited ``nodes`` nodes: its characters, or its nodes
        where they are more (nodes that show nothing, such as empty elements, cost a rendering
        time all the same). No bench page's rendering visits more nodes than it shows characters."""
        self.left -= max(len(text), nodes)
        return text


@dataclass
class _Run:
    key: int
    members: list[tuple[Sentence, list[int]]]
    covered: set[int]
    #: the members' closure, or the nearest part of a context over the bounds (the run is not grown)
    closed: set[int]
    tokens: int
    cut: bool
    #: embedded without context (the page's :class:`ContextBudget` ran low): grows by own words
    bare: bool = False


def passages(
    doc: Document,
    *,
    policy: Policy = HTML,
    fmt: Fmt = "markdown",
    max_tokens: int = DEFAULT_PASSAGE_TOKENS,
    size: SizeFn = DEFAULT_SIZE,
    window: int = MODEL_WINDOW,
    window_size: SizeFn = model_tokens,
) -> list[Passage]:
    """The passages of ``doc``: its sentence seeds packed per section while they cost ``max_tokens``.

    ``size`` counts a passage's own and context words while packing; a passage whose
    rendering holds more than ``window`` tokens of ``window_size`` (the embedding model's
    tokenizer) is split in two.
    """
    if max_tokens <= 0 or window <= 0:
        raise ValueError("max_tokens and window must be positive")
    section = headings(doc).last
    budget = ContextBudget(doc)
    out: list[Passage] = []
    run: _Run | None = None
    for s in sentences(doc):
        nodes = sentence_indices(doc, *s.span)
        key = section[s.span[0]]
        if run is not None:
            if run.key == key and run.bare and budget.low:
                own = set(nodes)
                grown = run.tokens + _tokens(doc, own, size)
                if grown <= max_tokens:
                    run.members.append((s, nodes))
                    run.closed |= own
                    run.covered |= own
                    run.tokens = grown
                    continue
            elif run.key == key and not run.cut:
                grown_closed = policy.indices(doc, nodes, closed=run.closed)
                new = down_indices(doc, grown_closed - run.closed) - run.covered
                grown = run.tokens + _tokens(doc, new, size)
                if grown <= max_tokens:
                    run.members.append((s, nodes))
                    run.closed = grown_closed
                    run.covered |= new
                    run.tokens = grown
                    continue
            # emitted once complete: no run's sets outlive it
            out.extend(_emit(doc, run.members, run.closed, policy, fmt, window, window_size, budget, run.bare))
        if budget.low:
            own = set(nodes)
            run = _Run(key, [(s, nodes)], set(own), own, _tokens(doc, own, size), True, bare=True)
            continue
        closed, whole = policy.bounded(doc, nodes)
        cut = not whole
        covered = down_indices(doc, closed)
        run = _Run(key, [(s, nodes)], covered, closed, _tokens(doc, covered, size), cut)
    if run is not None:
        out.extend(_emit(doc, run.members, run.closed, policy, fmt, window, window_size, budget, run.bare))
    return out


def _tokens(doc: Document, nodes: set[int], size: SizeFn) -> int:
    words = " ".join(doc.text[i] for i in sorted(nodes) if doc.tag[i] is None)
    return size(words) if words.strip() else 0


def _emit(
    doc: Document,
    members: list[tuple[Sentence, list[int]]],
    closed: set[int] | None,
    policy: Policy,
    fmt: Fmt,
    window: int,
    size: SizeFn,
    budget: ContextBudget,
    bare: bool = False,
) -> list[Passage]:
    """One passage (rendered once), or two halves when the rendering overflows the window.

    ``closed`` is what to render (:attr:`_Run.closed`), None for a half: its members' context
    is then taken afresh, the nearest part of it where it is over the bounds (none at all
    when ``bare``, the run was packed without context, or once the budget is low: a run packed
    with context and split after the budget ran low had each of its halves, down to single
    sentences, rendered with context again).
    """
    nodes = [i for _, m in members for i in m]
    if closed is None:  # (a half of a run begun before the budget ran low: its context only while it lasts)
        closed = set(nodes) if bare or budget.low else policy.nearest(doc, nodes)
    # a policy is a closure under per-node contributions: the closure of the union is the
    # union of the members' closures, which packing already holds
    text, visited = rendered(doc, closed, fmt=fmt)
    if len(members) > 1 and size(text) > window:
        half = len(members) // 2
        return _emit(doc, members[:half], None, policy, fmt, window, size, budget, bare) + _emit(
            doc, members[half:], None, policy, fmt, window, size, budget, bare
        )
    budget.spend(text, visited)
    member_paths = tuple(s.paths for s, _ in members)
    return [
        Passage(
            doc_id=doc.doc_id,
            paths=frozenset().union(*member_paths),
            begin=members[0][0].begin,
            members=member_paths,
            text=text,
            references=references(doc, nodes),
        )
    ]


def encode_members(members: Sequence[frozenset[Path]]) -> str:
    """The member boundaries of a passage, e.g. ``"4,3,5"``: each member's path count.

    Members are consecutive sentences, so in sorted (document) order the union of their
    paths splits into the members at these counts; with the encoded union (``PATHS``) this
    round-trips exactly (:func:`decode_members`).
    """
    return ",".join(str(len(m)) for m in members)


def decode_members(paths: frozenset[Path], text: str) -> tuple[frozenset[Path], ...]:
    """The member path sets of a passage from its union ``paths`` and :func:`encode_members` ``text``.

    Raises :class:`~spire_core.errors.PathFormatError` when the counts do not add up to ``paths``.
    """
    ordered = sorted(paths)
    try:
        counts = [int(c) for c in text.split(",")]
    except ValueError:
        raise PathFormatError(f"not a member list: {text[:80]!r}") from None
    if sum(counts) != len(ordered) or any(c <= 0 for c in counts):
        raise PathFormatError(f"member counts {text[:80]!r} do not split {len(ordered)} paths")
    out: list[frozenset[Path]] = []
    start = 0
    for c in counts:
        out.append(frozenset(ordered[start : start + c]))
        start += c
    return tuple(out)
