"""Global contextualization policies (Section 2.3); local context is :mod:`spire_core.query.local`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from spire_core.context.box_titles import BoxTitleRule
from spire_core.context.definitions import DefinitionsRule
from spire_core.context.headers import HeadersRule
from spire_core.context.lead_ins import ListLeadInRule
from spire_core.context.lists import ListsRule
from spire_core.context.policy import NONE, Policy, Rule, compose
from spire_core.context.table_titles import EmptyHeaderRowRule, TableTitleRule
from spire_core.context.tables import TablesRule
from spire_core.context.term_blocks import TermBlockRule
from spire_core.context.title import TitleRule

if TYPE_CHECKING:
    from spire_core.document.tree import Document, Path

TITLE = Policy([TitleRule()], "title")
HEADERS = Policy([HeadersRule()], "headers")
LISTS = Policy([ListsRule()], "lists")
TABLES = Policy([TablesRule()], "tables")
#: Idioms that stand for a caption, a ``dt``/``dd`` pair or a header row without their elements
#: (Section 2.3.6: the policy extends to other document idioms); hidden headings are read as
#: headings by the parser (:func:`spire_core.reading.parse._kept_hidden`).
TABLE_TITLES = Policy([TableTitleRule()], "table-titles")
EMPTY_HEADER_ROWS = Policy([EmptyHeaderRowRule()], "empty-header-rows")
LEAD_INS = Policy([ListLeadInRule()], "lead-ins")
TERM_BLOCKS = Policy([TermBlockRule()], "term-blocks")
BOX_TITLES = Policy([BoxTitleRule()], "box-titles")
#: The idiom rules together.
IDIOMS = compose(TABLE_TITLES, EMPTY_HEADER_ROWS, LEAD_INS, TERM_BLOCKS, BOX_TITLES)
#: The HTML-aware policy (Definition 5): the union of the four rules of the paper and the idiom rules.
HTML = compose(TITLE, HEADERS, LISTS, TABLES, IDIOMS)
#: The glossary-aware policy (Section 2.3.6): a mention of a term defined on the page brings its
#: definition (:mod:`spire_core.context.definitions`); ``HTML | DEFINITIONS`` adds it to the default.
DEFINITIONS = Policy([DefinitionsRule()], "definitions")


_BUILT_IN = {
    p.name: p
    for p in (
        HTML,
        NONE,
        TITLE,
        HEADERS,
        LISTS,
        TABLES,
        TABLE_TITLES,
        EMPTY_HEADER_ROWS,
        LEAD_INS,
        TERM_BLOCKS,
        BOX_TITLES,
        DEFINITIONS,
    )
}


def policy_named(name: str) -> Policy:
    """The built-in policy whose :attr:`Policy.name` is ``name`` (``"title|headers"``: their union).

    This is how a policy is serialized; a policy with rules of your own has no name to
    read back. Raises ``ValueError`` for other names.
    """
    if name in _BUILT_IN:
        return _BUILT_IN[name]
    parts = name.split("|")
    if not all(p in _BUILT_IN for p in parts):
        raise ValueError(
            f"unknown policy {name!r}: the built-in rules are {', '.join(n for n in _BUILT_IN if '|' not in n)}"
        )
    return compose(*(_BUILT_IN[p] for p in parts))


def global_context(doc: Document, paths: Iterable[Path], policy: Policy = HTML) -> frozenset[Path]:
    """``GlobalCtx_policy(D, P)``: ``P`` with the paths that make it intelligible."""
    return policy(doc, paths)


__all__ = [
    "BOX_TITLES",
    "DEFINITIONS",
    "EMPTY_HEADER_ROWS",
    "HEADERS",
    "HTML",
    "IDIOMS",
    "LEAD_INS",
    "LISTS",
    "NONE",
    "TABLES",
    "TABLE_TITLES",
    "TERM_BLOCKS",
    "TITLE",
    "Policy",
    "Rule",
    "compose",
    "global_context",
    "policy_named",
]
