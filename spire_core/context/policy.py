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

from collections.abc import Callable, Iterable, Set
from typing import TYPE_CHECKING

from ..document import Memo

if TYPE_CHECKING:
    from ..document import Document, Path

#: A rule's memo of contributions, node -> contributed nodes (see :func:`inherited`).
Contributions = Memo[dict[int, tuple[int, ...]]]

#: Per page: policy -> node -> what all its rules contribute (one lookup per node in a closure).
_CONTRIBUTED: Memo[dict[Policy, dict[int, tuple[int, ...]]]] = Memo(lambda doc: {})


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
        """Nodes that make ``node`` intelligible (default: none).

        Asked once per node of a page: policies remember the answer for as long as the
        page lives, so it must depend on ``doc`` and ``node`` alone.
        """
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
            for rule in self.rules:
                for j in rule.constant(doc):
                    if j not in out:
                        out.add(j)
                        work.append(j)
        rules = self.rules
        by_policy = _CONTRIBUTED(doc)
        memo = by_policy.get(self)
        if memo is None:
            memo = by_policy[self] = {}
        while work:
            i = work.pop()
            found = memo.get(i)
            if found is None:
                found = memo[i] = tuple(j for rule in rules for j in rule.contribute(doc, i))
            for j in found:
                if j not in out:
                    out.add(j)
                    work.append(j)
        return out


def inherited(
    doc: Document,
    node: int,
    memo_slot: Contributions,
    special: frozenset[str],
    compute: Callable[[Document, int], tuple[int, ...]],
) -> tuple[int, ...]:
    """Memoised contribution for rules where a node whose tag is not in ``special`` contributes what its parent does.

    ``memo_slot`` is the rule's own :class:`~spire_core.document.Memo` (node -> contribution);
    ``compute(doc, i)`` gives the contribution of a ``special`` node.
    """
    memo = memo_slot(doc)
    chain: list[int] = []
    i = node
    tags, parents = doc.tag, doc.parent
    while True:
        if i < 0:
            value: tuple[int, ...] = ()
            break
        known = memo.get(i)
        if known is not None:
            value = known
            break
        if tags[i] in special:
            value = memo[i] = compute(doc, i)
            break
        chain.append(i)
        i = parents[i]
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
