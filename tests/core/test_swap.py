"""The page swap's plan (``spire_core.indexing.swap``): its laws, and "old or new, never neither"
checked on a simulated store, one write or delete at a time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spire_core.indexing.swap import Swap, plan_swap

#: unit ids drawn from a small alphabet, so that old and new pages often share some
IDS = st.lists(st.sampled_from([f"u{i}" for i in range(12)]), max_size=10)


def applied(old: list[str], new: list[str], swap: Swap) -> list[dict[str, str]]:
    """The store's units (id -> which page's version) after each step of ``swap``, applied to a
    store holding ``old``'s units in the order :class:`Swap` gives: write ``add`` and
    ``replace`` one unit at a time, then delete ``delete`` one unit at a time."""
    store = dict.fromkeys(old, "old")
    states = [dict(store)]
    for unit in (*swap.add, *swap.replace):
        store[unit] = "new"
        states.append(dict(store))
    for unit in swap.delete:
        del store[unit]
        states.append(dict(store))
    return states


def readable(state: dict[str, str], old: list[str], new: list[str]) -> bool:
    """Whether a reader of ``state`` finds every unit of the old page or every unit of the new one."""
    return set(old) <= state.keys() or all(state.get(unit) == "new" for unit in new)


@given(IDS, IDS)
def test_add_replace_and_delete_partition_both_pages_units(old: list[str], new: list[str]) -> None:
    swap = plan_swap(old, new)
    parts = [set(swap.add), set(swap.replace), set(swap.delete)]
    assert sum(map(len, parts)) == len(set(old) | set(new))  # disjoint ...
    assert set().union(*parts) == set(old) | set(new)  # ... and covering both pages
    assert set(swap.add) | set(swap.replace) == set(new)  # the new page's units are all written
    assert set(swap.replace) == set(old) & set(new)
    assert set(swap.delete) == set(old) - set(new)


@given(IDS, IDS)
def test_nothing_the_new_page_keeps_is_deleted(old: list[str], new: list[str]) -> None:
    assert not set(plan_swap(old, new).delete) & set(new)


@given(IDS, IDS)
def test_orders_follow_the_pages_and_list_each_id_once(old: list[str], new: list[str]) -> None:
    swap = plan_swap(old, new)
    first_new = list(dict.fromkeys(new))
    assert list(swap.add) == [i for i in first_new if i not in old]
    assert list(swap.replace) == [i for i in first_new if i in old]
    assert list(swap.delete) == [i for i in dict.fromkeys(old) if i not in new]


@given(IDS, IDS)
def test_applied_in_order_a_reader_finds_the_old_page_or_the_new_one_at_every_step(
    old: list[str], new: list[str]
) -> None:
    states = applied(old, new, plan_swap(old, new))
    assert all(readable(state, old, new) for state in states)
    assert states[-1] == dict.fromkeys(new, "new")  # in the end: the new page, nothing of the old left


def test_deleting_before_writing_would_leave_a_moment_with_neither_page() -> None:
    old, new = ["a", "b", "c"], ["b", "d"]
    store = dict.fromkeys(old, "old")
    del store["a"]  # an old unit deleted before the new page's units are written
    assert not readable(store, old, new)
    assert plan_swap(old, new) == Swap(add=("d",), replace=("b",), delete=("a", "c"))


def test_a_new_page_only_adds_and_a_removed_page_only_deletes() -> None:
    assert plan_swap([], ["a", "b"]) == Swap(add=("a", "b"), replace=(), delete=())
    assert plan_swap(["a", "b"], []) == Swap(add=(), replace=(), delete=("a", "b"))
    assert plan_swap(["a", "b"], ["b", "a"]) == Swap(add=(), replace=("b", "a"), delete=())
