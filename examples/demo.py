"""Main job on the embedded default: print the contextualized sentence seeds of an example page."""

from __future__ import annotations

import sys
from pathlib import Path

from spire_core import encode_paths, parse_html, seeds

PAGES = Path(__file__).parent / "pages"


def main(argv: list[str]) -> int:
    page = Path(argv[0]) if argv else PAGES / "postgresql-wal.html"
    doc = parse_html(page.read_bytes(), doc_id=page.name)
    units = seeds(doc)
    print(f"{page.name}: {len(units)} sentence seeds (title: {doc.title!r})\n")
    for seed in units[:: max(1, len(units) // 8)]:
        print(f"--- seed {encode_paths([seed.begin])}")
        print(seed.text, end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
