"""Hostile-page fuzzing and worst-case costs (issue 12).

    python -m benchmarks.fuzz --n 20000 [--seed 0] [--slow 5] [--memory]
    python -m benchmarks.fuzz --worst-case
    python -m benchmarks.fuzz --growth --n 500 [--seed 0]

A seeded generator of hostile HTML (:func:`hostile_page`: tag soup, table spans, charsets,
control bytes, deep nesting, page-supplied sentinels, loose table text, fake evidence
markers, long, deeply nested and wide labels) drives every public entry point
(:func:`exercise`) and checks what must hold for any input: only
:class:`~spire_core.SpireError` escapes; sentence paths exist; the rendering of a sentence's
global context contains the sentence; parsing is deterministic; the policy laws (extensive,
idempotent, monotone) hold; the passages (the default index's units) hold every sentence
once, in order, show each member and keep their members through the stored metadata; a
result survives its metadata; evidence cites only shown units. The run reports inputs,
crashes (by exception type, with the smallest reproducer), slow inputs and the worst time
(CPU seconds of the input, so other work on the machine does not count; the checks above
included, so each slow input is also timed doing only what an application does with it,
:func:`application_work`), and peak memory (``--memory``: traced Python allocations per
input, which slows the run).
``tests/core/test_fuzz.py`` runs a few hundred of the same inputs.

``--worst-case`` measures the documented cost bounds (time and peak memory, each case in a
fresh process): a 20 MB page, 50,000-deep nesting, a 2,000 x 50 table, 100,000 list items,
and shapes that once made each context hold a share of the page (long label runs, many
sibling lists and tables, deeply nested labelled lists, huge labels, wide header rows, many
table group rows, chains of labels), each parsed, contextualised and packed into passages
(what indexing does).

``--growth`` finds what one page size cannot: a context that grows with the page. Random
motifs of labelled structures (:func:`motif`) are repeated 60 and 240 times; the passage text
per page character must grow by at most :data:`GROWTH_LIMIT` between the two (:func:`growth`).
It also measures the flood of tiny sentences under one heading (:func:`flood`, issue 36) at
four sizes: the embedded text per page byte must stay under :data:`FLOOD_LIMIT`.

Issue 36 added the shapes of an outside audit (:func:`_issue36`): form feeds and other
control characters in pages deep enough for the fallback builder, HTML breaking out of an
unclosed ``<svg>`` or ``<math>``, floods of tiny sentences under a heading, look-alike label
markers and document headers (full-width, zero-width, soft-hyphenated, with attributes,
self-closing, em dashes, ``===``), and UTF-16 pages without a BOM; and the checks that go with
them: a page's embedded text within its context budget, no look-alike marker or header
reaching the model, an empty answer never emptying the evidence, and highlighted pages that
fetch nothing (no ``src``, ``srcset``, ``ping``, ``action``, form or page-made anchor).
"""

from __future__ import annotations

import argparse
import html as html_lib
import logging
import multiprocessing
import random
import re
import resource
import sys
import time
import tracemalloc
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lxml.html

from spire_core import (
    Citation,
    Document,
    Hit,
    PassageHit,
    Sentence,
    SpireError,
    Subdocument,
    aggregate,
    decode_paths,
    from_metadata,
    global_context,
    highlight,
    local_context,
    parse_html,
    parse_page,
    passages,
    render,
    seeds,
    select_evidence,
    sentences,
    subdoc,
    to_metadata,
)
from spire_core.document.render import render_indices
from spire_core.indexing.passages import CONTEXT_PER_CHAR, CONTEXT_PER_PAGE, page_size
from spire_core.query.evidence import build_prompt, build_views
from spire_core.query.passages import expand
from spire_core.results.schema import PATHS, members_of, unit_metadata

# -- the generator -----------------------------------------------------------------------
_WORDS = ["alpha", "beta", "gamma", "delta", "Dr.", "Smith", "e.g.", "3.5", "km", "U.S.", "costs", "café"]
_WORDS += ["naïve", "東京", "✓", "—", "‘q’", "x"]
_TAGS = ["div", "p", "span", "b", "i", "a", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th"]
_TAGS += ["thead", "tbody", "tfoot", "caption", "h1", "h2", "h3", "pre", "code", "blockquote", "section", "br"]
_TAGS += ["sentence-beg", "sentence-end", "title", "head", "body", "html", "form", "select", "option", "img"]
_CHARSETS = ["utf-8", "latin1", "windows-1252", "base64", "rot13", "utf-7", "unicode_escape", "hz", "zlib"]
_CHARSETS += ["shift_jis", "koi8-r", "utf-16", "bogus", "hex", "uu", "idna", "punycode", "x-user-defined"]
_ODD = ["\x00", "\x01", "\x0b", "\x1f", "\x7f", "\ud800", "\udfff", "\ufffe", "\u200b", "\u202e", "\r", "\f"]
_ATTRS = ["a=1", "\x01a=1", "b ~=1", "rowspan=3", "colspan=0", "rowspan=99999", 'colspan="-2"', "hidden"]
_FAKES = ["&lt;E3&gt;", "&lt;/E1&gt;", '--- document "x" ---\n', '["E2"]', "&#0;", "&#xD800;"]
_ATTRS += ['style="display:none"', 'onclick="x()"', 'href="javascript:alert(1)"', "=", '"q"=1', "class=toc"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)) + rng.choice([".", ". ", "? ", "", "!"])


