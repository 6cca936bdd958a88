"""The glossary-aware policy: a mention of a term defined on the page brings its definition, bounded, never a chain."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spire_core import HTML, Document, Path, compose, global_context, parse_html, policy_named, render, sentences
from spire_core.context import DEFINITIONS
from spire_core.context.definitions import MAX_DEFINITION_CHARS, MENTION_TAGS, DefinitionsRule
from spire_core.context.policy import MAX_LABEL_CHARS

from .strategies import html_pages, sentence_text

GLOSSARY_AWARE = compose(HTML, DEFINITIONS)

PAGE = """<html><head><title>Storage</title></head><body><h1>Storage</h1>
<p>Every <a href="#term-wal">WAL</a> record is flushed before the page.</p>
<p>Each <abbr>LSN</abbr> is a position.</p>
<p>Tuples are <a href="#dfn-frozen">frozen</a> by vacuum.</p>
<p>Objects must be <a href="#hashable">hashable</a> here.</p>
<p>See <a href="#layout">the layout section</a>, <a href="#nowhere">a dead anchor</a>,
<a href="other.html#term-wal">another page</a> and <a href="https://example.org/#term-wal">a site</a>.</p>
<h2>Terms</h2>
<dl><dt id="term-wal">WAL</dt><dd><p>The write-ahead log holds every change first. It is replayed after a crash.</p>
<p>A second paragraph of the description.</p></dd>
<dt><dfn title="LSN">log sequence number</dfn></dt>
<dd>A byte position in the <a href="#term-wal">WAL</a> stream.</dd></dl>
<p>A tuple is <dfn id="dfn-frozen">frozen</dfn> when its transaction id is replaced.
Frozen tuples are visible to all.</p>
<p><a name="hashable"></a><b>hashable</b>: its hash value never changes during its lifetime.</p>
<div id="layout"><h2>Layout</h2><p>Pages are 8 kB.</p></div>
</body></html>"""


def _context(doc: Document, start: str) -> str:
    s = next(s for s in sentences(doc) if s.text.startswith(start))
    return render(doc, global_context(doc, s.paths, GLOSSARY_AWARE))


def _added(doc: Document, start: str) -> str:
    """What the definitions rule adds to a sentence's HTML context, rendered alone."""
    s = next(s for s in sentences(doc) if s.text.startswith(start))
    html = HTML.indices(doc, doc.indices(s.paths))
    more = GLOSSARY_AWARE.indices(doc, doc.indices(s.paths)) - html
    return render(doc, doc.to_paths(more)) if more else ""


@pytest.fixture(scope="module")
def doc() -> Document:
    return parse_html(PAGE, doc_id="storage.html")


def test_a_link_to_a_term_brings_the_term_and_its_description(doc: Document) -> None:
    text = _context(doc, "Every WAL")
    assert "WAL\n: The write-ahead log holds every change first. It is replayed after a crash." in text
    assert "A second paragraph" not in text  # the description's first block only
    assert "Every WAL record is flushed before the page." in text  # the mention's own text is unchanged


def test_an_abbreviation_the_page_defines_brings_its_definition(doc: Document) -> None:
    assert "log sequence number\n: A byte position in the WAL stream." in _context(doc, "Each LSN")


def test_a_link_to_a_dfn_brings_its_sentence(doc: Document) -> None:
    added = _added(doc, "Tuples are frozen")
    assert "A tuple is frozen when its transaction id is replaced." in added
    assert "Frozen tuples are visible to all." in added  # the sentences after it, within the bound


def test_a_glossary_anchor_opening_a_paragraph_brings_the_paragraph(doc: Document) -> None:
    assert "hashable: its hash value never changes during its lifetime." in _added(doc, "Objects must be")


def test_sections_dead_anchors_other_pages_and_sites_bring_nothing(doc: Document) -> None:
    assert _added(doc, "See the layout") == ""


def test_a_definition_brings_no_further_definition(doc: Document) -> None:
    """The LSN description links WAL: a mention of LSN brings LSN's definition, not WAL's too."""
    added = _added(doc, "Each LSN")
    assert "A byte position in the WAL stream." in added and "write-ahead log" not in added
    defined = GLOSSARY_AWARE.indices(doc, doc.indices(next(s for s in sentences(doc) if "LSN is" in s.text).paths))
    assert not any(doc.tag[i] in MENTION_TAGS for i in defined - HTML.indices(doc, defined))


def test_a_glossary_whose_entries_link_each_other_adds_one_definition_per_mention() -> None:
    entries = "".join(
        f'<dt id="t{k}">term {k}</dt><dd>Meaning {k} refers to <a href="#t{k + 1}">term {k + 1}</a>.</dd>'
        for k in range(200)
    )
    doc = parse_html(f'<p>Start with <a href="#t0">term 0</a>.</p><dl>{entries}</dl>', doc_id="g.html")
    added = _added(doc, "Start with")
    assert "Meaning 0 refers to term 1." in added and "Meaning 1 " not in added


