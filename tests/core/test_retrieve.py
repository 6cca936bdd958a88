"""The query pipeline's tries (:func:`spire_core.pipeline.retrieve`): a page replaced while a query
runs is searched again, so that what it is found for is the page as read."""

from __future__ import annotations

from collections.abc import Sequence

from spire_core import parse_page
from spire_core.errors import UnknownPathError
from spire_core.indexing.units import Seed, seeds
from spire_core.options import QueryOptions
from spire_core.pipeline import StoreHit, StoreSearch, retrieve
from spire_core.query.aggregate import seed_indices
from spire_core.results.schema import seed_metadata

PAGE = "page.html"
OLD = parse_page("<title>T</title><p>Alpha sentence is here.</p><p>Beta line.</p>", doc_id=PAGE)
NEW = parse_page(
    "<title>T</title><h1>Heading</h1><div><p>Gamma sentence is here.</p><p>Delta line.</p></div>", doc_id=PAGE
)


def _holds_in_new(seed: Seed) -> bool:
    try:
        seed_indices(NEW, seed.paths)
    except UnknownPathError:
        return False
    return True


def _hits(units: Sequence[Seed]) -> list[StoreHit]:
    return [StoreHit(seed_metadata(PAGE, s), 1.0 - n / 100) for n, s in enumerate(units)]


def test_a_page_whose_best_hit_is_of_the_replaced_version_is_searched_again() -> None:
    """The store answers the first try from both versions: the old page's best sentence first,
    then an old unit at a path the new page also has (it holds there, with other words). The page
    as read is the new one: the try is not trusted, and the next one finds the new page's units."""
    old_units = seeds(OLD)
    stale = [s for s in old_units if not _holds_in_new(s)]
    held = [s for s in old_units if _holds_in_new(s)]
    assert stale and held  # the shape this test is about
    tries: list[int] = []

    def searches() -> StoreSearch:
        tries.append(len(tries))
        ranking = _hits([*stale, *held]) if len(tries) == 1 else _hits(seeds(NEW))
        return lambda n: ranking[:n]

    found = retrieve("which sentence is here", searches, lambda doc_id, _hash: NEW, QueryOptions(budget=200))
    assert len(tries) == 2
    [result] = found.results
    assert "Gamma sentence is here." in {c.text.rsplit("\n", 1)[-1] for c in result.citations}
    assert not found.report.outranked and not found.report.stale


def test_a_page_whose_best_hit_holds_is_not_searched_again() -> None:
    """A leftover unit of another version ranked below a valid one costs no second try."""
    old_units = seeds(OLD)
    stale = [s for s in old_units if not _holds_in_new(s)]
    tries: list[int] = []

    def searches() -> StoreSearch:
        tries.append(len(tries))
        ranking = _hits([*seeds(NEW), *stale])
        return lambda n: ranking[:n]

    found = retrieve("which sentence is here", searches, lambda doc_id, _hash: NEW, QueryOptions(budget=200))
    assert len(tries) == 1
    assert found.report.stale == {PAGE} and not found.report.outranked
    assert found.results and found.results[0].doc_id == PAGE
