"""Passage hits at query time: a vector search ranks passages, and :func:`expand` turns each
passage hit back into its member sentences' hits (each inherits its passage's score), which
:func:`~spire_core.query.aggregate.aggregate` merges per page, so every citation is still a
sentence's path set into the source page (:mod:`spire_core.indexing.passages` makes the passages).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from spire_core.document.tree import LRU, Document, Memo, Path
from spire_core.errors import UnknownPathError
from spire_core.query.aggregate import INDICES_MEMO_SIZE
from spire_core.reading.language import CJK_RUN, script_words
from spire_core.values import Documents, Hit, Search

#: How the members of one passage hit are ordered: by document order, or by how many of
#: the question's words each holds (ties in document order).
MemberOrder = Literal["document", "overlap"]
MEMBER_ORDERS: tuple[MemberOrder, ...] = ("document", "overlap")

#: The words of member sentences (``order="overlap"``), memoised per page: units recur query after query.
MEMBER_WORDS: Memo[LRU[frozenset[Path], set[str]]] = Memo(lambda doc: LRU(INDICES_MEMO_SIZE))


@dataclass(frozen=True)
class PassageHit:
    """One ranked passage from a vector search: its page, its member seeds and its similarity."""

    doc_id: str
    members: tuple[frozenset[Path], ...]
    score: float


_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    """The words of ``text`` that count for overlap: three letters or more, a run of Han, kana or
    Hangul characters as its character bigrams (:func:`~spire_core.reading.language.script_words`)."""
    return {w for w in script_words(_WORD.findall(text.lower())) if len(w) > 2 or CJK_RUN.match(w)}


def _own_text(doc: Document, paths: frozenset[Path]) -> str:
    return " ".join(doc.text[i] for i in sorted(doc.indices(paths)) if doc.tag[i] is None)


def expand(
    hits: Sequence[PassageHit],
    *,
    query: str | None = None,
    documents: Documents | None = None,
    order: MemberOrder = "document",
    limit: int | None = None,
) -> list[Hit]:
    """Sentence hits from ranked passage hits: members inherit their passage's score and rank.

    With ``limit``, only as many whole passages, best first, as it takes to reach ``limit``
    sentence hits are expanded (what :func:`~spire_core.query.aggregate` asks of a search for
    its top ``limit``): aggregation's work then grows with the budget it fills, not with
    the passages searched, and its growing prefix stays a prefix.

    With ``order="overlap"`` (which needs ``query`` and ``documents``) the members of each
    passage come ordered by how many of the query's words (three letters or more) they
    hold, so a budget that admits only part of a passage admits its best sentences first.
    A member listed by several hits keeps its first (best) place.
    """
    if order not in MEMBER_ORDERS:
        raise ValueError(f"order must be one of {MEMBER_ORDERS}, not {order!r}")
    terms: set[str] = set()
    get: Callable[[str], Document] | None = None
    if order == "overlap":
        if query is None or documents is None:
            raise ValueError('order="overlap" needs the query and the documents')
        terms = _words(query)
        get = documents if callable(documents) else documents.__getitem__
    out: list[Hit] = []
    seen: set[tuple[str, frozenset[Path]]] = set()
    for hit in hits:
        if limit is not None and len(out) >= limit:
            break
        members = list(hit.members)
        if get is not None and terms:
            doc = get(hit.doc_id)
            words = MEMBER_WORDS(doc)
            overlap: dict[frozenset[Path], int] = {}
            try:
                for m in members:
                    found = words.get(m)
                    if found is None:
                        found = words[m] = _words(_own_text(doc, m))
                    overlap[m] = len(terms & found)
            except UnknownPathError:  # an index out of date with its page: aggregate skips (and logs) it
                overlap = dict.fromkeys(members, 0)
            members.sort(key=lambda m: -overlap[m])  # stable: document order among ties
        for m in members:
            if (hit.doc_id, m) not in seen:
                seen.add((hit.doc_id, m))
                out.append(Hit(hit.doc_id, m, hit.score))
    return out


def sentence_search(
    search: Callable[[int], Sequence[PassageHit]],
    *,
    query: str | None = None,
    documents: Documents | None = None,
    order: MemberOrder = "document",
) -> Search:
    """A sentence :data:`~spire_core.aggregate.Search` over a passage search ``n -> top-n passages``.

    Asked for ``k`` sentence hits, it asks ``search`` for a growing prefix of passages
    (:data:`FIRST_PASSAGES`, doubled, at most ``k``) until their members reach ``k`` sentences,
    then expands them with ``limit=k`` (:func:`expand`): the same hits as expanding the top
    ``k`` passages, while a round reads only the passages it uses (over the 140 bench pages,
    a question's rounds read 10 passages in the median, 57 at most, of up to 256 asked).
    """

    def run(k: int) -> list[Hit]:
        n = min(k, FIRST_PASSAGES)
        found = search(n)
        while n < k and not _reaches(found, k):
            n = min(k, 2 * n)
            found = search(n)
        return expand(found, query=query, documents=documents, order=order, limit=k)

    return run


#: the passages :func:`sentence_search` asks for first in a round
FIRST_PASSAGES = 8


def _reaches(hits: Sequence[PassageHit], k: int) -> bool:
    """Whether :func:`expand` makes at least ``k`` distinct sentence hits of ``hits``."""
    if sum(len(h.members) for h in hits) < k:
        return False
    return len({(h.doc_id, m) for h in hits for m in h.members}) >= k