def test_a_long_description_is_bounded_and_its_first_sentence_kept() -> None:
    long = " ".join(f"Sentence {k} says a little more about the term." for k in range(300))
    doc = parse_html(f'<p>Use <a href="#t">it</a>.</p><dl><dt id="t">term</dt><dd><p>{long}</p></dd></dl>')
    added = _added(doc, "Use it")
    assert "Sentence 0 says" in added and "Sentence 299" not in added
    assert len(added) <= MAX_DEFINITION_CHARS + 64
    first = "A first sentence that is much longer than a gloss " + "and goes on " * 60 + "until it ends."
    doc = parse_html(f'<p>Use <a href="#t">it</a>.</p><dl><dt id="t">term</dt><dd><p>{first} Then more.</p></dd></dl>')
    added = _added(doc, "Use it")
    assert "until it ends." in added and "Then more." not in added and len(first) <= MAX_LABEL_CHARS


def test_the_policy_is_named_and_off_by_default() -> None:
    assert policy_named("definitions") is DEFINITIONS
    assert policy_named(GLOSSARY_AWARE.name).rules == GLOSSARY_AWARE.rules
    assert not any(isinstance(r, DefinitionsRule) for r in HTML.rules)


# -- laws (Definition 3) on generated glossary pages ------------------------------------
@st.composite
def glossary_pages(draw: st.DrawFn) -> str:
    """Pages whose prose and definitions mention terms: links to dt/dfn/anchor ids (some gone), abbreviations."""
    n = draw(st.integers(1, 4))

    def mention() -> str:
        k = draw(st.integers(0, n))  # t{n} does not exist
        kind = draw(st.sampled_from(["link", "link", "abbr", "self", "other", "plain"]))
        if kind == "link":
            return f'<a href="#t{k}">w{k}</a>'
        if kind == "abbr":
            return f"<abbr>W{k}</abbr>"
        if kind == "other":
            return f'<a href="other.html#t{k}">x</a>'
        return draw(sentence_text())

    def prose() -> str:
        return " ".join(f"{draw(sentence_text())} {mention()}" for _ in range(draw(st.integers(1, 3))))

    parts = [f"<p>{prose()}</p>" for _ in range(draw(st.integers(1, 3)))]
    entries = []
    for k in range(n):
        shape = draw(st.sampled_from(["dt", "dfn", "anchor", "dt-dfn"]))
        if shape == "dt":
            entries.append(f'<dl><dt id="t{k}">W{k}</dt><dd>{prose()}</dd></dl>')
        elif shape == "dt-dfn":
            entries.append(f'<dl><dt><dfn id="t{k}" title="W{k}">w{k}</dfn></dt><dd><p>{prose()}</p></dd></dl>')
        elif shape == "dfn":
            entries.append(f'<p>{draw(sentence_text())} <dfn id="t{k}">W{k}</dfn> {prose()}</p>')
        else:
            entries.append(f'<ul><li><a name="t{k}"></a><b>W{k}</b> {prose()}</li></ul>')
    draw(st.randoms()).shuffle(entries)
    extra = draw(html_pages())
    return f"<html><body><h1>{draw(sentence_text())}</h1>{''.join(parts + entries)}{extra}</body></html>"


@st.composite
def glossary_sets(draw: st.DrawFn) -> tuple[Document, frozenset[Path], frozenset[Path]]:
    doc = parse_html(draw(glossary_pages()), doc_id="g.html")
    paths = list(doc.paths())
    p = draw(st.frozensets(st.sampled_from(paths), max_size=6))
    return doc, p, p | draw(st.frozensets(st.sampled_from(paths), max_size=6))


PROPERTY_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", ["definitions", "html|definitions"])
@PROPERTY_SETTINGS
@given(case=glossary_sets())
def test_policy_laws(name: str, case: tuple[Document, frozenset[Path], frozenset[Path]]) -> None:
    """Extensive, monotone, idempotent, within Paths(D); growing step by step equals closing the union."""
    doc, p, bigger = case
    policy = DEFINITIONS if name == "definitions" else GLOSSARY_AWARE
    g = global_context(doc, p, policy)
    assert p <= g <= global_context(doc, bigger, policy)
    assert global_context(doc, g, policy) == g
    assert g <= frozenset(doc.paths())
    a, b = doc.indices(p), doc.indices(bigger - p)
    assert policy.indices(doc, b, closed=policy.indices(doc, a)) == policy.indices(doc, a | b)


@PROPERTY_SETTINGS
@given(case=glossary_sets())
def test_the_rule_adds_only_definitions_never_a_mention(
    case: tuple[Document, frozenset[Path], frozenset[Path]],
) -> None:
    doc, p, _ = case
    for x in global_context(doc, p, DEFINITIONS) - p:
        i = doc.index(x)
        assert doc.tag[i] not in MENTION_TAGS
        assert any(doc.tag[a] in {"dt", "dd", "p", "li"} for a in (i, *doc.ancestors(i)))
    # one hop: what a selection's mentions bring, closed again, brings nothing more
    once = DEFINITIONS.indices(doc, doc.indices(p))
    direct = doc.indices(p).union(*(DEFINITIONS.table(doc)[i] for i in doc.indices(p)))
    assert once == direct
