"""Plain-text tables: a ``pre`` that draws a table with spaces is read as the table it draws.

Manuals made from man pages, DocBook's DSSSL stylesheets and many READMEs set a table as
aligned text: a header line, a rule of dashes or equals signs under it, then one line per row,
the columns apart by two spaces or more::

    Name         Value    Meaning
    ---------------------------------
    MATCH            1    Brief information about font matching
    CONFIG        1024    Monitor which config files are loaded

As one preformatted block, such a table is one unit of text whose rows have no labels: a row
read alone ("CONFIG 1024 Monitor which config files are loaded") does not say which number is
the value. Read as a table, each row is its own sentence and the tables rule gives its cells
their column labels, as for any ``<table>``.

Decided by shape alone: a ``pre`` holding only text (or one ``code`` element holding only
text) whose first line of text has at least two fields, directly followed by a rule line, and
then at least :data:`MIN_ROWS` rows. A field is a run of text without two spaces in a row;
each field goes to the header column it overlaps most (right-aligned numbers included). A
line whose first column is empty continues the row above (a description wrapped onto a second
line). Anything else (a code listing, a ``psql`` result, whose columns are apart by ``|``, a
rule under a line of one field) stays a ``pre``.
"""

from __future__ import annotations

import re

from spire_core.document.tree import Element

#: Data rows a text table needs (fewer is a heading over a rule, not a table).
MIN_ROWS = 2
#: The longest ``pre`` text read for a table (a longer block stays as it is: bounded work).
MAX_CHARS = 200_000
#: The most columns a text table has (a header line of more fields is prose or data, not a
#: table header; each field of a row is matched against every column: work per byte bounded).
MAX_COLUMNS = 32

_RULE = re.compile(r"[ \t]*[-=]{3,}(?:[ +|]+[-=]{3,})*[ \t]*")
_FIELD = re.compile(r"\S+(?: \S+)*")
_NO_ATTRS: dict[str, str] = {}


def text_tables(root: Element) -> None:
    """Replace, in place, every ``pre`` under ``root`` that draws a table (module docstring)."""
    stack = [root]
    while stack:
        e = stack.pop()
        for k, child in enumerate(e.children):
            if isinstance(child, str):
                continue
            if child.tag == "pre":
                text = _only_text(child)
                table = _table(text) if text is not None else None
                if table is not None:
                    e.children[k] = table
                continue
            stack.append(child)


def _only_text(pre: Element) -> str | None:
    """The text of ``pre`` when it holds nothing else (or one ``code`` that holds only text)."""
    kids = pre.children
    if len(kids) == 1 and not isinstance(kids[0], str) and kids[0].tag == "code":
        kids = kids[0].children
    if not all(isinstance(k, str) for k in kids):
        return None
    text = "".join(k for k in kids if isinstance(k, str))
    return text if len(text) <= MAX_CHARS else None


def _fields(line: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in _FIELD.finditer(line)]


def _table(text: str) -> Element | None:
    """The ``table`` ``text`` draws, or None when it draws none."""
    lines = text.expandtabs().split("\n")
    first = next((n for n, line in enumerate(lines) if line.strip()), len(lines))
    if first + 1 >= len(lines) or not _RULE.fullmatch(lines[first + 1]):
        return None
    head = _fields(lines[first])
    if not 2 <= len(head) <= MAX_COLUMNS:
        return None
    starts = [s for s, _, _ in head]
    ends = [*starts[1:], 1 << 30]
    rows: list[list[list[str]]] = []
    for line in lines[first + 2 :]:
        if not line.strip() or _RULE.fullmatch(line):
            continue
        cells: list[list[str]] = [[] for _ in starts]
        for s, e, field in _fields(line):
            col = max(range(len(starts)), key=lambda c: (min(e, ends[c]) - max(s, starts[c]), -c))
            cells[col].append(field)
        if cells[0]:
            rows.append(cells)
        elif rows:  # the first column empty: the row above goes on
            for mine, more in zip(rows[-1], cells, strict=True):
                mine.extend(more)
        else:
            return None
    if len(rows) < MIN_ROWS:
        return None
    return _element(
        "table",
        _element("thead", _element("tr", *(_element("th", f) for _, _, f in head))),
        _element("tbody", *(_element("tr", *(_element("td", " ".join(c)) for c in row)) for row in rows)),
    )


def _element(tag: str, *children: Element | str) -> Element:
    e = Element(tag, _NO_ATTRS)
    e.children = [c for c in children if c != ""]
    return e
