"""References on citations: recorded beside each cited sentence, and followed one hop on request.

Recording is free and safe ("What a Sentence Forgets", remediation 5): each citation carries the
references its own path set makes (:func:`~spire_core.document.links.references`), read from the
page's link table, which is built once per page. Nothing is ranked, rendered or substituted
differently.

Resolving is retrieval (``resolve_refs``, off by default): a :class:`Resolver` follows the
references of each admitted hit one hop into the corpus, as aggregation admits it, and offers
what they name as hits of their own right after it, under the same budget: the *referenced view*
(:func:`referenced_view`) of the target, a definition or a section head, becomes a citation with
its own path set (``Citation.referenced_by``: the key of the citation that makes the reference).
A reference that cannot be resolved (its page is not in the corpus, its anchor is gone) is
reported on the citing citation (``Reference.unresolved``), never guessed at; nothing is ever
substituted into cited text.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import replace

from spire_core.context.definitions import description_of, within
from spire_core.document.links import Reference, anchors, references
from spire_core.document.paths import encode_paths
from spire_core.document.tree import HEADING_LEVELS, INLINE_TAGS, Document
from spire_core.errors import MissingSourceError
from spire_core.query.aggregate import seed_indices
from spire_core.reading.sentences import sentence_index
from spire_core.values import Citation, Hit, Subdocument

#: A referenced view holds whole sentences of at most this many characters of text (the first always).
MAX_VIEW_CHARS = 600
#: References followed from one cited sentence at most, in document order.
MAX_FOLLOWED_PER_CITATION = 3
#: References followed for one query at most, the best-ranked citations' first.
MAX_FOLLOWED = 6
#: Pages looked up for one query at most while following (a page found missing is not looked up again).
MAX_LOOKUPS = 4 * MAX_FOLLOWED
#: A section element's heading is looked for among its first this many nodes.
_HEADING_REACH = 32

#: Why a reference could not be resolved (``Reference.unresolved``).
PAGE_MISSING = "page not in the corpus"
ANCHOR_MISSING = "anchor not on the page"
NOTHING_THERE = "nothing citable there"


def with_references(doc: Document, citations: Sequence[Citation], resolver: Resolver | None = None) -> list[Citation]:
    """``citations`` of page ``doc``, each carrying the references its text makes (with what
    ``resolver`` made of them, when given)."""
    out = []
    for c in citations:
        refs = references(doc, seed_indices(doc, c.paths)[1])
        if resolver is not None:
            refs = resolver.outcomes(c, refs)
        out.append(replace(c, references=refs) if refs != c.references or resolver is not None else c)
    return out


def cite_references(
    results: Sequence[Subdocument], documents: Callable[[str], Document], resolver: Resolver | None = None
) -> list[Subdocument]:
    """``results`` whose citations carry the references their text makes (:func:`with_references`)."""
    if resolver is not None:
        resolver.delivered = {c.key() for sub in results for c in sub.citations}
    out = []
    for sub in results:
        cited = with_references(documents(sub.doc_id), sub.citations, resolver)
        same = all(a is b for a, b in zip(cited, sub.citations, strict=True))
        out.append(sub if same else replace(sub, citations=cited))
    return out


class Resolver:
    """Follows the references of admitted hits one hop (module docstring): ``aggregate(follow=resolver)``.

    ``documents`` is the corpus: a page it does not have (raising :class:`MissingSourceError`,
    ``KeyError`` or ``LookupError``) is reported as not in the corpus.
    """

    def __init__(
        self,
        documents: Callable[[str], Document],
        *,
        per_citation: int = MAX_FOLLOWED_PER_CITATION,
        most: int = MAX_FOLLOWED,
    ) -> None:
        self.documents = documents
        self.per_citation, self.left = per_citation, most
        self.lookups = MAX_LOOKUPS
        #: pages found missing (not looked up again)
        self._missing: set[str] = set()
        #: citing key -> reference -> (the target's key, or None; why it is unresolved, or None)
        self._found: dict[str, dict[Reference, tuple[str | None, str | None]]] = {}
        #: the keys of the citations delivered (set by :func:`cite_references`)
        self.delivered: set[str] = set()
        #: the targets offered so far (a target named again is not offered, nor counted, again)
        self._offered: set[str] = set()

    def __call__(self, hit: Hit) -> list[Hit]:
        """What ``hit``'s references name, as hits to offer right after it (none for a followed hit)."""
        if hit.referenced_by is not None or self.left <= 0 or self.lookups <= 0:
            return []
        doc = self.documents(hit.doc_id)
        key = f"{hit.doc_id}#{encode_paths(hit.paths)}"
        found = self._found.setdefault(key, {})
        out: list[Hit] = []
        for ref in references(doc, seed_indices(doc, hit.paths)[1]):
            if len(out) >= self.per_citation or self.left <= 0 or self.lookups <= 0:
                break
            if ref.external or ref in found:
                continue
            target, reason = self._resolve(ref)
            if target is None:
                found[ref] = (None, reason)
                continue
            page, nodes = target
            if ref.doc_id == hit.doc_id and nodes & seed_indices(doc, hit.paths)[1]:
                continue  # the reference names the citing sentence itself
            paths = page.to_paths(nodes)
            target_key = f"{ref.doc_id}#{encode_paths(paths)}"
            found[ref] = (target_key, None)
            if target_key in self._offered:
                continue
            self._offered.add(target_key)
            out.append(Hit(str(ref.doc_id), paths, hit.score, referenced_by=key))
            self.left -= 1
        return out

    def wants(self, hit: Hit) -> bool:
        """Whether following ``hit``'s references may offer anything (a reference into the corpus, room left)."""
        if hit.referenced_by is not None or self.left <= 0 or self.lookups <= 0:
            return False
        doc = self.documents(hit.doc_id)
        return any(not r.external for r in references(doc, seed_indices(doc, hit.paths)[1]))

    def _resolve(self, ref: Reference) -> tuple[tuple[Document, frozenset[int]] | None, str | None]:
        doc_id = str(ref.doc_id)
        if doc_id in self._missing:
            return None, PAGE_MISSING
        self.lookups -= 1
        try:
            page = self.documents(doc_id)
        except (MissingSourceError, LookupError):
            self._missing.add(doc_id)
            return None, PAGE_MISSING
        if ref.anchor:
            node = anchors(page).get(ref.anchor)
            if node is None:
                return None, ANCHOR_MISSING
        else:
            node = first_heading(page)
        nodes = referenced_view(page, node) if node >= 0 else frozenset()
        return ((page, nodes), None) if nodes else (None, NOTHING_THERE)

    def outcomes(self, citation: Citation, refs: tuple[Reference, ...]) -> tuple[Reference, ...]:
        """``refs`` of ``citation`` with what following them gave: the target's key where it was
        delivered, the reason where it could not be resolved."""
        found = self._found.get(citation.key())
        if not found:
            return refs
        out = []
        for ref in refs:
            target, reason = found.get(ref, (None, None))
            if reason is not None:
                ref = replace(ref, unresolved=reason)
            elif target is not None and target in self.delivered:
                ref = replace(ref, cited=target)
            out.append(ref)
        return tuple(out)


