#!/usr/bin/env python3
"""Check a held-out question file against its pages.

    python benchmarks/heldout/verify.py benchmarks/heldout/manuals/questions.jsonl [--warn]

For every question line (the bench format of ../shared/bench/README.md) it checks:

* the line has the bench keys, its id is unique, its tags are among
  table | list | heading | prose | definition, and `answers` is a non-empty list;
* `gold_doc` (and every page named in a non-null `corpus`) exists, relative to the
  folder that holds the question file;
* every answer, the evidence and every context string occur in the gold page's
  visible text; answers must also occur there as whole words (how the judge,
  score.py, matches them) and inside the evidence;
* no context string is already part of the evidence (context is only for what the
  evidence sentence lacks).

Visible text of an HTML page: lxml.html parse, <script>/<style> dropped, a space put
after every block element and table cell (lxml's text_content() would glue
"<td>a</td><td>b</td>" into "ab"), then text_content(). Pages ending in .md or
.markdown are compared as raw text. Before comparing, both sides are normalised
like score.py's norm(): NFKC, casefold, curly quotes made straight, whitespace
collapsed, no space before , ; ) ] } or after ( [ {.

Exits 1 and lists every failure when a check fails, 0 otherwise. With --warn it also
prints (without failing) answers that occur more than 3 times on their gold page.
Standard library + lxml only.
"""

import argparse
import json
import re
import sys
import unicodedata
from pathlib import Path

TAGS = {"table", "list", "heading", "prose", "definition"}
KEYS = ("id", "question", "answers", "gold_doc", "evidence", "context", "corpus", "tags")
BLOCK_TAGS = (
    "address article aside blockquote br caption dd div dl dt figcaption figure footer form h1 h2 h3 h4 h5 h6"
    " header hr li main nav ol p pre section table tbody td tfoot th thead tr ul"
)
BLOCK = set(BLOCK_TAGS.split())
MARKDOWN = (".md", ".markdown")


def norm(text):
    """score.py's normalisation (kept identical on purpose)."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = " ".join(text.split())
    text = re.sub(r"\s+([,;)\]}])", r"\1", text)
    return re.sub(r"([(\[{])\s+", r"\1", text)


# score.py's whole-word rule (kept identical on purpose): next to a Han, kana or Hangul character no
# word boundary is needed, those scripts put no spaces between words
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_CHAR = re.compile(rf"[{CJK}]")


def word_pattern(needle):
    left = "" if CJK_CHAR.match(needle[0]) else rf"(?<![^\W{CJK}])"
    right = "" if CJK_CHAR.match(needle[-1]) else rf"(?![^\W{CJK}])"
    return left + re.escape(needle) + right


def contains_word(haystack, needle):
    return bool(needle) and re.search(word_pattern(needle), haystack) is not None


def visible_text(path):
    if path.suffix.lower() in MARKDOWN:
        return path.read_text(encoding="utf-8")
    import lxml.html  # only needed for HTML pages

    root = lxml.html.parse(str(path)).getroot()
    if root is None:
        return ""
    for bad in root.xpath("//script | //style"):
        bad.drop_tree()
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.lower() in BLOCK:
            el.tail = " " + (el.tail or "")
    return root.text_content()


def check(qfile, warn=False):
    base = qfile.parent
    failures, warnings = [], []
    pages = {}
    seen = set()

    def page(rel):
        if rel not in pages:
            p = base / rel
            pages[rel] = norm(visible_text(p)) if p.is_file() else None
        return pages[rel]

    lines = [ln for ln in qfile.read_text(encoding="utf-8").splitlines() if ln.strip()]
    for n, line in enumerate(lines, 1):
        try:
            q = json.loads(line)
        except ValueError as exc:
            failures.append(f"line {n}: not JSON ({exc})")
            continue
        qid = q.get("id", f"line {n}")

        def bad(msg, qid=qid):
            failures.append(f"{qid}: {msg}")

        missing = [k for k in KEYS if k not in q]
        if missing:
            bad(f"missing keys {missing}")
            continue
        if qid in seen:
            bad("duplicate id")
        seen.add(qid)
        if not isinstance(q["question"], str) or not q["question"].strip():
            bad("empty question")
        tags = q["tags"]
        if not isinstance(tags, list) or not tags or not set(tags) <= TAGS:
            bad(f"bad tags {tags!r}")
        answers = q["answers"]
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
            bad(f"bad answers {answers!r}")
            answers = []
        context = q["context"] or []
        if not isinstance(context, list) or not all(isinstance(c, str) and c.strip() for c in context):
            bad(f"bad context {context!r}")
            context = []
        corpus = q["corpus"]
        if corpus is not None:
            if not isinstance(corpus, list) or q["gold_doc"] not in corpus:
                bad("corpus must be null or a list that holds gold_doc")
            else:
                for rel in corpus:
                    if page(rel) is None:
                        bad(f"corpus page missing: {rel}")
        text = page(q["gold_doc"])
        if text is None:
            bad(f"gold_doc missing: {q['gold_doc']}")
            continue
        evidence = q["evidence"]
        ev = norm(evidence) if evidence is not None else None
        if ev is not None and ev not in text:
            bad(f"evidence not in page: {evidence!r}")
        for a in answers:
            na = norm(a)
            if not contains_word(text, na):
                bad(f"answer not in page (whole words): {a!r}")
            if ev is not None and not contains_word(ev, na):
                bad(f"answer not in evidence (whole words): {a!r}")
            if warn:
                k = len(re.findall(word_pattern(na), text))
                if k > 3:
                    warnings.append(f"{qid}: answer {a!r} occurs {k} times on {q['gold_doc']}")
        for c in context:
            nc = norm(c)
            if nc not in text:
                bad(f"context not in page: {c!r}")
            if ev is not None and nc in ev:
                bad(f"context already inside evidence: {c!r}")
    return len(lines), len([p for p in pages.values() if p is not None]), failures, warnings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions", type=Path, help="a questions .jsonl file; pages are relative to its folder")
    ap.add_argument("--warn", action="store_true", help="also list answers that occur more than 3 times on their page")
    args = ap.parse_args(argv)
    n, npages, failures, warnings = check(args.questions, args.warn)
    for w in warnings:
        print("warning:", w)
    for f in failures:
        print("FAIL:", f)
    print(f"{args.questions}: {n} questions over {npages} pages, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
