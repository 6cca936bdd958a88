"""Contextual filtering (Section 3.2): labelled views, one LLM call, labels back to path sets.

Each retrieved :class:`~spire_core.aggregate.Subdocument` is grown with local context toward
``target`` (an *expanded view*). The sentences inside a view (table cells and list items
are sentence units too) are its citable units: they are labelled ``E1``, ``E2``, ...
across all views, in document order within each view, and rendered wrapped in
``<E1>…</E1>`` markers. The model sees every view in one prompt and answers with the
labels it needs; :func:`parse_labels` reads whatever it returns, and each chosen label maps
back to its unit's path set, cited with the unit's own global context.
"""

from __future__ import annotations

import json
import logging
import re
from bisect import bisect_right
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .aggregate import Documents, Subdocument
from .citation import Citation
from .context import HTML, Policy
from .context.local import _units, local_context_indices
from .document import Document, Path
from .errors import EvidenceFilterError
from .paths import down_indices
from .render import render_indices
from .size import SizeFn, approx_tokens

log = logging.getLogger(__name__)

ON_ERROR = ("keep", "raise")
LABEL_PREFIX = "E"


@dataclass(frozen=True)
class View:
    """One expanded result as the model sees it."""

    doc_id: str
    #: the expanded rendering, citable units wrapped in ``<E1>…</E1>`` markers
    text: str
    #: label -> the unit's path set
    units: Mapping[str, frozenset[Path]]


@dataclass(frozen=True)
class Selection:
    """What the model chose, as read by :func:`parse_labels`."""

    #: known labels the model chose, deduplicated, in answer order
    labels: list[str]
    #: label-like tokens that are not in the views (dropped, logged)
    unknown: list[str]
    #: False when the answer could not be read as a list of labels at all
    ok: bool
    raw: str
    #: the LLM error message when the call failed
    error: str | None = None


@dataclass(frozen=True)
class Evidence:
    """The filtered citations, the model's selection and the views it was shown."""

    citations: list[Citation]
    selection: Selection
    views: list[View]


# -- views and prompt --------------------------------------------------------------------
def _getter(documents: Documents) -> Callable[[str], Document]:
    return documents.__getitem__ if isinstance(documents, Mapping) else documents


def build_views(
    results: Sequence[Subdocument],
    documents: Documents,
    *,
    target: int = 400,
    size: SizeFn = approx_tokens,
    policy: Policy = HTML,
    first_label: int = 1,
) -> list[View]:
    """One labelled, locally expanded view per result; labels run on from ``first_label``."""
    get = _getter(documents)
    views: list[View] = []
    n = first_label
    for result in results:
        doc = get(result.doc_id)
        seed = doc.indices(result.seeds)
        expanded = local_context_indices(doc, seed, target=target, size=size, policy=policy)
        covered = down_indices(doc, expanded)
        units = _units(doc)
        begs = [first for first, _ in units] if covered else []
        lo = max(0, bisect_right(begs, min(covered, default=0)) - 1)
        hi = bisect_right(begs, max(covered, default=-1))
        labels: dict[str, set[int]] = {}
        for _, nodes in units[lo:hi]:
            unit = {i for i in nodes if i in covered}
            if any(doc.tag[i] is None and doc.text[i].strip() for i in unit):
                labels[f"{LABEL_PREFIX}{n}"] = unit
                n += 1
        text = render_indices(doc, policy.indices(doc, expanded), labels=labels)
        views.append(View(result.doc_id, text, {name: doc.to_paths(nodes) for name, nodes in labels.items()}))
    return views


def build_prompt(query: str, views: Sequence[View]) -> str:
    """The filtering prompt: the query, every view under its document id, the answer format."""
    parts = [
        "You pick the evidence needed to answer a question from excerpts of web pages.",
        "",
        f"Question: {query.strip()}",
        "",
        "Excerpts (each citable passage is wrapped in numbered markers such as <E1>...</E1>):",
    ]
    for view in views:
        parts += ["", f'--- document "{view.doc_id}" ---', view.text]
    parts += [
        "",
        "Reply with only a JSON list of the labels of the passages whose text is needed to "
        'answer the question, for example ["E2", "E5"]. Choose the smallest set that is '
        "enough; judge from the excerpts alone, not from what you already know. If no passage "
        "helps, reply with an empty list: [].",
    ]
    return "\n".join(parts)


