"""The provenance table of docs/tuned-constants.md matches the code (issue 51, item 5).

Each row names a constant of ``spire_core`` (``module.NAME``, or ``module.function(parameter)``
for a function's default) with its value and kind. A listed constant that is gone or holds
another value fails here, so a re-tune has to update its row; so does a module-level
UPPER_CASE number in the modules of :data:`COMPLETE` that the table does not list.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "tuned-constants.md"
KINDS = frozenset({"tuned", "bound", "literature"})
#: modules every module-level UPPER_CASE number of which the table must list
COMPLETE = ("options", "query.strength", "query.table_views", "query.fusion")
_CONSTANT = re.compile(r"^`(?P<module>[a-z_][\w.]*)\.(?P<name>\w+)(?:\((?P<param>\w+)\))?`$")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


@dataclass(frozen=True)
class Row:
    module: str  # under spire_core, e.g. "query.fusion"
    name: str
    param: str | None  # a function's parameter whose default is listed
    value: Any
    kind: str
    tuned_on: str
    commit: str

    @property
    def key(self) -> str:
        return f"{self.module}.{self.name}" + (f"({self.param})" if self.param else "")


def parse_table(text: str) -> list[Row]:
    """The rows of the provenance table in ``text`` (a Markdown table whose header starts
    ``| constant | value | kind |``); a malformed row raises ``ValueError``."""
    rows: list[Row] = []
    lines = iter(text.splitlines())
    for line in lines:
        if line.startswith("| constant | value | kind |"):
            break
    else:
        raise ValueError("no provenance table")
    next(lines, None)  # the |---| line
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7:
            raise ValueError(f"{len(cells)} cells, not 7: {line}")
        m = _CONSTANT.match(cells[0])
        if m is None:
            raise ValueError(f"not `module.NAME` or `module.function(param)`: {cells[0]}")
        rows.append(Row(m["module"], m["name"], m["param"], ast.literal_eval(cells[1]), cells[2], cells[3], cells[4]))
    return rows


def _actual(row: Row) -> Any:
    """The value the code holds for ``row`` (AttributeError / KeyError where it holds none)."""
    obj = getattr(importlib.import_module(f"spire_core.{row.module}"), row.name)
    if row.param is None:
        return obj
    default = inspect.signature(obj).parameters[row.param].default
    if default is inspect.Parameter.empty:
        raise KeyError(row.param)
    return default


def problems(rows: list[Row]) -> list[str]:
    """What is wrong with ``rows`` against the code: a constant missing, another value, an
    unknown kind, a tuned row without its data or commit, a row listed twice."""
    found: list[str] = []
    seen: set[str] = set()
    for row in rows:
        if row.key in seen:
            found.append(f"{row.key}: listed twice")
        seen.add(row.key)
        if row.kind not in KINDS:
            found.append(f"{row.key}: kind {row.kind!r} is none of {sorted(KINDS)}")
        if row.kind == "tuned" and (row.tuned_on in ("", "-") or not _COMMIT.match(row.commit)):
            found.append(f"{row.key}: a tuned constant names its data and its commit")
        try:
            actual = _actual(row)
        except (ImportError, AttributeError, KeyError):
            found.append(f"{row.key}: not in spire_core.{row.module}")
            continue
        if type(actual) is bool or actual != row.value:
            found.append(f"{row.key}: the code holds {actual!r}, the table {row.value!r}")
    return found


def numeric_constants(source: str) -> list[str]:
    """The names of the module-level UPPER_CASE constants of ``source`` bound to a number
    (an int or float literal, or an arithmetic expression of literals and such constants)."""
    names: list[str] = []
    numbers: set[str] = set()

    def numeric(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int | float) and not isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            return node.id in numbers
        if isinstance(node, ast.UnaryOp):
            return numeric(node.operand)
        if isinstance(node, ast.BinOp):
            return numeric(node.left) and numeric(node.right)
        return False

    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.lstrip("_").isupper() and numeric(value):
                numbers.add(target.id)
                names.append(target.id)
    return names


def unlisted(rows: list[Row], module: str, source: str) -> list[str]:
    """The numeric constants of ``module`` (its ``source``) that ``rows`` do not list."""
    listed = {row.name for row in rows if row.module == module and row.param is None}
    return [name for name in numeric_constants(source) if name not in listed]


def _source(module: str) -> str:
    return (ROOT / "spire_core" / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")


ROWS = parse_table(TABLE.read_text(encoding="utf-8"))


def test_every_listed_constant_holds_its_documented_value() -> None:
    assert ROWS, "the table lists no constant"
    assert problems(ROWS) == []


@pytest.mark.parametrize("module", COMPLETE)
def test_every_numeric_constant_of_the_ranking_modules_is_listed(module: str) -> None:
    assert numeric_constants(_source(module)), f"spire_core.{module} holds no numeric constant: is the scan broken?"
    assert unlisted(ROWS, module, _source(module)) == []


_HEADER = (
    "| constant | value | kind | tuned on | at commit | what was measured | documented |\n"
    "|---|---|---|---|---|---|---|\n"
)


def _table(*rows: str) -> str:
    return "Some text.\n\n" + _HEADER + "".join(r + "\n" for r in rows) + "\nAfter.\n"


def test_a_retuned_value_fails() -> None:
    from spire_core.query.strength import LEXICAL_WEIGHT

    held, other = LEXICAL_WEIGHT, LEXICAL_WEIGHT + 0.25
    right = parse_table(_table(f"| `query.strength.LEXICAL_WEIGHT` | {held} | tuned | docs dev | d374ea0 | x | y |"))
    assert problems(right) == []
    wrong = parse_table(_table(f"| `query.strength.LEXICAL_WEIGHT` | {other} | tuned | docs dev | d374ea0 | x | y |"))
    assert problems(wrong) == [f"query.strength.LEXICAL_WEIGHT: the code holds {held}, the table {other}"]


def test_a_changed_function_default_fails() -> None:
    row = "| `query.fusion.fused_search(lexical_pool)` | {} | tuned | wtq dev | b06b8b6 | x | y |"
    right = parse_table(_table(row.format(64)))
    assert problems(right) == []
    wrong = parse_table(_table(row.format(16)))
    assert len(problems(wrong)) == 1


def test_a_missing_constant_an_unknown_kind_and_a_tuned_row_without_provenance_fail() -> None:
    rows = parse_table(
        _table(
            "| `query.strength.NO_SUCH_WEIGHT` | 1 | bound | - | - | x | y |",
            "| `options.DEFAULT_FIRST_K` | 32 | guessed | - | - | x | y |",
            "| `options.DEFAULT_FILL` | 0.9 | tuned | - | - | x | y |",
            "| `options.DEFAULT_FILL` | 0.9 | bound | - | - | x | y |",
        )
    )
    found = problems(rows)
    assert len(found) == 4
    assert any("NO_SUCH_WEIGHT: not in" in f for f in found)
    assert any("guessed" in f for f in found)
    assert any("names its data and its commit" in f for f in found)
    assert any("listed twice" in f for f in found)


def test_an_unlisted_constant_fails() -> None:
    source = "X = 'text'\nA_WEIGHT = 0.5\n_CAP: int = 2 * A_WEIGHT\nlower = 3\nFLAG = True\nB = -1\n"
    assert numeric_constants(source) == ["A_WEIGHT", "_CAP", "B"]
    rows = parse_table(_table("| `m.A_WEIGHT` | 0.5 | tuned | wtq dev | abcdef1 | x | y |"))
    assert unlisted(rows, "m", source) == ["_CAP", "B"]


def test_a_malformed_table_is_refused() -> None:
    with pytest.raises(ValueError):
        parse_table("no table here")
    with pytest.raises(ValueError):
        parse_table(_table("| LEXICAL_WEIGHT | 0.5 | tuned | docs dev | d374ea0 | x | y |"))
    with pytest.raises(ValueError):
        parse_table(_table("| `query.strength.LEXICAL_WEIGHT` | 0.5 | tuned |"))
