"""The links question set holds: its answers are in its gold pages, at the other end of the links it names."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "heldout"
QUESTIONS = ROOT / "links" / "questions.jsonl"


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_set_verifies_against_its_pages_and_links() -> None:
    n, _pages, failures, _ = _module(ROOT / "verify.py").check(QUESTIONS)
    assert n >= 40 and failures == []
    n, failures = _module(ROOT / "links" / "verify_links.py").check(QUESTIONS)
    assert n >= 40 and failures == []


def test_no_page_of_the_set_is_a_page_of_the_docs_dev_split() -> None:
    here = Path(__file__).resolve()
    bench = next((p / "shared" / "bench" / "docs" for p in here.parents if (p / "shared" / "bench").is_dir()), here)
    ours = {p.relative_to(QUESTIONS.parent).as_posix() for p in (QUESTIONS.parent / "pages").rglob("*.html")}
    theirs = {p.relative_to(bench).as_posix() for p in (bench / "pages").rglob("*.html")} if bench != here else set()
    assert len(ours) == 28 and not ours & theirs
    assert bench == here or len(theirs) == 40


def test_the_link_verifier_catches_a_question_the_link_does_not_answer(tmp_path: Path) -> None:
    line = json.loads(QUESTIONS.read_text(encoding="utf-8").splitlines()[0])
    (tmp_path / "pages").symlink_to(ROOT / "links" / "pages")
    broken = [
        {**line, "via": {**line["via"], "target": line["via"]["target"] + "-gone"}},
        {**line, "answers": [line["via"]["sentence"].split()[-1].strip(".")]},
        {**line, "gold_doc": line["via"]["doc"]},
    ]
    file = tmp_path / "q.jsonl"
    file.write_text("".join(json.dumps(q) + "\n" for q in broken), encoding="utf-8")
    _, failures = _module(ROOT / "links" / "verify_links.py").check(file)
    assert len({f.split(":")[0] for f in failures}) == 1 and len(failures) >= 3
