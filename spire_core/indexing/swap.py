"""Replacing a stored page: which of its units to add, replace in place and delete, planned once.

Both adapters replace a changed page in a live store the same way (LlamaIndex
``spire_llamaindex.index``, LangChain ``spire_langchain.indexing``); only the calls that write
and delete differ. The plan is a pure function of the two pages' unit ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Swap:
    """What replacing a page does to its units, by unit id.

    Applied in this order, a query running at any moment finds the old page's units or the new
    page's, never neither:

    1. write the new page's units: ``add`` (ids the old page lacks) and ``replace`` (ids both
       pages have: the same paths, so each is overwritten in place, never removed);
    2. replace the page itself (its stored source, from which results are rendered);
    3. delete ``delete``: the old page's units the new page does not have.

    Until step 3 every unit of the old page is still there (a replaced one already in its new
    version), and nothing the new page keeps is ever deleted. ``add`` and ``replace`` follow the
    new page's order, ``delete`` the old page's; no id is listed twice.
    """

    add: tuple[str, ...]
    replace: tuple[str, ...]
    delete: tuple[str, ...]


def plan_swap(old_ids: Iterable[str], new_ids: Iterable[str]) -> Swap:
    """The :class:`Swap` replacing a page whose units are ``old_ids`` with one whose units are
    ``new_ids`` (a new page: no ``old_ids``; a removed page: no ``new_ids``)."""
    old = dict.fromkeys(old_ids)
    new = dict.fromkeys(new_ids)
    return Swap(
        add=tuple(i for i in new if i not in old),
        replace=tuple(i for i in new if i in old),
        delete=tuple(i for i in old if i not in new),
    )
