"""Global-contextualization policies as composable values.

A :class:`Rule` says, for one node, which nodes make it intelligible (``contribute``), plus
nodes that always belong (``constant``, e.g. the title). A :class:`Policy` closes a path set
under the contributions of its rules with a work list::

    closure(P) = the least Q ⊇ P ∪ constants with contribute(i) ⊆ Q for every i in Q

Such a closure is extensive, monotone and idempotent by construction, for every rule and
for any union of rules (``compose`` or ``|``): Definition 3 holds without relying on each
rule's own care. Users extend SPIRE by subclassing :class:`Rule`.

A policy asks each rule once per page for every node's contributions (``contributions``, a
table by node index) and keeps their join for as long as the page lives: a closure is then
one table lookup per node it reaches.

What a rule contributes for a node (and the constants) is bounded in size (:func:`_bounded`):
a context repeats its labels for every unit they label, so one 100 KB header cell, title or
list label would otherwise be rendered again for each of them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence, Set
from typing import TYPE_CHECKING

from spire_core.document.tree import Memo

if TYPE_CHECKING:
    from spire_core.document.tree import Document, Path

#: Every node's contributions, by node index (what :meth:`Rule.contributions` returns).
Table = Sequence[tuple[int, ...]]

#: Per page: policy -> node -> what all its rules contribute (one lookup per node in a closure).
_CONTRIBUTED: Memo[dict[Policy, Table]] = Memo(lambda doc: {})
#: Per page: policy -> what its rules add to every selection.
_CONSTANTS: Memo[dict[Policy, tuple[int, ...]]] = Memo(lambda doc: {})

#: What a rule contributes for one node holds at most this many characters of text and
#: :data:`MAX_LABEL_NODES` nodes: the label crossing a bound is contributed by its head
#: (:func:`label_head`), those after it not at all. The bench pages' largest contribution is a
#: table's row-label cell of 1,955 characters in 1,073 nodes.
MAX_LABEL_CHARS = 2048
MAX_LABEL_NODES = 2048
#: What an index embeds for one unit holds at most this much context (:meth:`Policy.nearest`):
#: room for two whole labels, four times the bench pages' largest context (1,042 characters,
#: 742 nodes), while the model reads 256 tokens. Each contribution is bounded, but a page that
#: fills every bound at once (a title, 6 headings and 16 nested list labels of 2,000 characters)
#: gives every unit 46 KB of context.
MAX_CONTEXT_CHARS = 2 * MAX_LABEL_CHARS
MAX_CONTEXT_NODES = 2 * MAX_LABEL_NODES
#: A closure reads an entry longer than this once, however many of its nodes it reaches: the
#: nodes of one label share its entry, and a label of many nodes then cost a closure their
#: number times the entry's length.
_SHORT = 8
#: Per page: contributed node -> the characters of text under it (:func:`_chars`).
_CHARS: Memo[dict[int, int]] = Memo(lambda doc: {})


class Rule:
    """One global-context rule. Override ``contribute`` and/or ``constant``."""

    name = "rule"

    def constant(self, doc: Document) -> Iterable[int]:
        """Nodes added whatever the selection (default: none); asked once per page, as ``contribute``."""
        return ()

    def contribute(self, doc: Document, node: int) -> Iterable[int]:
        """Nodes that make ``node`` intelligible (default: none).

        Asked once per node of a page (through :meth:`contributions`): policies remember the
        answers for as long as the page lives, so they must depend on ``doc`` and ``node`` alone.
        """
        return ()

    def contributions(self, doc: Document) -> Table:
        """Every node's :meth:`contribute`, by node index: what a policy asks, once per page.

        Override it with one pass over the page where that is faster (the built-in rules do,
        as :class:`PageRule`, and answer :meth:`contribute` from it).
        """
        if type(self).contribute is Rule.contribute:  # a rule of constants alone
            return [()] * len(doc)
        return [tuple(self.contribute(doc, i)) for i in range(len(doc))]


class PageRule(Rule):
    """A rule whose contributions are computed for a whole page at once: ``per_page(doc)`` is
    the table (a per-document :class:`~spire_core.document.Memo`), and ``contribute`` reads it."""

    per_page: Memo[Table]

    def contribute(self, doc: Document, node: int) -> Iterable[int]:
        return self.per_page(doc)[node]

    def contributions(self, doc: Document) -> Table:
        return self.per_page(doc)


class Policy:
    """A set of rules applied together; call it as ``policy(doc, P)``."""

    def __init__(self, rules: Iterable[Rule], name: str | None = None) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.name = name or "|".join(r.name for r in self.rules) or "none"

    def __repr__(self) -> str:
        return f"Policy({self.name})"

    def __or__(self, other: Policy) -> Policy:
        return compose(self, other)

    def __call__(self, doc: Document, paths: Iterable[Path]) -> frozenset[Path]:
        return doc.to_paths(self.indices(doc, doc.indices(paths)))

    def indices(self, doc: Document, nodes: Iterable[int], *, closed: Set[int] | None = None) -> set[int]:
        """The closure on node indices (what the algorithms call).

        ``closed``, when given, is a set already closed under this policy (an earlier
        result): the closure of its union with ``nodes`` is computed without expanding its
        nodes again, which is how a growing selection is closed step by step.
        """
        if closed is not None:
            out = set(closed)
            work = [i for i in nodes if i not in out]
            out.update(work)
        else:
            out = set(nodes)
            work = list(out)
            for j in self.constants(doc):
                if j not in out:
                    out.add(j)
                    work.append(j)
        table = self.table(doc)
        read: set[int] = set()  # ids of the long entries read (the nodes under one label share its entry)
        while work:
            entry = table[work.pop()]
            if len(entry) > _SHORT:
                if id(entry) not in read:
                    read.add(id(entry))
                    new = _nodes(doc, entry)[0] - out
                    out |= new
                    work.extend(new)
                continue
            for j in entry:
                if j not in out:
                    out.add(j)
                    work.append(j)
        return out

    def nearest(
        self, doc: Document, nodes: Iterable[int], chars: int = MAX_CONTEXT_CHARS, count: int = MAX_CONTEXT_NODES
    ) -> set[int]:
        """``nodes`` with what their closure reaches nearest first (breadth-first, the constants
        in the first step) while the subtrees added hold at most ``chars`` characters of text
        and ``count`` nodes: one that does not fit is left out, with what it alone would reach.

        The closure (:meth:`indices`) when it all fits. Not a closure otherwise: it is what an
        index embeds for a unit whose whole context outgrows what the model reads.
        """
        return self.bounded(doc, nodes, chars, count)[0]

    def bounded(
        self, doc: Document, nodes: Iterable[int], chars: int = MAX_CONTEXT_CHARS, count: int = MAX_CONTEXT_NODES
    ) -> tuple[set[int], bool]:
        """:meth:`nearest`, and whether it is the whole closure (nothing was left out)."""
        out = set(nodes)
        queue = deque(out)
        table, end, sizes = self.table(doc), doc.end, _CHARS(doc)  # (sizes: _chars's memo, read inline)
        read: set[int] = set()  # as in indices
        whole = True
        entry: Sequence[int] = self.constants(doc)
        while True:
            if len(entry) > _SHORT:  # a label's nodes: what is new of them taken at once when it all fits
                nodes_of, at, total, span = _nodes(doc, entry)
                new = nodes_of - out
                if len(new) < len(at):
                    total = sum(_chars(doc, j) for j in new)
                    span = sum(end[j] - j for j in new)
                if total <= chars and span <= count:
                    chars, count = chars - total, count - span
                    out |= new
                    queue.extend(entry if len(new) == len(at) else sorted(new, key=at.__getitem__))
                    entry = ()
            for j in entry:
                if j not in out:
                    size = sizes.get(j)
                    if size is None:
                        size = _chars(doc, j)
                    if size <= chars and end[j] - j <= count:
                        chars, count = chars - size, count - (end[j] - j)
                        out.add(j)
                        queue.append(j)
                    else:
                        whole = False
            if not queue:
                return out, whole
            entry = table[queue.popleft()]
            if len(entry) > _SHORT:
                if id(entry) in read:
                    entry = ()
                else:
                    read.add(id(entry))

    def constants(self, doc: Document) -> tuple[int, ...]:
        """What the rules add whatever the selection: asked once per page and policy."""
        by_policy = _CONSTANTS(doc)
        got = by_policy.get(self)
        if got is None:
            got = by_policy[self] = _bounded(doc, tuple(j for rule in self.rules for j in rule.constant(doc)))
        return got

    def table(self, doc: Document) -> Table:
        """What all the rules contribute, by node index: computed once per page and policy."""
        by_policy = _CONTRIBUTED(doc)
        table = by_policy.get(self)
        if table is None:
            tables = [_bounded_table(doc, rule.contributions(doc)) for rule in self.rules]
            table = tables[0] if tables else [()] * len(doc)
            for more in tables[1:]:
                table = _joined(table, more)
            by_policy[self] = table
        return table


def _joined(table: Table, more: Table) -> Table:
    """Each node's entries of ``table`` and ``more`` together; a run of nodes sharing both shares the join."""
    if not any(more):  # (a rule that contributes nothing on this page: most rules on most pages)
        return table
    if not any(table):
        return more
    out: list[tuple[int, ...]] = []
    last_a: tuple[int, ...] | None = None
    last_b: tuple[int, ...] | None = None
    last: tuple[int, ...] = ()
    for a, b in zip(table, more, strict=True):
        if a is not last_a or b is not last_b:
            last_a, last_b, last = a, b, (a + b if b else a)
        out.append(last)
    return out


