"""Markdown pages through the HTML tree, on real Markdown: the long descriptions of installed packages."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path

import pytest

from spire_core import (
    Citation,
    declared_kind,
    global_context,
    is_markdown,
    markdown_to_html,
    parse_markdown,
    parse_page,
    render,
    seeds,
)
from spire_core.errors import DocumentTooLargeError, NotHTMLError
from spire_core.reading.parse import parse_html
from spire_runtime.pages import declared_kind_of

EXAMPLE_PAGES = Path(__file__).resolve().parents[2] / "examples" / "pages"


def _readme(package: str) -> str:
    """The Markdown long description (the PyPI README) of an installed package."""
    try:
        meta = metadata(package)
    except PackageNotFoundError:
        pytest.skip(f"{package} is not installed")
    assert "markdown" in (meta.get("Description-Content-Type") or ""), f"{package}'s README is not Markdown"
    return str(meta.get_payload())


def _active_headings(markdown: str, line_no: int) -> list[str]:
    """The ATX headings active at ``line_no``, read from the source lines (outside code fences), not by SPIRE."""
    chain: dict[int, str] = {}
    fenced = False
    for line in markdown.splitlines()[:line_no]:
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        m = None if fenced else re.match(r"(#{1,6}) +(.*?)\s*#*\s*$", line)
        if m:
            level = len(m.group(1))
            chain = {k: v for k, v in chain.items() if k < level}
            chain[level] = m.group(2)
    return [f"{'#' * level} {text}" for level, text in sorted(chain.items())]


def _line_of(markdown: str, needle: str) -> int:
    return next(i for i, line in enumerate(markdown.splitlines()) if needle in line)


def test_table_cell_gets_headings_and_row_and_column_labels() -> None:
    md = _readme("openai")
    doc = parse_markdown(md, doc_id="openai.md")
    cell = next(s for s in seeds(doc) if s.own_text == "BadRequestError")
    # the column label and the row label, as written in the Markdown table
    header = next(line for line in md.splitlines() if line.startswith("|") and "Error Type" in line)
    row = next(line for line in md.splitlines() if "`BadRequestError`" in line)
    column_label = header.strip("|").split("|")[1].strip()
    row_label = row.strip("|").split("|")[0].strip()
    assert f"| {row_label} | BadRequestError |" in cell.text
    assert f"| {column_label} |" in cell.text
    # the headings above the table, in order, and the title (the README's first heading)
    headings = _active_headings(md, _line_of(md, "`BadRequestError`"))
    assert len(headings) >= 2
    positions = [cell.text.index(h) for h in headings]
    assert positions == sorted(positions)
    # no other row of the table
    assert "AuthenticationError" not in cell.text


def test_nested_list_item_gets_its_outer_labels_only() -> None:
    md = _readme("torch")
    doc = parse_markdown(md, doc_id="torch.md")
    line = next(line for line in md.splitlines() if re.match(r"\s+- \[NVIDIA Jetson Platforms\]", line))
    depth = len(line) - len(line.lstrip())
    # the outer items of this one, read from the source: the nearest less-indented item at each depth
    lines = md.splitlines()[: _line_of(md, line.strip())]
    outer: list[str] = []
    for earlier in reversed(lines):
        m = re.match(r"(\s*)- \[([^\]]+)\]", earlier)
        if m and len(m.group(1)) < depth:
            outer.insert(0, m.group(2))
            depth = len(m.group(1))
        if depth == 0:
            break
    assert outer, "the fixture item is nested"
    item = next(s for s in seeds(doc) if s.own_text == "NVIDIA Jetson Platforms" and "- NVIDIA Jetson" in s.text)
    for label in outer:
        assert label in item.text
    # siblings of the outer items are not context
    siblings = [m.group(1) for m in re.finditer(r"^\s*- \[([^\]]+)\]", "\n".join(lines), re.M)]
    assert set(siblings) - set(outer), "the list has other items"
    for sibling in set(siblings) - set(outer):
        assert f"- {sibling}\n" not in item.text


def test_code_block_is_one_fenced_unit_under_its_heading() -> None:
    md = _readme("torch")
    doc = parse_markdown(md, doc_id="torch.md")
    fence = next(i for i, line in enumerate(md.splitlines()) if line.startswith("```"))
    code_line = md.splitlines()[fence + 1].strip()
    unit = next(s for s in seeds(doc) if code_line in s.own_text)
    assert "```" in unit.text
    for heading in _active_headings(md, fence):
        assert heading in unit.text


def test_same_paths_renderings_and_citations_as_the_html_it_becomes() -> None:
    md = _readme("openai")
    doc = parse_markdown(md, doc_id="openai.md")
    via_html = parse_html(markdown_to_html(md), doc_id="openai.md")
    assert list(doc.paths()) == list(via_html.paths())
    assert [s.paths for s in seeds(doc)] == [s.paths for s in seeds(via_html)]
    seed = seeds(doc)[len(seeds(doc)) // 2]
    assert render(doc, global_context(doc, seed.paths)) == seed.text
    citation = Citation("openai.md", seed.paths, seed.text)
    assert Citation.from_dict(citation.to_dict()) == citation
    assert [s.paths for s in seeds(parse_markdown(md))] == [s.paths for s in seeds(doc)]  # deterministic


def test_front_matter_is_dropped_and_gives_the_title() -> None:
    md = '---\ntitle: "Checkpoint tuning"\nlayout: page\n---\n\nSome text.\n\n## Settings\n\n- a\n- b\n'
    doc = parse_markdown(md)
    assert doc.title == "Checkpoint tuning"
    assert all("layout" not in s.text for s in seeds(doc))
    setting = next(s for s in seeds(doc) if s.own_text == "b")
    assert setting.text.startswith("# Checkpoint tuning\n\n## Settings")


@pytest.mark.parametrize("package", ["openai", "torch", "charset-normalizer"])
def test_real_readmes_read_as_markdown(package: str) -> None:
    assert is_markdown(_readme(package))


@pytest.mark.parametrize("page", sorted(p.name for p in EXAMPLE_PAGES.glob("*.html")))
def test_html_pages_are_not_markdown(page: str) -> None:
    assert not is_markdown((EXAMPLE_PAGES / page).read_text(encoding="utf-8", errors="replace"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Just prose.\n\nAnother paragraph, no structure.", False),
        ("<div><pre>\n# not a heading\n</pre></div>", False),
        ('<p align="center"><img src="logo.png"></p>\n\n# Project\n\nText.', True),
        ("Title\n=====\n\nText.", True),
        ("Steps:\n\n1. install\n2. run\n", True),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n", True),
    ],
)
def test_is_markdown(text: str, expected: bool) -> None:
    assert is_markdown(text) is expected


def test_bytes_errors_name_the_page() -> None:
    assert parse_markdown("# Héllo\n\nText.".encode("utf-8-sig"), doc_id="a.md").title == "Héllo"
    assert parse_markdown("\ufeff# Héllo\n\nText.", doc_id="a.md").title == "Héllo"
    with pytest.raises(NotHTMLError, match=r"'b\.md'"):
        parse_markdown(b"%PDF-1.7\x00\x00 binary", doc_id="b.md")
    with pytest.raises(DocumentTooLargeError, match=r"'c\.md'"):
        parse_markdown("# big\n\n" + "x" * 100, doc_id="c.md", max_bytes=50)


def test_parse_page_reads_markdown_as_markdown() -> None:
    md = _readme("openai")
    assert [s.paths for s in seeds(parse_page(md, doc_id="o.md"))] == [s.paths for s in seeds(parse_markdown(md))]
    assert parse_page("Just prose.\n\nMore prose.").title is None  # plain text stays paragraphs


@pytest.mark.parametrize(
    ("metadata", "kind"),
    [
        ({"file_type": "text/markdown"}, "markdown"),
        ({"mime_type": "text/html; charset=utf-8"}, "html"),
        ({"source": "docs/guide.md"}, "markdown"),
        ({"file_path": "/data/page.HTM"}, "html"),
        ({"source": "notes.txt"}, "text"),
        ({"source": "https://example.org/"}, None),
        ({}, None),
    ],
)
def test_declared_kind_of_framework_metadata(metadata: dict[str, str], kind: str | None) -> None:
    assert declared_kind_of(metadata) == kind


def test_declared_kind() -> None:
    assert declared_kind(media_type="text/markdown; charset=utf-8") == "markdown"
    assert declared_kind(file_name="a/b.HTM?x=1") == "html"
    assert declared_kind(media_type="image/png", file_name="x.bin") is None


def test_a_page_declared_html_without_tags_warns() -> None:
    stripped = "PostgreSQL Limits Item Upper Limit Comment database size unlimited"
    doc = parse_page(stripped, doc_id="limits.html", declared="html")
    assert any("declared HTML but holds no tags" in w for w in doc.warnings)
    assert not parse_page("<p>fine</p>", doc_id="ok.html", declared="html").warnings
