"""Global-contextualization policies as composable values.

A :class:`Rule` says, for one node, which nodes make it intelligible (``contribute``), plus
nodes that always belong (``constant``, e.g. the title). A :class:`Policy` closes a path set
under the contributions of its rules with a work list::

    closure(P) = the least Q ⊇ P ∪ constants with contribute(i) ⊆ Q for every i in Q

Such a closure is extensive, monotone and idempotent by construction, for every rule and
for any union of rules (``compose`` or ``|``): Definition 3 holds without relying on each
rule's own care. Users extend SPIRE by subclassing :class:`Rule`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..document import Memo

if TYPE_CHECKING:
    from ..document import Document, Path

#: A rule's memo of contributions, node -> contributed nodes (see :func:`inherited`).
Contributions = Memo[dict[int, tuple[int, ...]]]


def contributions() -> Contributions:
    """A fresh, empty per-document memo slot for one rule's :func:`inherited` contributions."""
    return Memo(lambda doc: {})


class Rule:
    """One global-context rule. Override ``contribute`` and/or ``constant``."""

    name = "rule"

    def constant(self, doc: Document) -> Iterable[int]:
        """Nodes added whatever the selection (default: none)."""
        return ()

    def contribute(self, doc: Document, node: int) -> Iterable[int]:
        """Nodes that make ``node`` intelligible (default: none)."""
        return ()


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

    def indices(self, doc: Document, nodes: Iterable[int]) -> set[int]:
        """The closure on node indices (what the algorithms call)."""
        closed = set(nodes)
        work = list(closed)
        for rule in self.rules:
            for j in rule.constant(doc):
                if j not in closed:
                    closed.add(j)
                    work.append(j)
        while work:
            i = work.pop()
            for rule in self.rules:
                for j in rule.contribute(doc, i):
                    if j not in closed:
                        closed.add(j)
                        work.append(j)
        return closed


def inherited(
    doc: Document,
    node: int,
    memo_slot: Contributions,
    special: Callable[[int], bool],
    compute: Callable[[int], tuple[int, ...]],
) -> tuple[int, ...]:
    """Memoised contribution for rules where a node that is not ``special`` contributes what its parent does.

    ``memo_slot`` is the rule's own :class:`~spire_core.document.Memo` (node -> contribution).
    """
    memo = memo_slot(doc)
    chain: list[int] = []
    i = node
    while i not in memo:
        if i < 0:
            value: tuple[int, ...] = ()
            break
        if special(i):
            value = memo[i] = compute(i)
            break
        chain.append(i)
        i = doc.parent[i]
    else:
        value = memo[i]
    for j in chain:
        memo[j] = value
    return value


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