def first_heading(doc: Document) -> int:
    """The page's first heading with text (-1: none): what a link to the page as a whole names."""
    for i, tag in enumerate(doc.tag):
        if tag in HEADING_LEVELS and doc.subtree_text(i).strip():
            return i
    return -1


def referenced_view(doc: Document, target: int) -> frozenset[int]:
    """The sentences a reference to ``target`` names, at most :data:`MAX_VIEW_CHARS` of text (the
    first always): a term and its description's first block (a ``dt``), a ``dfn``'s sentence and
    those after it in its block, a section's heading and its first block (a heading, or an element
    that opens with one), else the target's block from the target on; empty when none holds text."""
    dt = within(doc, target, frozenset({"dt"}))
    if dt >= 0:
        term = _run(doc, dt, doc.end[dt])
        dd = description_of(doc, dt)
        used = _chars(doc, term)
        rest = _run(doc, dd + 1, doc.end[dd], MAX_VIEW_CHARS - used) if dd >= 0 and term else []
        return frozenset(term + rest)
    dfn = within(doc, target, frozenset({"dfn"}))
    if dfn >= 0:
        return frozenset(_run(doc, dfn, doc.end[_block(doc, dfn)]))
    heading = _heading(doc, target)
    if heading >= 0:
        stop = doc.end[target] if heading > target else len(doc)
        return frozenset(_run(doc, heading, stop, blocks=2))
    block = target if doc.tag[target] not in INLINE_TAGS else _block(doc, target)
    if block < 0:
        return frozenset()
    return frozenset(_run(doc, target, doc.end[block]))


def _heading(doc: Document, target: int) -> int:
    """The heading ``target`` is, lies in, or opens with (among its first nodes); -1: none."""
    inside = within(doc, target, frozenset(HEADING_LEVELS))
    if inside >= 0:
        return inside
    for i in range(target + 1, min(doc.end[target], target + _HEADING_REACH)):
        if doc.tag[i] in HEADING_LEVELS:
            return i
        if doc.tag[i] is None and doc.text[i].strip():
            return -1  # text comes before any heading: no section head
    return -1


def _block(doc: Document, node: int) -> int:
    node = doc.parent[node]
    while node >= 0 and doc.tag[node] in INLINE_TAGS:
        node = doc.parent[node]
    return node


def _chars(doc: Document, nodes: Sequence[int]) -> int:
    return sum(len(doc.text[i]) for i in nodes if doc.tag[i] is None)


def _run(doc: Document, start: int, stop: int, chars: int = MAX_VIEW_CHARS, *, blocks: int = 1) -> list[int]:
    """The nodes of the whole sentences from the one holding ``start`` (or the first after it) up to
    node ``stop``, of at most ``blocks`` blocks (a heading is one), while they hold ``chars``
    characters (the first sentence always)."""
    index = sentence_index(doc)
    k = index.holding(start)
    if k is None:
        k = bisect_left(index.begins, start)
    out: list[int] = []
    used, block, seen = 0, -1, 0
    while k < len(index) and index.begins[k] < stop:
        nodes = index.nodes[k]
        here = _block(doc, index.begins[k])
        if here != block:
            seen += 1
            if out and (seen > blocks or doc.tag[here] in HEADING_LEVELS):
                break
        size = _chars(doc, sorted(nodes))
        if out and used + size > chars:
            break
        out.extend(nodes)
        used += size
        block = here
        k += 1
    return out