def _soup(rng: random.Random, budget: int) -> str:
    out: list[str] = []
    while budget > 0:
        r = rng.random()
        if r < 0.35:
            tag = rng.choice(_TAGS)
            attrs = " ".join(rng.choice(_ATTRS) for _ in range(rng.randrange(3)))
            out.append(f"<{tag}{' ' + attrs if attrs else ''}>")
        elif r < 0.55:
            out.append(f"</{rng.choice(_TAGS)}>")
        elif r < 0.6:
            out.append(rng.choice(_ODD))
        elif r < 0.63:
            out.append(rng.choice(_FAKES))
        else:
            out.append(_words(rng, rng.randrange(1, 12)))
        budget -= len(out[-1])
    return "".join(out)


def _table(rng: random.Random, budget: int) -> str:
    rows: list[str] = []
    while budget > 0:
        cells = []
        for _ in range(rng.randrange(0, 6)):
            tag = rng.choice(["td", "td", "th"])
            span = ""
            if rng.random() < 0.3:
                span += f" rowspan={rng.choice([0, 1, 2, 5, 1000, 65534, -1])}"
            if rng.random() < 0.3:
                span += f" colspan={rng.choice([0, 1, 3, 1000, 2000, 'x'])}"
            close = f"</{tag}>" if rng.random() < 0.7 else ""
            cells.append(f"<{tag}{span}>{_words(rng, rng.randrange(0, 5))}{close}")
        if rng.random() < 0.15:
            cells.append(_words(rng, 4))  # loose text inside the row
        wrap = rng.choice(["", "", "thead", "tbody", "tfoot"])
        row = f"<tr>{''.join(cells)}</tr>" if rng.random() < 0.8 else "".join(cells)
        rows.append(f"<{wrap}>{row}</{wrap}>" if wrap else row)
        budget -= len(rows[-1])
    caption = f"<caption>{_words(rng, 3)}</caption>" if rng.random() < 0.3 else ""
    loose = _words(rng, 5) if rng.random() < 0.3 else ""
    if rng.random() < 0.15:  # text in a column group: a browser fosters it before the table
        loose += f"<colgroup>{rng.choice(['', '<col>'])}{_words(rng, 4)}</colgroup>"
    return f"<table>{caption}{loose}{''.join(rows)}</table>"


def _nested(rng: random.Random, budget: int) -> str:
    depth = rng.choice([50, 300, 1500, 4000])
    tag = rng.choice(["div", "i", "span", "ul", "li", "blockquote", "table", "b", "p"])
    inner = _words(rng, 6) + (rng.choice(["\x01", "<a b ~=1>x</a>", "\ud800", ""]))
    per_level = rng.random() < 0.5
    body = "".join(f"<{tag}>" + (f"<p>{_words(rng, 3)}</p>" if per_level else "") for _ in range(depth))
    return (body + inner)[: max(budget, 200)]


def _lists(rng: random.Random, budget: int) -> str:
    items = []
    while budget > 0:
        nested = f"<ul><li>{_words(rng, 3)}</li></ul>" if rng.random() < 0.2 else ""
        kind = rng.choice(["li", "li", "dt", "dd"])
        items.append(f"<{kind}>{_words(rng, rng.randrange(1, 8))}{nested}")
        budget -= len(items[-1])
    return f"<{rng.choice(['ul', 'ol', 'dl'])}>{''.join(items)}</ul>"


def _sentinels(rng: random.Random, budget: int) -> str:
    parts = []
    while budget > 0:
        parts.append(
            f"<p>{_words(rng, 4)}<{rng.choice(['sentence-beg', 'sentence-end'])}>"
            f"{rng.choice(['', '</sentence-end>', '</sentence-beg>'])}{_words(rng, 4)}</p>"
        )
        budget -= len(parts[-1])
    return "".join(parts)


