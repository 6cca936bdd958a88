#!/usr/bin/env python3
"""Check that each question of the links set needs the link it was written from.

    python benchmarks/heldout/links/verify_links.py benchmarks/heldout/links/questions.jsonl

Every question line carries ``via``: the page the question points at (``doc``), the sentence
there (``sentence``) and the link target (``target``, ``page#anchor``). For each line this checks,
with lxml alone (nothing of SPIRE):

* ``via.doc`` has an ``<a href>`` whose href, resolved against ``via.doc``, is ``via.target``, in
  a block whose text holds ``via.sentence``;
* ``gold_doc`` is the target's page, and no answer is in ``via.sentence``: the answer lives at
  the other end of the link;
* the target anchor exists on ``gold_doc`` (the first element with that ``id``, else an
  ``<a name>``), and the evidence lies in what it anchors: the ``dt`` and its ``dd``, the
  section or element it marks, or the block an anchor element opens.

The answers, evidence and context against the gold page are checked by ``../verify.py``. Text is
normalised as the judge does (score.py's norm), with a space after every block as ../verify.py
reads pages. Exits 1 and lists every failure, 0 otherwise.
"""

import argparse
import json
import posixpath
import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import lxml.html

BLOCKS = {"p", "li", "dd", "dt", "td", "th", "div", "section", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"}


def norm(text):
    text = unicodedata.normalize("NFKC", text or "").casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = " ".join(text.split())
    text = re.sub(r"\s+([,;)\]}])", r"\1", text)
    return re.sub(r"([(\[{])\s+", r"\1", text)


def text_of(el):
    return norm(el.text_content())


def resolve(page, href):
    path, _, fragment = href.strip().partition("#")
    path = path.partition("?")[0]
    target = page if not path else posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(path)))
    return f"{target}#{unquote(fragment)}" if fragment else target


def anchored(root, anchor):
    found = root.xpath("//*[@id=$a]", a=anchor) or root.xpath("//a[@name=$a]", a=anchor)
    return found[0] if found else None


def region(el):
    """What the anchor marks: a dt with its dd, an element with text, else the block it opens."""
    dt = el if el.tag == "dt" else next((a for a in el.iterancestors() if a.tag == "dt"), None)
    if dt is not None:
        dd = dt.getnext()
        while dd is not None and dd.tag == "dt":
            dd = dd.getnext()
        return text_of(dt) + " " + (text_of(dd) if dd is not None and dd.tag == "dd" else "")
    if text_of(el) and el.tag in BLOCKS | {"dfn"}:
        return text_of(el)
    block = next((a for a in el.iterancestors() if a.tag in BLOCKS), el)
    return text_of(block)


def check(qfile):
    base = qfile.parent
    roots, failures = {}, []

    def root(rel):
        if rel not in roots:
            page = lxml.html.parse(str(base / rel)).getroot()
            for el in page.iter():  # a space after every block, as ../verify.py reads pages
                if isinstance(el.tag, str) and el.tag in BLOCKS | {"br", "tr", "dl", "ul", "ol", "table"}:
                    el.tail = " " + (el.tail or "")
            roots[rel] = page
        return roots[rel]

    lines = [json.loads(ln) for ln in qfile.read_text(encoding="utf-8").splitlines() if ln.strip()]
    for q in lines:
        qid, via = q.get("id"), q.get("via") or {}
        doc, sentence, target = via.get("doc"), via.get("sentence"), via.get("target")
        if not (doc and sentence and target):
            failures.append(f"{qid}: no via.doc / via.sentence / via.target")
            continue
        page, _, anchor = target.partition("#")
        if page != q["gold_doc"]:
            failures.append(f"{qid}: gold_doc {q['gold_doc']} is not the link's page {page}")
        for answer in q["answers"]:
            if re.search(r"(?<!\w)" + re.escape(norm(answer)) + r"(?!\w)", norm(sentence)):
                failures.append(f"{qid}: answer {answer!r} is in the linking sentence itself")
        linking = [
            a
            for a in root(doc).iter("a")
            if a.get("href")
            and resolve(doc, a.get("href")) == target
            and norm(sentence) in text_of(next((b for b in a.iterancestors() if b.tag in BLOCKS), a))
        ]
        if not linking:
            failures.append(f"{qid}: no link to {target} in a block holding the sentence on {doc}")
        el = anchored(root(page), anchor) if anchor else root(page)
        if el is None:
            failures.append(f"{qid}: anchor {anchor!r} not on {page}")
        elif norm(q["evidence"]) not in region(el):
            failures.append(f"{qid}: evidence not in what {target} anchors")
    return len(lines), failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions", type=Path)
    args = ap.parse_args(argv)
    n, failures = check(args.questions)
    for f in failures:
        print("FAIL:", f)
    print(f"{args.questions}: {n} questions, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
