"""Path-set operators of the paper (Section 2.1-2.2): ``up``, ``down``, ``link``, ``prune``, ``subdoc``.

Every public operator takes any iterable of paths and returns a ``frozenset`` of paths (or
a new :class:`Document`). The ``*_indices`` variants work on node indices of one document
and are what the algorithms use internally.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from spire_core.document.tree import Document, Element, Path
from spire_core.errors import PathFormatError

PathSet = frozenset[Path]


def up_indices(doc: Document, nodes: Iterable[int]) -> set[int]:
    """``nodes`` with all their ancestors."""
    out: set[int] = set()
    parent = doc.parent
    for i in nodes:
        while i >= 0 and i not in out:
            out.add(i)
            i = parent[i]
    return out


def down_indices(doc: Document, nodes: Iterable[int]) -> set[int]:
    """``nodes`` with all their descendants."""
    out: set[int] = set()
    reach = -1
    for i in sorted(nodes):
        if i < reach:  # already inside a subtree being added
            continue
        reach = doc.end[i]
        out.update(range(i, reach))
    return out


def link_indices(doc: Document, nodes: Iterable[int]) -> set[int]:
    """Ancestor-descendant closure: ``up`` united with ``down``."""
    return set(link_order(doc, nodes))


def link_order(doc: Document, nodes: Iterable[int]) -> list[int]:
    """:func:`link_indices` in document order, built in one pass over the sorted nodes.

    A node that is not inside the last subtree listed brings its ancestors that are not
    listed yet (exactly those after the last node listed: an ancestor before it encloses it,
    and so is listed already), then its own subtree; both come after everything listed.
    """
    parent, end = doc.parent, doc.end
    out: list[int] = []
    last = -1  # the last node listed
    for i in sorted(nodes):
        if i <= last:  # inside the last subtree listed
            continue
        a = parent[i]
        if a > last:  # (most often, the parent is listed: no chain to build)
            chain = [a]
            while (a := parent[a]) > last:
                chain.append(a)
            out.extend(reversed(chain))
        e = end[i]
        if e == i + 1:
            out.append(i)
        else:
            out.extend(range(i, e))
        last = e - 1
    return out


def up(doc: Document, paths: Iterable[Path]) -> PathSet:
    """Ancestor completion ``Up(D, P)``: ``P`` with every ancestor of its paths."""
    return doc.to_paths(up_indices(doc, doc.indices(paths)))


def down(doc: Document, paths: Iterable[Path]) -> PathSet:
    """Descendant completion ``Down(D, P)``: ``P`` with every descendant of its paths."""
    return doc.to_paths(down_indices(doc, doc.indices(paths)))


def link(doc: Document, paths: Iterable[Path]) -> PathSet:
    """``Link(D, P) = Up(D, P) ∪ Down(D, P)``."""
    return doc.to_paths(link_indices(doc, doc.indices(paths)))


def prune_indices(doc: Document, keep: set[int]) -> Document:
    """``Prune`` on indices: keep exactly the nodes reachable from the root through ``keep``."""
    root: Element | None = None
    if len(doc) and 0 in keep:
        root = Element(doc.tag[0] or "", doc.attrs[0])
        stack: list[tuple[int, Element]] = [(0, root)]
        while stack:
            i, e = stack.pop()
            for c in doc.children[i]:
                if c not in keep:
                    continue
                tag = doc.tag[c]
                if tag is None:
                    e.children.append(doc.text[c])
                else:
                    ce = Element(tag, doc.attrs[c])
                    e.children.append(ce)
                    stack.append((c, ce))
    return Document(
        root, doc_id=doc.doc_id, encoding=doc.encoding, replaced=doc.decode_errors, warnings=(), language=doc.language
    )


def prune(doc: Document, paths: Iterable[Path]) -> Document:
    """``Prune(D, P)`` (Definition 1): keep exactly the nodes whose paths are in ``P``.

    A node is reached only through kept ancestors; a path whose ancestor is missing is cut
    off (Example 2.4). Pruning away the root gives an empty document (``len(doc) == 0``).
    """
    return prune_indices(doc, doc.indices(paths))


def subdoc(doc: Document, paths: Iterable[Path]) -> Document:
    """``Subdoc(D, P) = Prune(D, Link(D, P))`` (Definition 2)."""
    return prune_indices(doc, link_indices(doc, doc.indices(paths)))


# -- compact string form ---------------------------------------------------------------
ROOT_TOKEN = "~"
#: Between the paths of an encoded set: a character no POSIX shell treats specially, so a citation
#: id (``doc_id#paths``) pastes unquoted.
PATH_SEPARATOR = ","
#: The separator of schema version 1 (``"0.2.1;0.2.3"``), still read.
LEGACY_PATH_SEPARATOR = ";"
#: A child index has at most 18 digits (a page cannot have more children; int() of a longer run
#: of digits may even exceed Python's int-conversion limit).
_PATH_TEXT = re.compile(r"[0-9]{1,18}(?:\.[0-9]{1,18})*")


def encode_paths(paths: Iterable[Path]) -> str:
    """Encode a path set as a compact string, e.g. ``"0.2.1,0.2.3"`` (root is ``"~"``, empty set ``""``)."""
    return PATH_SEPARATOR.join(map(_path_text, sorted(_unique(paths))))


def encode_path_sets(sets: Iterable[Iterable[Path]]) -> list[str]:
    """:func:`encode_paths` of each of ``sets``, for sets whose paths are mostly the first's, such
    as a result's context, its seeds and its citations (40% of the time of one by one): the first
    set's paths are sorted and formatted once, and a set within it is its paths' ranks, sorted."""
    rest = iter(sets)
    first = next(rest, None)
    if first is None:
        return []
    order = sorted(_unique(first))
    texts = [_path_text(p) for p in order]
    rank = {p: k for k, p in enumerate(order)}.__getitem__
    out = [PATH_SEPARATOR.join(texts)]
    for paths in rest:
        unique = _unique(paths)
        try:
            out.append(PATH_SEPARATOR.join([texts[k] for k in sorted(map(rank, unique))]))
        except KeyError:  # a path the first set does not hold
            out.append(encode_paths(unique))
    return out


def _unique(paths: Iterable[Path]) -> frozenset[Path] | set[Path]:
    return paths if isinstance(paths, frozenset) else set(map(tuple, paths))


#: The text of each child index below 1024, made once: a query encodes its citations' path sets
#: (their keys), and formatting a path's integers anew cost twice as much as looking them up.
_INDEX_TEXT = {i: str(i) for i in range(1024)}


def _path_text(path: Path) -> str:
    try:
        return ".".join(map(_INDEX_TEXT.__getitem__, path)) or ROOT_TOKEN
    except KeyError:  # an index of 1024 or more
        return ".".join(map(str, path)) or ROOT_TOKEN


def decode_paths(text: str) -> PathSet:
    """Inverse of :func:`encode_paths` (also reads schema version 1's ``;``-separated sets); raises
    :class:`PathFormatError` on malformed input."""
    if not text:
        return frozenset()
    out: set[Path] = set()
    for part in text.replace(LEGACY_PATH_SEPARATOR, PATH_SEPARATOR).split(PATH_SEPARATOR):
        if part == ROOT_TOKEN:
            out.add(())
            continue
        if not _PATH_TEXT.fullmatch(part):  # ASCII digits only: int() would also take " 1", "+1", "1_0"
            raise PathFormatError(f"not a path: {part[:40]!r} in {text[:80]!r}")
        out.add(tuple(map(int, part.split("."))))
    return frozenset(out)


#: Encoded path sets :func:`decoded_paths` keeps per process (least recently used forgotten).
DECODED_MEMO_SIZE = 8192


@lru_cache(maxsize=DECODED_MEMO_SIZE)
def decoded_paths(text: str) -> PathSet:
    """:func:`decode_paths`, memoized: a search returns the same units query after query, and
    decoding one costs more than the rest of its hit's handling (the set is immutable, so one
    decoded set serves every hit on the unit)."""
    return decode_paths(text)