def _labels(rng: random.Random, budget: int) -> str:
    """Labels that every unit under them repeats: a long one, deeply nested ones, wide header rows."""
    shape = rng.randrange(4)
    if shape == 3:  # sections whose headings sit in labelled cells, items or terms (labels chained them)
        section = rng.choice(
            [
                "<table><tr><th>{w}</th></tr><tr><td><h2>{w}</h2></td></tr></table><p>{w}.</p>",
                "<table><tr><th>{w}</th><td><h3>{w}</h3></td></tr></table><p>{w}.</p>",
                "<ul><li>{w}<ul><li><h2>{w}</h2></li></ul></li></ul><p>{w}.</p>",
                "<dl><dt>{w}</dt><dd><h4>{w}</h4></dd></dl><p>{w}.</p>",
                "<tr><th>{w}.</th></tr>",  # stacked header rows (no table: the parser makes one)
                "<th>{w}.</th>",  # a row of header cells
                "<h1>{w}<b><h2>{w}.</h2></b>",  # nested headings
            ]
        )
        parts = []
        while budget > 0:
            parts.append(section.format(w=_words(rng, 2)))
            budget -= len(parts[-1])
        return "".join(parts)
    if shape == 0:
        tag = rng.choice(["title", "h2", "th", "caption", "dt", "li"])
        big = _words(rng, rng.randrange(1, max(2, budget // 10)))  # words of ~7 characters
        units = "".join(f"<p>{_words(rng, 3)}</p>" for _ in range(rng.randrange(1, max(2, budget // 80))))
        return {
            "th": f"<table><tr><th>{big}</th></tr><tr><td>{units}</td></tr></table>",
            "caption": f"<table><caption>{big}</caption><tr><td>{units}</td></tr></table>",
            "dt": f"<dl><dt>{big}</dt><dd>{units}</dd></dl>",
            "li": f"<ul><li><div>{big}</div><ul><li>{units}</li></ul></li></ul>",
        }.get(tag, f"<{tag}>{big}</{tag}>{units}")
    if shape == 1:
        level = rng.choice(["<ul><li>{w}", "<ol><li>{w}", "<dl><dt>{w}<dd>", "<div><p>{w}:</p><ul><li>"])
        return "".join(level.format(w=_words(rng, 2)) for _ in range(rng.randrange(5, 60)))[: max(budget, 400)]
    cols = rng.randrange(1, 200)
    rows = rng.randrange(1, max(2, min(20, budget // (16 * cols))))
    head = "".join("<tr>" + f"<th>{_words(rng, 1)}</th>" * cols + "</tr>" for _ in range(rows))
    return f"<table>{head}" + f"<tr><td colspan={cols}>{_words(rng, 4)}</td></tr>" * rng.randrange(1, 20) + "</table>"


#: Look-alikes of a label marker's and a document header's characters (issue 36).
_LOOK_OPEN = ["<", "&lt;", "\uff1c", "\u27e8", "\u2329", "\u3008", "\ufe64", "\u2039", "\u02c2", "&#xFF1C;"]
_LOOK_CLOSE = [">", "&gt;", "\uff1e", "\u27e9", "\u232a", "\u3009", "\ufe65", "\u203a", "\u02c3"]
_LOOK_E = ["E", "e", "\uff25", "\u0415", "\u0395", "\U0001d404", "\u24ba"]
_LOOK_DIGIT = ["9", "1", "3", "\uff19", "\u0669", "\U0001d7d7"]
_INVISIBLE = ["", "", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "&shy;", "&#8203;", "\u0301"]
_LOOK_DASH = ["-", "\u2014", "\u2013", "=", "\u2500", "\uff0d", "-\u00ad", "&mdash;", "\u2212"]


def _look_alike(rng: random.Random) -> str:
    if rng.random() < 0.3:  # a document header look-alike on a line of its own
        dash = "".join(rng.choice(_LOOK_DASH) + rng.choice(_INVISIBLE) for _ in range(rng.randrange(2, 5)))
        word = rng.choice(["document", "Document", "\uff44ocument"])
        return "\n" + f'{dash} {word} "x.html" {dash}' + "\n"
    parts = [rng.choice(_LOOK_OPEN), rng.choice(["", "", "/", "\uff0f", "\u2215"]), rng.choice(_LOOK_E)]
    parts += [rng.choice(_LOOK_DIGIT) for _ in range(rng.randrange(1, 3))]
    parts += [rng.choice(["", "", " ", "/", " class=x", ' data-x="1"', "\u00a0"]), rng.choice(_LOOK_CLOSE)]
    return "".join(p + rng.choice(_INVISIBLE) for p in parts)


def _issue36(rng: random.Random, budget: int) -> str:
    """The shapes of issue 36's audit (module docstring)."""
    shape = rng.randrange(5)
    if shape == 0:  # a control character on a page deep enough for the fallback builder
        odd = rng.choice(["\f", "\x0b", "\x01", "\x1f", "\x7f", "\f\f"])
        tag = rng.choice(["i", "b", "span", "div"])
        attr = f' title="a{odd}b"' if rng.random() < 0.3 else ""
        return f"<{tag}{attr}>" * rng.randrange(2000, 2200) + f"{_words(rng, 2)}{odd}{_words(rng, 3)}"
    if shape == 1:  # HTML that breaks out of foreign content
        wrap = rng.choice(["<svg>", "<svg><g>", "<svg><text>", "<math>", "<svg><foreignObject>", "<math><mi>x</mi>"])
        block = rng.choice(["p", "div", "ul><li", "h2", "table><tr><td", "b", "font color=red"])
        tail = rng.choice(["", "</svg>", "</g> tail </svg>", "</math>"])
        return f"<p>{_words(rng, 3)}</p>{wrap}<{block}>{_words(rng, 4)}{tail}<p>{_words(rng, 3)}</p>"
    if shape == 2:  # a flood of tiny sentences under a heading
        items, dots = rng.randrange(10, max(11, budget // 14)), rng.randrange(10, max(11, budget // 2))
        head = rng.choice(["h6", "h2", "th", "dt", "caption"])
        return f"<{head}><ol>" + "<li>x. y.</li>" * items + "</ol><p>" + ". " * dots + f"</p></{head}>"
    if shape == 3:  # look-alike markers and headers in text, in <pre> and in attributes
        text = "".join(rng.choice([_look_alike(rng), _words(rng, 3), " "]) for _ in range(rng.randrange(2, 12)))
        return rng.choice(["<p>{}</p>", "<pre>{}</pre>", "<li>{}</li>", "<td>{}</td>", "<h3>{}</h3>"]).format(text)
    # page-made highlight marks, remote resources, forms and ping
    return rng.choice(
        [
            f'<mark class="spire-cite" id="spire-cite-1" data-citation="1">{_words(rng, 3)}</mark>',
            f'<img src="http://x.test/a.png" srcset="http://x.test/b.png 2x" alt="{_words(rng, 1)}">',
            f'<form action="http://x.test/s"><input type=password name=p>{_words(rng, 3)}</form>',
            f'<a href="https://x.test/" ping="http://x.test/p">{_words(rng, 2)}</a>',
            f'<p background="http://x.test/bg.png" id="spire-legend">{_words(rng, 3)}</p>',
            f'<a name="spire-cite-2">{_words(rng, 2)}</a><input type=image src="http://x.test/i.png">',
        ]
    )


def _text_table(rng: random.Random, budget: int) -> str:
    """A table drawn with spaces in a ``pre`` (read as a table): ragged, wrapped, tabbed or
    misaligned rows, a rule of any length, sometimes boxed in a table of one cell."""
    cols = rng.choice([2, 3, 8, 32, 200])
    width = rng.choice([1, 4, 12, 30])
    gap = rng.choice(["  ", "   ", "\t", " "])

    def line(n: int) -> str:
        return gap.join(_words(rng, rng.randrange(1, 4)).strip().ljust(width) for _ in range(n)).rstrip()

    lines = [line(cols), rng.choice(["-" * (width * cols), "===", "--- +---", "-- --"])]
    while budget > 0:
        r = rng.random()
        lines.append(line(cols) if r < 0.7 else " " * width * rng.randrange(1, 4) + line(1) if r < 0.9 else "")
        budget -= len(lines[-1]) + 1
    pre = "<pre>" + "\n".join(lines) + "</pre>"
    return f"<table><tr><td>{pre}</td></tr></table>" if rng.random() < 0.3 else pre


def _boxes(rng: random.Random, budget: int) -> str:
    """Boxes titled by their first line (a title class), nested, behind wrapper divs and empty
    anchors, or not first; term rows; paragraphs written as ``div`` before lists after runs of
    anchors; paragraphs opening with an item mark or ending with a colon (lists written as paragraphs)."""
    out: list[str] = []
    while budget > 0:
        anchors = '<a id="a"></a>' * rng.choice([0, 1, 5, 40])
        r = rng.random()
        if r < 0.4:
            kind = rng.choice(["title", "x-title", "note"])
            title = f'<p class="{kind}"><b>{_words(rng, rng.randrange(1, 4))}</b></p>'
            wrap = rng.choice([0, 1, 6])
            part = '<div class="sidebar">' + anchors + "<div>" * wrap + title + "</div>" * wrap + anchors
        elif r < 0.5:  # term rows: two div, the first a label line, maybe among like rows
            cell = f"<div><b>{_words(rng, rng.randrange(1, 3))}</b></div>"
            part = f'<div class="row">{cell}<div>{_words(rng, rng.randrange(1, 9))}</div></div>' * rng.choice([1, 2, 9])
        elif r < 0.6:
            lead = f'<div class="para">{_words(rng, rng.randrange(1, 9))}</div>'
            part = f"{lead}{anchors}<div><ul><li>{_words(rng, 4)}</li>"
        else:
            close = rng.choice(["</div>", "</li></ul>", "", "</div></div>"])
            mark, colon = rng.choice(["", "", "- ", "\u2022 "]), rng.choice(["", ":"])  # lists written as paragraphs
            part = f"<p>{mark}{_words(rng, rng.randrange(2, 12))}{colon}</p>{close}"
        out.append(part)
        budget -= len(part)
    return "".join(out)


_FAMILIES: list[Callable[[random.Random, int], str]] = [
    _soup, _table, _nested, _lists, _sentinels, _labels, _issue36, _text_table, _boxes
]  # fmt: skip


def hostile_page(rng: random.Random, max_chars: int = 8000) -> str | bytes:
    """One hostile page (about ``max_chars`` characters at most), as text or as bytes."""
    budget = rng.randrange(20, max_chars)
    parts = [f"<title>{_words(rng, 3)}</title>"] if rng.random() < 0.5 else []
    while budget > 0:
        part = rng.choice(_FAMILIES)(rng, min(budget, rng.randrange(50, 3000)))
        parts.append(part)
        budget -= len(part)
    page = "".join(parts)
    r = rng.random()
    if r < 0.5:
        return page
    if r < 0.7:
        charset = rng.choice(_CHARSETS)
        return f'<meta charset="{charset}">'.encode() + page.encode("utf-8", "surrogatepass")
    if r < 0.8:
        return page.encode("latin-1", "replace")  # undeclared legacy bytes
    if r < 0.85:  # UTF-16 without a BOM
        return page.encode(rng.choice(["utf-16-le", "utf-16-be"]), "surrogatepass")
    data = bytearray(page.encode("utf-8", "surrogatepass"))
    for _ in range(rng.randrange(1, 8)):  # flipped bytes
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


# -- the checks --------------------------------------------------------------------------
class InvariantError(AssertionError):
    """An invariant that must hold for every input failed."""


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise InvariantError(what)


def _norm(text: str) -> str:
    """Whitespace collapsed, every ``>`` read as a space (Markdown's blockquote markers are
    container syntax, not text, and a code line inside a quote cannot be told from one that
    starts with ``>``) and a table cell's escaped ``\\|`` read as the ``|`` it stands for."""
    return " ".join(text.replace(">", " ").replace("\\|", "|").split())


#: Sentences whose context, rendering and laws are checked per page (the first ones).
CHECKED_SENTENCES = 12


def exercise(page: str | bytes, doc_id: str = "fuzz") -> str:
    """Run every entry point on ``page`` and check the invariants; returns ``"ok"`` or the
    name of the :class:`SpireError` it was rejected with. Anything else raises."""
    try:
        doc = parse_html(page, doc_id=doc_id)
    except SpireError as err:
        return type(err).__name__
    again = parse_html(page, doc_id=doc_id)
    _check(list(doc.paths()) == list(again.paths()), "the same bytes give different paths")
    sents = sentences(doc)
    _check([s.text for s in sents] == [s.text for s in sentences(again)], "sentences differ between parses")
    parse_page(page, doc_id=doc_id)
    for s in sents[:CHECKED_SENTENCES]:
        for p in s.paths:
            doc.get(p)  # raises UnknownPathError (a crash here) if the path does not exist
        ctx = global_context(doc, s.paths)
        _check(s.paths <= ctx, "global context is not extensive")
        _check(global_context(doc, ctx) == ctx, "global context is not idempotent")
        shown = _norm(render(doc, ctx))
        _check(_norm(s.text) in shown, f"the rendering of a sentence's context lacks it: {s.text[:60]!r}")
    if len(sents) >= 2:
        a, b = sents[0].paths, sents[0].paths | sents[-1].paths
        _check(global_context(doc, a) <= global_context(doc, b), "global context is not monotone")
        subdoc(doc, b)
    units = seeds(doc)
    _check(len(units) == len(sents), "one seed per sentence")
    _check_budget(doc, units, "sentence")
    if not sents:
        return "ok"
    docs = {doc_id: doc}
    _check_passages(doc, sents, docs)
    results = _query(doc, sents)
    for r in results:
        _check(from_metadata(to_metadata(r), r.text) == r, "a result does not survive its metadata")
    local_context(doc, sents[0].paths, target=200, size=len)
    views = build_views(results, docs, target=200)
    shown_units = {(v.doc_id, p) for v in views for p in v.units.values()}
    labels = [lab for v in views for lab in v.units]
    answer = f'["{labels[len(labels) // 2]}", "E999"]' if labels else "[]"
    ev = select_evidence("what?", results, docs, lambda prompt: answer, target=200, deadline=None)
    if ev.selection.ok:
        _check({(c.doc_id, c.paths) for c in ev.citations} <= shown_units, "a citation outside the shown units")
    _check_prompt(build_prompt("what?", views), views)
    if labels:
        ev = select_evidence("what?", results, docs, _answers("[]"), target=200, deadline=None)
        _check(bool(ev.citations) and ev.empty_reason is not None, "the answer [] emptied the evidence")
    cites = [Citation(doc_id, s.paths, s.text) for s in sents[:5]]
    marked = lxml.html.document_fromstring(highlight(page, cites, doc_id=doc_id))
    ids: list[str] = []
    for el in marked.iter():
        if not isinstance(el.tag, str):
            continue
        _check(el.tag != "form", "highlight kept a form")
        for name, value in el.attrib.items():
            script = name.lower().startswith("on") or name.lower() == "style" or "script:" in value.lower()
            _check(not script, f"highlight kept {name}={value[:40]!r}")
            _check(name.lower() not in _FETCHING, f"highlight kept {name}={value[:40]!r}, which calls out")
        if el.get("id", "").startswith("spire-"):
            ids.append(el.get("id", ""))
    _check(len(ids) == len(set(ids)), "duplicate spire-* ids in a highlighted page")
    _check(all(m.get("data-citation") for m in marked.iter("mark") if "spire-cite" in m.get("class", "")),
           "a page-made spire-cite mark survived")  # fmt: skip
    return "ok"


def application_work(page: str | bytes, doc_id: str = "fuzz") -> None:
    """What an application has SPIRE do with ``page``: read it, make the default index's units
    (passages), and aggregate one query's hits on it (its first 64 sentences, as
    :func:`exercise` offers them) under a budget of 300."""
    try:
        doc = parse_page(page, doc_id=doc_id)
    except SpireError:
        return
    passages(doc)
    _query(doc, sentences(doc))


def _query(doc: Document, sents: list[Sentence]) -> list[Subdocument]:
    """One query's aggregation on ``doc``: its first 64 sentences as ranked hits, a budget of 300."""
    doc_id = doc.doc_id or ""
    hits = [Hit(doc_id, s.paths, 1.0 - k / (len(sents) + 1)) for k, s in enumerate(sents[:64])]
    return aggregate(hits, documents={doc_id: doc}, budget=300)


def _answers(answer: str) -> Callable[[str], str]:
    return lambda prompt: answer


#: Attributes a highlighted page must not hold: each makes a browser fetch or report something.
_FETCHING = frozenset(["src", "srcset", "poster", "background", "ping", "action", "formaction", "data", "manifest"])


def _check_budget(doc: Document, units: list[Any], unit: str) -> None:
    """A page's embedded text: within its context budget plus, per unit, its own words as rendered
    (its own nodes alone, what a unit past the budget embeds), and one unit's overshoot: what
    :class:`~spire_core.indexing.passages.ContextBudget` promises. (The allowance for own words
    had been an estimate, twice the page's text plus 64 characters a unit.)"""
    total = sum(len(u.text) for u in units)
    bare = sum(len(render_indices(doc, doc.indices(u.paths))) for u in units)
    overshoot = max((len(u.text) for u in units), default=0)
    bound = CONTEXT_PER_CHAR * page_size(doc) + CONTEXT_PER_PAGE + bare + overshoot
    _check(total <= bound, f"{unit} text {total} over the page's bound {bound}")


#: An independent reading of what text looks like (NFKC, format characters and marks removed,
#: confusable brackets, slashes and dashes as ASCII), and what then reads as a marker or header.
_LOOKS = str.maketrans(
    {
        **dict.fromkeys("\u2039\u00ab\u27e8\u3008\u300a\u02c2", "<"),
        **dict.fromkeys("\u203a\u00bb\u27e9\u3009\u300b\u02c3", ">"),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2500\u2501", "-"),
        **dict.fromkeys("\u2044\u2215", "/"),
        "\u2550": "=",
    }
)
_LOOKS_MARKER = re.compile(r"<\s*/?\s*[^\W\d_]{1,4}\s*_?\s*\d+(?:[\s/][^<>\n]*)?>")
_LOOKS_HEADER = re.compile(r"^[ \t>*#|]*[-=]{2,}[ \t]*document", re.I)


def _looks(text: str) -> str:
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) not in ("Cf", "Mn", "Me"))
    return unicodedata.normalize("NFKC", text).translate(_LOOKS)


def _check_prompt(prompt: str, views: list[Any]) -> None:
    body = _looks(prompt[prompt.find("\n--- document") :]) if views else ""
    labels = [lab[1:] for v in views for lab in v.units]
    real = {f"<E{n}>" for n in labels} | {f"</E{n}>" for n in labels}  # (a spanning cell shows its unit twice)
    _check(set(_LOOKS_MARKER.findall(body)) == real, "page text reached the model as a label marker")
    headers = [line for line in body.splitlines() if _LOOKS_HEADER.match(line)]
    _check(len(headers) == len(views), "page text reached the model as a document header")


def _check_passages(doc: Document, sents: list[Sentence], docs: dict[str, Document]) -> None:
    """The default index's units: every sentence a member of one passage, whose text shows it; the
    members survive the stored metadata; passage hits expand back to the sentences and aggregate."""
    units = passages(doc)
    _check_budget(doc, units, "passage")
    members = [m for u in units for m in u.members]
    _check(members == [s.paths for s in sents], "the passages' members are not the sentences, in order")
    by_paths = {s.paths: s for s in sents}
    for u in units[:CHECKED_SENTENCES]:
        shown = _norm(u.text)
        for m in u.members:
            _check(_norm(by_paths[m].text) in shown, f"a passage's text lacks its member {by_paths[m].text[:60]!r}")
        meta = unit_metadata(doc.doc_id or "", u.paths, u.begin, u.members)
        _check(members_of(meta, decode_paths(meta[PATHS])) == u.members, "members lost in the metadata")
    ranked = [PassageHit(doc.doc_id or "", u.members, 1.0 - k / (len(units) + 1)) for k, u in enumerate(units)]
    hits = expand(ranked, query="alpha the costs", documents=docs, order="overlap", limit=64)
    _check({h.paths for h in hits} <= set(members), "expansion made a hit that is no member")
    aggregate(hits, documents=docs, budget=300)


def _warm_up() -> None:
    """Load what loads once per process (imports, the Punkt model), so that no input pays for it."""
    exercise("<title>Warm up</title><p>Warm up. Imports and the Punkt model load once.</p>")


# -- the runner --------------------------------------------------------------------------
@dataclass
class Report:
    inputs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    #: exception type -> (input size, seed, message) of its smallest reproducer
    crashes: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    crash_count: int = 0
    #: (seconds, size, seed, seconds of :func:`application_work`)
    slow: list[tuple[float, int, int, float]] = field(default_factory=list)
    worst: tuple[float, int, int] = (0.0, 0, 0)
    peak_mb: float = 0.0


def run(n: int, *, seed: int = 0, slow: float = 5.0, memory: bool = False, max_chars: int = 8000) -> Report:
    """Fuzz ``n`` inputs (input ``k`` comes from ``random.Random(seed + k)``)."""
    report = Report()
    _warm_up()
    for k in range(n):
        page = hostile_page(random.Random(seed + k), max_chars)
        if memory:
            tracemalloc.start()
        start = time.process_time()  # CPU seconds: what the input costs, whatever else runs here
        try:
            report.outcomes[exercise(page)] += 1
        except Exception as err:  # a crash: anything but a SpireError, or a failed invariant
            name = type(err).__name__
            report.crash_count += 1
            report.outcomes["crash"] += 1
            if name not in report.crashes or len(page) < report.crashes[name][0]:
                report.crashes[name] = (len(page), seed + k, str(err)[:200])
        took = time.process_time() - start
        if memory:
            report.peak_mb = max(report.peak_mb, tracemalloc.get_traced_memory()[1] / 2**20)
            tracemalloc.stop()
        report.inputs += 1
        if took > slow:
            start = time.process_time()
            application_work(page)
            report.slow.append((took, len(page), seed + k, time.process_time() - start))
        if took > report.worst[0]:
            report.worst = (took, len(page), seed + k)
    return report


def _print(report: Report, slow: float) -> None:
    print(f"inputs: {report.inputs}")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())))
    print(f"crashes (not a SpireError, or an invariant): {report.crash_count}")
    for name, (size, seed, message) in sorted(report.crashes.items()):
        print(f"  {name}: smallest {size} chars, seed {seed}: {message}")
    print(f"slow inputs (over {slow:g} s): {len(report.slow)}")
    for took, size, seed, work in report.slow[:10]:
        print(f"  {took:.2f} s, {size} chars, seed {seed} (what an application does with it: {work:.2f} s)")
    took, size, seed = report.worst
    print(f"worst time: {took:.3f} s ({size} chars, seed {seed})")
    if report.peak_mb:
        print(f"peak traced memory per input: {report.peak_mb:.1f} MB")
    print(f"process max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


# -- worst cases -------------------------------------------------------------------------
def _worst_pages() -> dict[str, str]:
    para = "<p>The quick brown fox jumps over the lazy dog. It was not amused by this at all.</p>\n"
    label = "Label words here. " * 111
    return {
        "20 MB page": "<title>Big</title>" + para * (20_000_000 // len(para)),
        "50,000-deep nesting": "<div>" * 50_000 + "<p>Deep text here. And more.</p>" + "</div>" * 50_000,
        "50,000-deep, a paragraph per level": "<div><p>Level text.</p>" * 50_000,
        "2,000 x 50 table": "<table><tr>"
        + "".join(f"<th>H{c}</th>" for c in range(50))
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>r{r}c{c}</td>" for c in range(50)) + "</tr>" for r in range(2000))
        + "</table>",
        "100,000 list items": "<ul>" + "".join(f"<li>Item {k} of the list.</li>" for k in range(100_000)) + "</ul>",
        "span bomb (400 rows of 1000 x 1000 spans)": "<table>"
        + "<tr><td rowspan=1000 colspan=1000>x</td></tr>" * 400
        + "</table>",
        # each shape below once made every context hold a share of the page (quadratic work)
        "20,000 terms, then 20,000 definitions": "<dl>" + "<dt>Term</dt>" * 20_000 + "<dd>Defined.</dd>" * 20_000,
        "an item of 20,000 lead children and 20,000 lists": "<ul><li>"
        + "<b>lead</b> " * 20_000
        + "<ul><li>Nested item.</li></ul>" * 20_000,
        "20,000 sibling lists and tables": "<ul><li>Item.</li></ul><table><tr><td>Cell.</td></tr></table>" * 20_000,
        "20,000 nested lists, a label each": "<ul><li>Label" + "<ul><li>Label. " * 20_000,
        "20,000 items under one 0.1 MB label": "<ul><li><div>"
        + "<p>Lead paragraph of the item.</p>" * 3_000
        + "</div><ul>"
        + "<li>Nested item.</li>" * 20_000
        + "</ul></li></ul>",
        "a 0.1 MB header cell over 20,000 rows": "<table><tr><th>"
        + "Header words. " * 7_000
        + "</th></tr>"
        + "<tr><td>Cell.</td></tr>" * 20_000
        + "</table>",
        "16 header rows of 1,000 columns, 2,000 rows of one wide cell": "<table>"
        + ("<tr>" + "<th>h</th>" * 1_000 + "</tr>") * 16
        + "<tr><td colspan=1000>Wide cell.</td></tr>" * 2_000
        + "</table>",
        "10,000 group rows": "<table><tr><th>A</th><th>B</th></tr>"
        + "".join(f"<tr><th colspan=2>G{k}</th></tr><tr><td>a{k}</td><td>b{k}</td></tr>" for k in range(10_000))
        + "</table>",
        # labels chained through every earlier section (each context held them all), or along a row
        # or a stack of header rows
        "2,000 sections, each heading in a labelled cell": "".join(
            f"<table><tr><th>Label {k}</th></tr><tr><td><h2>Section {k}</h2></td></tr></table><p>Text {k}.</p>"
            for k in range(2_000)
        ),
        "a row of 20,000 header cells": "<table><tr><td>Start.</td>"
        + "".join(f"<th>Head {k}.</th>" for k in range(20_000))
        + "</tr></table>",
        "2,000 nested headings": "".join(f"<h1>Gamma {k}</h5><th>Beta {k}.</th>" for k in range(2_000)),
        "20,000 stacked header rows": "<table>"
        + "".join(f"<tr><th>H{k}.</th></tr>" for k in range(20_000))
        + "<tr><td>Data.</td></tr></table>",
        "20,000 empty anchors, then 20,000 titled lines and paragraphs": "<div>"
        + '<a id="a"></a>' * 20_000
        + '<p class="title">Title</p><p>Text.</p>' * 20_000
        + "</div>",
        "40,000 nested boxes, a title each": '<div class="box"><p class="title">Title</p>' * 40_000 + "<p>Deep.</p>",
        # groff's tag tables: each a term of the description after it, titled by none (no chain)
        "20,000 one-row tag tables, each before a description": (
            '<table><tr><td><p>Tag</p></td><td></td></tr></table><p style="margin-left:9%">Text</p>' * 20_000
        ),
        # a list written as 100,000 paragraphs opening with an item mark, after a colon
        "100,000 dash-opened paragraphs after a colon": "<p>The items are:</p>" + "<p>- An item.</p>" * 100_000,
        # every bound filled at once: each unit's whole context 46 KB
        "8,000 items under a title, 6 headings and 16 labels of 2,000 characters": f"<title>{label}</title>"
        + "".join(f"<h{k}>{label}</h{k}>" for k in range(1, 7))
        + f"<ul><li><div>{label}</div>" * 16
        + "<ul>"
        + "<li>Item.</li>" * 8_000,
    }


def _measure(name: str, queue: multiprocessing.Queue[tuple[str, dict[str, float] | str]]) -> None:
    page = _worst_pages()[name]
    out: dict[str, float] = {"size_mb": len(page.encode()) / 1e6}
    _warm_up()
    try:
        start = time.process_time()  # CPU seconds; memory is the process's peak (no tracing, which slows it)
        doc: Document = parse_html(page, doc_id=name)
        out["parse_s"] = time.process_time() - start
        sents = sentences(doc)
        out["sentences"] = len(sents)
        start = time.process_time()
        picks = [sents[k * (len(sents) - 1) // 9] for k in range(10)] if sents else []
        for s in picks:
            render(doc, global_context(doc, s.paths))
        if sents:
            local_context(doc, picks[-1].paths, target=400, size=len)
        out["context_s"] = time.process_time() - start
        start = time.process_time()
        passages(doc)
        out["passages_s"] = time.process_time() - start
        out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        queue.put((name, out))
    except SpireError as err:
        queue.put((name, f"{type(err).__name__}: {err}"))


def worst_case(only: str = "") -> None:
    """Print the worst-case table (Markdown), one fresh process per case (those naming ``only``)."""
    ctx = multiprocessing.get_context("fork")
    head = ("page", "size", "sentences", "parse + segment (CPU)", "10 contexts + local context (CPU)", "passages (CPU)")
    print("| " + " | ".join((*head, "max RSS")) + " |")
    print("|---|---|---|---|---|---|---|")
    for name in (n for n in _worst_pages() if only in n):
        queue: multiprocessing.Queue[tuple[str, dict[str, float] | str]] = ctx.Queue()
        proc = ctx.Process(target=_measure, args=(name, queue))
        proc.start()
        proc.join()
        if queue.empty():
            print(f"| {name} | | | failed (exit {proc.exitcode}) | | | |")
            continue
        _, got = queue.get()
        if isinstance(got, str):
            print(f"| {name} | | | {html_lib.escape(got)} | | | |")
            continue
        print(
            f"| {name} | {got['size_mb']:.1f} MB | {int(got['sentences'])} | {got['parse_s']:.1f} s"
            f" | {got['context_s']:.2f} s | {got['passages_s']:.1f} s | {got['max_rss_mb']:.0f} MB |"
        )


# -- growth ------------------------------------------------------------------------------
def motif(rng: random.Random, depth: int = 0) -> str:
    """A small random fragment of labelled structures (``{k}`` stands for the repetition's number)."""

    def word() -> str:
        return rng.choice(["Alpha", "Beta", "Gamma", "Delta"]) + " {k}"

    def inner() -> str:
        if depth < 3 and rng.random() < 0.6:
            return motif(rng, depth + 1)
        return rng.choice(["<h2>", "<h3>", "<p>", "<b>", ""]) + word() + "."

    level = rng.randrange(1, 7)
    return rng.choice(
        [
            lambda: f"<table><tr><th>{word()}</th></tr><tr><td>{inner()}</td></tr></table>",
            lambda: f"<table><tr><th>{word()}</th><td>{inner()}</td></tr></table>",
            lambda: f"<table><tr><td>{inner()}</td><th>{word()}</th><td>{inner()}</td></tr></table>",
            lambda: f"<ul><li>{word()}<ul><li>{inner()}</li></ul></li></ul>",
            lambda: f"<dl><dt>{word()}</dt><dd>{inner()}</dd></dl>",
            lambda: f"<p>{word()}:</p><ul><li>{inner()}</li></ul>",
            lambda: f"<h{level}>{word()}</h{rng.randrange(1, 7)}>",  # closed by another level, or not at all
            lambda: f"<tr><th>{word()}</th><td>{inner()}</td></tr>",  # loose rows
            lambda: f"<th>{word()}</th>",
            lambda: f"<caption>{word()}</caption>{inner()}",
            lambda: f"<div class=note><h3>{word()}</h3>{inner()}</div>",
            lambda: f"<p>{word()}. {inner()}</p>",
        ]
    )()


#: The most that passage text per page character may grow from 60 to 240 repetitions of a motif.
GROWTH_LIMIT = 1.5


def amplification(fragment: str, times: int) -> float:
    """Passage text per page character of ``fragment`` repeated ``times`` times (numbered)."""
    page = "".join(fragment.replace("{k}", str(k)) for k in range(times))
    return sum(len(u.text) for u in passages(parse_html(page))) / len(page)


def growth(n: int, *, seed: int = 0, small: int = 60, large: int = 240) -> list[tuple[float, int, str]]:
    """For ``n`` random motifs (motif ``k`` from seed ``seed + k``, one to three fragments), how
    many times more passage text per page character the page of ``large`` repetitions renders
    than that of ``small``: about 1 where every context is bounded, ``large / small`` where a
    context grows with the page. Returns (growth, seed, motif), the largest first."""
    out = []
    for k in range(n):
        rng = random.Random(seed + k)
        fragment = "".join(motif(rng) for _ in range(rng.randrange(1, 4)))
        out.append((amplification(fragment, large) / amplification(fragment, small), seed + k, fragment))
    return sorted(out, reverse=True)


#: The most embedded (passage or sentence) text per page byte of the tiny-sentence flood at any size.
FLOOD_LIMIT = 25.0


def flood(scale: int) -> str:
    """Issue 36's page (``scale=1``: 13.6 KB, once 4,400 passages of 18.9 MB): tiny sentences under one heading."""
    return "<h6><ol>" + "<li>x. y.</li>" * (400 * scale) + "</ol><p>" + ". " * (4000 * scale) + "</p></h6>"


def flood_growth(scales: tuple[int, ...] = (1, 2, 4, 8)) -> list[tuple[int, int, str, int, float, float]]:
    """(scale, page bytes, unit, embedded characters, per page byte, CPU seconds) of :func:`flood`."""
    out = []
    for scale in scales:
        page = flood(scale)
        for unit in ("passage", "sentence"):
            start = time.process_time()
            text = sum(len(u.text) for u in seeds(parse_html(page), unit=unit))
            out.append((scale, len(page), unit, text, text / len(page), time.process_time() - start))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="inputs to generate")
    parser.add_argument("--seed", type=int, default=0, help="first seed (input k uses seed + k)")
    parser.add_argument("--slow", type=float, default=5.0, help="seconds over which an input counts as slow")
    parser.add_argument("--max-chars", type=int, default=8000, help="size of the largest generated page")
    parser.add_argument("--memory", action="store_true", help="trace peak Python memory per input (slower)")
    parser.add_argument("--worst-case", action="store_true", help="print the worst-case cost table instead")
    parser.add_argument("--case", default="", help="with --worst-case: only the cases whose name holds this")
    parser.add_argument(
        "--growth", action="store_true", help="how passage text per page byte grows with repeated motifs (--n motifs)"
    )
    args = parser.parse_args(argv)
    logging.getLogger("spire_core").setLevel(logging.ERROR)  # every bad page warns; the report counts
    if args.worst_case:
        worst_case(args.case)
        return 0
    if args.growth:
        found = growth(args.n, seed=args.seed)
        for times, seed, fragment in found[:5]:
            print(f"growth {times:.2f} (seed {seed}): {fragment[:200]}")
        floods = flood_growth()
        for scale, size, unit, text, per_byte, took in floods:
            print(f"tiny-sentence flood x{scale} ({size} B), {unit}: {text} chars, {per_byte:.1f}/byte, {took:.2f} s")
        over = found and found[0][0] > GROWTH_LIMIT
        return 1 if over or max(f[4] for f in floods) > FLOOD_LIMIT else 0
    report = run(args.n, seed=args.seed, slow=args.slow, memory=args.memory, max_chars=args.max_chars)
    _print(report, args.slow)
    return 1 if report.crash_count or report.slow else 0


if __name__ == "__main__":
    sys.exit(main())