# -- reading the answer ------------------------------------------------------------------
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|$)", re.S)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)
_ARRAY = re.compile(r"\[[^\[\]]*\]")
_LABEL = re.compile(r"([A-Za-z]+)_?(\d+)")
_NUMBERS = re.compile(r"[\s,;]*\d+(?:[\s,;]+\d+)*[\s,;.]*")
_STRIP = "\"'`\u201c\u201d\u2018\u2019<>/ \t\r\n."
_EMPTY_WORDS = frozenset({"", "none", "null", "nothing", "no labels", "n/a", "[]"})


class _Reader:
    """Label syntax of one call: the known labels by canonical form (``E3``) and their prefixes."""

    def __init__(self, known: Collection[str]) -> None:
        self.names: dict[str, str] = {}
        prefixes = {LABEL_PREFIX}
        for name in known:
            m = _LABEL.fullmatch(name.strip())
            if m:
                prefixes.add(m.group(1).upper())
                self.names[f"{m.group(1).upper()}{int(m.group(2))}"] = name
            else:
                self.names[name.strip().upper()] = name
        alts = "|".join(sorted(map(re.escape, prefixes), key=len, reverse=True))
        self.token = re.compile(rf"(?<![A-Za-z0-9])({alts})_?(\d+)(?![A-Za-z0-9])", re.I)

    def scan(self, text: str) -> list[str]:
        return [f"{m.group(1).upper()}{int(m.group(2))}" for m in self.token.finditer(text)]

    def item(self, item: Any) -> str | None:
        """A list element as a canonical label, or None when it is not label-like."""
        if isinstance(item, bool):
            return None
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        if isinstance(item, int):
            return f"{LABEL_PREFIX}{item}" if item >= 0 else None
        if not isinstance(item, str):
            return None
        word = item.strip(_STRIP)
        if word.isdigit():
            return f"{LABEL_PREFIX}{int(word)}"
        found = self.token.match(word)
        return f"{found.group(1).upper()}{int(found.group(2))}" if found else None

    def select(self, found: list[str], raw: str) -> Selection:
        labels: list[str] = []
        unknown: list[str] = []
        for canon in found:
            name = self.names.get(canon)
            if name is None:
                if canon not in unknown:
                    unknown.append(canon)
            elif name not in labels:
                labels.append(name)
        if unknown:
            log.warning("evidence filter: dropped labels that are not in the views: %s", ", ".join(unknown))
        return Selection(labels, unknown, True, raw)


def _read_array(text: str) -> list[Any]:
    """The elements of a bracketed list: as JSON, as JSON with single quotes, else split."""
    for attempt in (text, text.replace("'", '"')):
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        if isinstance(value, list):
            return value
    return [part for part in re.split(r"[,;\s]+", text[1:-1]) if part]


def parse_labels(answer: str, known: Collection[str]) -> Selection:
    """Read a model's answer as a list of labels; never raises (see :class:`Selection`)."""
    raw = answer if isinstance(answer, str) else ("" if answer is None else str(answer))
    try:
        return _parse(raw, known)
    except Exception as err:  # pragma: no cover - parsing must never raise
        log.warning("evidence filter: could not read the answer (%s): %.200r", err, raw)
        return Selection([], [], False, raw)


def _parse(raw: str, known: Collection[str]) -> Selection:
    reader = _Reader(known)
    text = _THINK.sub("", raw).strip()  # reasoning models think aloud first
    fenced = [f.strip() for f in _FENCE.findall(text)]
    bodies = [*fenced, text] if fenced else [text]
    empty_list = False
    # 1. a bracketed list (JSON or near-JSON) holding labels; an empty list means "none"
    for body in bodies:
        for candidate in _ARRAY.findall(body):
            items = _read_array(candidate)
            labels = [lab for lab in map(reader.item, items) if lab]
            if labels:
                return reader.select(labels, raw)
            empty_list = empty_list or not items
    if empty_list or any(b.lower().strip(" .`") in _EMPTY_WORDS for b in bodies):
        return Selection([], [], True, raw)
    # 2. labels written without a list ("E1, E3", "<E2>"), or bare numbers ("2, 5")
    for body in bodies:
        found = reader.scan(body)
        if found:
            return reader.select(found, raw)
    for body in bodies:
        if _NUMBERS.fullmatch(body):
            return reader.select([f"{LABEL_PREFIX}{int(n)}" for n in re.findall(r"\d+", body)], raw)
    log.warning("evidence filter: the answer holds no labels: %.200r", raw)
    return Selection([], [], False, raw)