#: Per page: a long entry -> its nodes (as a set, and each with its first place in it), and the characters
#: and nodes of their subtrees (:func:`_nodes`).
_NODES: Memo[dict[Sequence[int], tuple[frozenset[int], dict[int, int], int, int]]] = Memo(lambda doc: {})


def _nodes(doc: Document, entry: Sequence[int]) -> tuple[frozenset[int], dict[int, int], int, int]:
    """``entry``'s distinct nodes, each with its first place in it, and what
    :meth:`Policy.bounded` charges for them all (the characters of text and the nodes of each
    one's subtree), remembered per page: a closure takes what is new of a long entry at once."""
    memo = _NODES(doc)
    got = memo.get(entry)
    if got is None:
        at: dict[int, int] = {}
        for n, j in enumerate(entry):
            at.setdefault(j, n)
        end = doc.end
        got = memo[entry] = (frozenset(at), at, sum(_chars(doc, j) for j in at), sum(end[j] - j for j in at))
    return got


def label_head(doc: Document, node: int, chars: int = MAX_LABEL_CHARS, nodes: int = MAX_LABEL_NODES) -> tuple[int, ...]:
    """The head of the subtree at ``node`` within ``chars`` characters of text and ``nodes``
    nodes: the whole subtrees at its start (outermost first) that together stay within both,
    empty when its first text alone is longer (or ``node`` is a longer text node). ``node``
    itself is left out (it would bring its whole subtree): rendering keeps it as their ancestor."""
    tags, texts, end = doc.tag, doc.text, doc.end
    if tags[node] is None:
        return ()
    stop = min(end[node], node + 1 + nodes)
    k, used = node + 1, 0
    while k < stop:
        if tags[k] is None:
            used += len(texts[k])
            if used > chars:
                break
        k += 1
    return subtrees_before(doc, node, k)


