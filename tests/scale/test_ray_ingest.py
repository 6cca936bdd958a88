"""Ray ingestion into Postgres on a local 2-worker cluster: added, unchanged, changed and failed pages."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest
import ray

from spire_app.cli import main
from spire_app.ray_ingest import ray_index
from spire_core import HTML
from spire_llamaindex import SpireRetriever
from spire_llamaindex.postgres import LexiconTable, postgres_index

TABLE = "ray_pages"


def page(title: str, body: str) -> str:
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"


PAGES = {
    "coffee.html": page("Brewing coffee", "<h2>Pour-over</h2><p>Use 60 grams of coffee per litre of water.</p>"),
    "tea.html": page("Brewing tea", "<ul><li>Green tea: steep for 2 minutes at 80 degrees.</li></ul>"),
    "guide/bikes.html": page("Bicycles", "<h2>Tyres</h2><p>Road tyres take 6 to 8 bar of pressure.</p>"),
    "guide/trains.html": page("Trains", "<p>The night train leaves at 22:40 from platform 4.</p>"),
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local Ray cluster with 2 worker CPUs for the module, stopped at the end."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        _system_config={"worker_niceness": 0},
    )
    try:
        yield
    finally:
        ray.shutdown()


def units_of(uri: str, doc_id: str) -> int:
    with psycopg2.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM data_{TABLE} WHERE metadata_->>'ref_doc_id' = %s", (doc_id,))
        return int(cur.fetchone()[0])


def test_ray_index_is_idempotent_and_skips_failures(
    tmp_path: Path, postgres_uri: str, cluster: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, html in PAGES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(html, encoding="utf-8")
    (tmp_path / "broken.html").write_bytes(b"%PDF-1.7\x00\x01\x02 binary, not a page")

    first = ray_index(tmp_path, postgres_uri, table=TABLE, workers=2, batch_pages=2)
    assert sorted(first.added) == sorted(PAGES)
    assert list(first.failed) == ["broken.html"] and first.failed["broken.html"]
    assert first.units == sum(units_of(postgres_uri, name) for name in PAGES) > 0
    assert first.stage_seconds["embed"] > 0 and first.worker_peak_mib > 0
    # the lexical index is kept in the database: a query process reads it instead of parsing the pages
    assert first.lexicon_saved and first.lexicon_seconds > 0
    saved = LexiconTable(postgres_uri, TABLE).read(HTML.name)
    assert saved is not None and sorted(saved.pages) == sorted(PAGES)
    first_versions = dict(saved.versions)

    answer = SpireRetriever(postgres_index(postgres_uri, table=TABLE), budget=200).retrieve_subdocuments(
        "When does the night train leave?"
    )
    assert answer[0].doc_id == "guide/trains.html" and "22:40" in answer[0].text

    # the command line: the same ingestion (here on the cluster this process already holds), then a query
    (tmp_path / "tea.html").write_text(
        page("Brewing tea", "<ul><li>Green tea: steep for 3 minutes at 75 degrees.</li></ul>"), encoding="utf-8"
    )
    index_args = ["index", str(tmp_path), "--db", postgres_uri, "--table", TABLE, "--ray", "local", "--workers", "2"]
    assert main(index_args) == 1  # broken.html is skipped again
    printed = capsys.readouterr()
    assert "1 updated, 3 unchanged, 1 skipped" in printed.out and "skipped broken.html" in printed.err
    assert units_of(postgres_uri, "tea.html") > 0
    assert main(["query", "--db", postgres_uri, "--table", TABLE, "--json", "How long does green tea steep?"]) == 0
    best = json.loads(capsys.readouterr().out)["results"][0]
    assert best["doc_id"] == "tea.html" and "3 minutes" in best["text"] and "2 minutes" not in best["text"]
    saved = LexiconTable(postgres_uri, TABLE).read(HTML.name)  # saved again with the new version of tea.html
    assert saved is not None and saved.versions["tea.html"] != first_versions["tea.html"]
