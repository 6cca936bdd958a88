"""Global contextualization policies (Section 2.3); local context is :mod:`spire_core.query.local`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from spire_core.context.headers import HeadersRule
from spire_core.context.lists import ListsRule
from spire_core.context.policy import NONE, Policy, Rule, compose
from spire_core.context.tables import TablesRule
from spire_core.context.title import TitleRule

if TYPE_CHECKING:
    from spire_core.document.tree import Document, Path

TITLE = Policy([TitleRule()], "title")
HEADERS = Policy([HeadersRule()], "headers")
LISTS = Policy([ListsRule()], "lists")
TABLES = Policy([TablesRule()], "tables")
#: The HTML-aware policy (Definition 5): the union of the four rules.
HTML = compose(TITLE, HEADERS, LISTS, TABLES)


_BUILT_IN = {p.name: p for p in (HTML, NONE, TITLE, HEADERS, LISTS, TABLES)}


def policy_named(name: str) -> Policy:
    """The built-in policy whose :attr:`Policy.name` is ``name`` (``"title|headers"``: their union).

    This is how a policy is serialized; a policy with rules of your own has no name to
    read back. Raises ``ValueError`` for other names.
    """
    if name in _BUILT_IN:
        return _BUILT_IN[name]
    parts = name.split("|")
    if not all(p in _BUILT_IN for p in parts):
        raise ValueError(f"unknown policy {name!r}: the built-in rules are title, headers, lists and tables (or none)")
    return compose(*(_BUILT_IN[p] for p in parts))


def global_context(doc: Document, paths: Iterable[Path], policy: Policy = HTML) -> frozenset[Path]:
    """``GlobalCtx_policy(D, P)``: ``P`` with the paths that make it intelligible."""
    return policy(doc, paths)


__all__ = [
    "HEADERS",
    "HTML",
    "LISTS",
    "NONE",
    "TABLES",
    "TITLE",
    "Policy",
    "Rule",
    "compose",
    "global_context",
    "policy_named",
]