def subtrees_before(doc: Document, node: int, stop: int) -> tuple[int, ...]:
    """The whole subtrees inside ``node`` that end by node index ``stop``, outermost first."""
    end = doc.end
    out: list[int] = []
    i = node + 1
    while i < stop:
        if end[i] <= stop:
            out.append(i)
            i = end[i]
        else:
            i += 1
    return tuple(out)


def _chars(doc: Document, node: int) -> int:
    """The characters of text in the subtree at ``node``: the count stops once past
    :data:`MAX_LABEL_CHARS` or after :data:`MAX_LABEL_NODES` nodes (either is over the bounds)."""
    sizes = _CHARS(doc)
    got = sizes.get(node)
    if got is None:
        tags, texts = doc.tag, doc.text
        got = 0
        for i in range(node, min(doc.end[node], node + 1 + MAX_LABEL_NODES)):
            if tags[i] is None:
                got += len(texts[i])
                if got > MAX_LABEL_CHARS:
                    break
        sizes[node] = got
    return got


def _bounded(doc: Document, entry: tuple[int, ...]) -> tuple[int, ...]:
    """``entry`` (contributed nodes, the most telling first) within :data:`MAX_LABEL_CHARS` and
    :data:`MAX_LABEL_NODES` in all: the nodes that fit, then the :func:`label_head` of the next
    within what is left (``entry`` itself when it all fits)."""
    chars, nodes, end = MAX_LABEL_CHARS, MAX_LABEL_NODES, doc.end
    for n, j in enumerate(entry):
        size = _chars(doc, j)
        if size > chars or end[j] - j > nodes:
            return (*entry[:n], *label_head(doc, j, chars, nodes))
        chars -= size
        nodes -= end[j] - j
    return entry


def _bounded_table(doc: Document, table: Table) -> Table:
    """``table`` with every entry :func:`_bounded` (``table`` itself when every entry fits)."""
    over: dict[tuple[int, ...], tuple[int, ...] | None] = {}  # entry -> bounded, None if it fits
    out: list[tuple[int, ...]] | None = None
    last: tuple[int, ...] | None = None
    for n, entry in enumerate(table):  # entries are shared by runs of nodes: each run is read once
        if entry is last:
            if out is not None:
                out.append(out[-1])
            continue
        last = entry
        if entry in over:
            got = over[entry]
        else:  # (equal entries recur: a dd's terms, a heading's chain)
            bounded = _bounded(doc, entry)
            got = over[entry] = None if bounded is entry else bounded
        if got is not None and out is None:
            out = list(table[:n])
        if out is not None:
            out.append(entry if got is None else got)
    return table if out is None else out


def inherited(doc: Document, special: frozenset[str], compute: Callable[[Document, int], tuple[int, ...]]) -> Table:
    """A contributions table where a node whose tag is in ``special`` contributes ``compute(doc, i)``
    and any other node what its parent does (the root's parent contributes nothing).

    One pass in document order, where a parent always comes before its children.
    """
    tags, parents = doc.tag, doc.parent
    out: list[tuple[int, ...]] = []
    for i, tag in enumerate(tags):
        if tag in special:
            out.append(compute(doc, i))
        else:
            p = parents[i]
            out.append(out[p] if p >= 0 else ())
    return out


def compose(*policies: Policy | Rule) -> Policy:
    """The union of policies (and bare rules): one closure under all their rules."""
    rules: list[Rule] = []
    for p in policies:
        for r in p.rules if isinstance(p, Policy) else (p,):
            if r not in rules:
                rules.append(r)
    return Policy(rules)


#: The empty policy: ``global_context`` returns ``P`` unchanged (the ``spire-noctx`` ablation).
NONE = Policy(())