# -- the filter --------------------------------------------------------------------------
def _unfiltered(results: Sequence[Subdocument], documents: Documents, policy: Policy) -> list[Citation]:
    """The results' own citations (one per seed), for when the filter cannot decide."""
    get = _getter(documents)
    out: list[Citation] = []
    for r in results:
        if r.citations:
            out.extend(r.citations)
        else:
            doc = get(r.doc_id)
            text = render_indices(doc, policy.indices(doc, doc.indices(r.seeds)))
            out.append(Citation(r.doc_id, r.seeds, text, r.score))
    return out


def _cite(
    selection: Selection, results: Sequence[Subdocument], views: list[View], documents: Documents, policy: Policy
) -> list[Citation]:
    """Citations of the chosen labels, in view order, each unit with its own global context."""
    get = _getter(documents)
    chosen = set(selection.labels)
    out: list[Citation] = []
    seen: set[tuple[str, frozenset[Path]]] = set()
    for result, view in zip(results, views, strict=True):
        doc: Document | None = None
        for label, paths in view.units.items():
            if label not in chosen or (view.doc_id, paths) in seen:
                continue
            seen.add((view.doc_id, paths))
            doc = doc or get(view.doc_id)
            text = render_indices(doc, policy.indices(doc, doc.indices(paths)))
            out.append(Citation(view.doc_id, paths, text, result.score))
    return out


class _Filter:
    """One filtering call: the views and what to do with the model's answer or failure."""

    def __init__(
        self,
        results: Sequence[Subdocument],
        documents: Documents,
        target: int,
        size: SizeFn,
        policy: Policy,
        on_error: str,
    ) -> None:
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
        self.results = results
        self.documents = documents
        self.policy = policy
        self.on_error = on_error
        self.views = build_views(results, documents, target=target, size=size, policy=policy)

    def skip(self) -> Evidence | None:
        """The answer without a model call, when there is nothing to choose from."""
        if not self.views:
            return Evidence([], Selection([], [], True, ""), self.views)
        if not any(view.units for view in self.views):
            return self.degrade("the views hold no citable units", "", raise_=False)
        return None

    def degrade(self, cause: str, raw: str, *, raise_: bool = True, err: Exception | None = None) -> Evidence:
        if raise_ and self.on_error == "raise":
            raise EvidenceFilterError(f"evidence filter failed: {cause}") from err
        log.warning("evidence filter failed (%s): keeping the unfiltered citations", cause)
        selection = Selection([], [], False, raw, cause)
        return Evidence(_unfiltered(self.results, self.documents, self.policy), selection, self.views)

    def failed(self, err: Exception) -> Evidence:
        cause = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        return self.degrade(cause, "", err=err)

    def finish(self, answer: str) -> Evidence:
        selection = parse_labels(answer, [label for view in self.views for label in view.units])
        if not selection.ok:
            return self.degrade("the answer holds no labels", selection.raw)
        return Evidence(_cite(selection, self.results, self.views, self.documents, self.policy), selection, self.views)


def select_evidence(
    query: str,
    results: Sequence[Subdocument],
    documents: Documents,
    llm: Callable[[str], str],
    *,
    target: int = 400,
    size: SizeFn = approx_tokens,
    policy: Policy = HTML,
    on_error: str = "keep",
) -> Evidence:
    """Filter ``results`` with one ``llm`` call over their labelled views (Section 3.2).

    When the call raises or its answer holds no labels, ``on_error="keep"`` logs a warning
    and returns the results' unfiltered citations (``selection.ok`` False, ``selection.error``
    set); ``on_error="raise"`` raises :class:`EvidenceFilterError`.
    """
    f = _Filter(results, documents, target, size, policy, on_error)
    done = f.skip()
    if done is not None:
        return done
    try:
        answer = llm(build_prompt(query, f.views))
    except Exception as err:
        return f.failed(err)
    return f.finish(answer)


async def aselect_evidence(
    query: str,
    results: Sequence[Subdocument],
    documents: Documents,
    llm: Callable[[str], Awaitable[str]],
    *,
    target: int = 400,
    size: SizeFn = approx_tokens,
    policy: Policy = HTML,
    on_error: str = "keep",
) -> Evidence:
    """:func:`select_evidence` with an async ``llm``."""
    f = _Filter(results, documents, target, size, policy, on_error)
    done = f.skip()
    if done is not None:
        return done
    try:
        answer = await llm(build_prompt(query, f.views))
    except Exception as err:
        return f.failed(err)
    return f.finish(answer)
