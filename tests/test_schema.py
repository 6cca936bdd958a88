"""One result schema: both adapters write the same SPIRE metadata keys and ids for the same page."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core.schema import Document as LIDocument

from spire_core import Citation, Subdocument, decode_paths, from_metadata, parse_html, seeds, to_metadata, unit_id
from spire_core.options import Unit
from spire_core.results.schema import SPIRE_KEYS, citation_records, citations_from, subdocuments
from spire_langchain import SpireTransformer
from spire_llamaindex import SpireNodeParser

PAGE = """<html><head><title>Widgets</title></head><body>
<h1>Widgets</h1><p>Blue widgets weigh 3 g. Red widgets weigh 5 g.</p>
<ul><li>Blue widgets<ul><li>They glow at night.</li></ul></li></ul>
<table><tr><th>Kind</th><th>Price</th></tr><tr><td>Blue</td><td>$2</td></tr></table>
</body></html>"""


@pytest.mark.parametrize("unit", ["sentence", "block"])
def test_both_adapters_emit_the_same_keys_and_ids(unit: Unit) -> None:
    nodes = SpireNodeParser(unit=unit).get_nodes_from_documents([LIDocument(id_="w.html", text=PAGE)])
    pieces = SpireTransformer(unit=unit).split(LCDocument(id="w.html", page_content=PAGE))
    assert nodes and len(nodes) == len(pieces)
    assert [n.node_id for n in nodes] == [p.id for p in pieces]
    assert len({p.id for p in pieces}) == len(pieces)  # block units too: ids come from the full path set
    for node, piece in zip(nodes, pieces, strict=True):
        spire_li = {k: v for k, v in node.metadata.items() if k in SPIRE_KEYS}
        spire_lc = {k: v for k, v in piece.metadata.items() if k in SPIRE_KEYS}
        assert spire_li == spire_lc and set(spire_li) == {"spire_doc_id", "spire_paths", "spire_begin", "spire_schema"}
        assert node.get_content() == piece.page_content
        assert node.node_id == unit_id("w.html", decode_paths(spire_li["spire_paths"]))


def test_unit_ids_depend_on_the_whole_path_set_and_the_namespace() -> None:
    import uuid

    one, two = frozenset({(0, 1)}), frozenset({(0, 1), (0, 2)})
    assert unit_id("p", one) != unit_id("p", two)  # the same begin path, different units
    assert unit_id("p", one) != unit_id("q", one)
    assert unit_id("p", two) == unit_id("p", list(reversed(sorted(two))))
    assert unit_id("p", one) != unit_id("p", one, namespace=uuid.uuid5(uuid.NAMESPACE_URL, "other"))


def test_metadata_round_trips_a_subdocument() -> None:
    doc = parse_html(PAGE, doc_id="w.html")
    chosen = [Citation("w.html", s.paths, s.own_text, 0.5) for s in seeds(doc)[1:3]]
    (sub,) = subdocuments(chosen, {"w.html": doc})
    assert sub.seeds == chosen[0].paths | chosen[1].paths and sub.seeds < sub.paths
    assert sub.score == 0.5 and sub.cost > 0 and "Widgets" in sub.text
    back = from_metadata(to_metadata(sub), sub.text)
    assert back == sub
    assert from_metadata({"lang": "en"}, "x") is None
    rescored = from_metadata(to_metadata(sub), sub.text, score=0.9)
    assert isinstance(rescored, Subdocument) and rescored.score == 0.9


def test_citation_records_read_metadata_as_citations_write_it() -> None:
    """``spire query --json`` and ``spire serve`` give each citation as stored (not decoded and
    encoded again): the same records as the citations' own ``key`` and ``to_dict``."""
    doc = parse_html(PAGE, doc_id="w.html")
    chosen = [Citation("w.html", s.paths, s.own_text, 0.5 - k / 10) for k, s in enumerate(seeds(doc))]
    (sub,) = subdocuments(chosen, {"w.html": doc})
    meta = to_metadata(sub)
    expected = [{"id": c.key(), **c.to_dict()} for c in citations_from(meta)]
    assert len(expected) == len(chosen) and citation_records(meta) == expected
    assert any("Red widgets weigh 5 g." in r["text"] for r in expected)
    # a record written by hand (paths as lists) is read through Citation: its paths encoded
    (hand,) = citation_records({"spire_citations": [{"doc_id": "w.html", "paths": [[1, 0], [0]], "text": "t"}]})
    assert hand == {"id": "w.html#0,1.0", "doc_id": "w.html", "paths": "0,1.0", "text": "t"}


def test_both_adapters_give_a_result_the_unit_id_of_its_path_set_in_the_result_namespace() -> None:
    from spire_core.results.schema import RESULT_NAMESPACE, result_id
    from spire_langchain.retriever import result_document
    from spire_llamaindex.retriever import result_node

    doc = parse_html(PAGE, doc_id="w.html")
    chosen = [Citation("w.html", s.paths, s.own_text, 0.5) for s in seeds(doc)[1:3]]
    (sub,) = subdocuments(chosen, {"w.html": doc})
    expected = unit_id("w.html", sub.paths, namespace=RESULT_NAMESPACE)
    assert result_id(to_metadata(sub)) == expected != unit_id("w.html", sub.paths)
    assert result_node(sub, None).node.node_id == expected
    assert result_document(sub).id == expected


def test_both_adapters_share_one_option_vocabulary() -> None:
    import pydantic
    from langchain_core.embeddings import FakeEmbeddings
    from langchain_core.stores import InMemoryStore
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core.storage.docstore import SimpleDocumentStore

    from spire_core import BudgetError
    from spire_core.options import DEFAULT_BUDGET, DEFAULT_FILL, DEFAULT_FIRST_K, DEFAULT_MAX_ROUNDS, DEFAULT_SIZE
    from spire_langchain import SpireRetriever as LCRetriever
    from spire_llamaindex import SpireRetriever as LIRetriever

    def lc(**options: object) -> LCRetriever:
        return LCRetriever(vectorstore=InMemoryVectorStore(FakeEmbeddings(size=4)), docstore=InMemoryStore(), **options)

    def li(**options: object) -> LIRetriever:
        return LIRetriever(lambda k: None, SimpleDocumentStore(), **options)  # type: ignore[arg-type]

    for retriever in (lc(), li()):
        options = retriever.options
        assert (options.budget, options.first_k, options.max_rounds, options.fill) == (
            DEFAULT_BUDGET,
            DEFAULT_FIRST_K,
            DEFAULT_MAX_ROUNDS,
            DEFAULT_FILL,
        )
        assert options.size is DEFAULT_SIZE
    with pytest.raises(pydantic.ValidationError):
        lc(budget=0)
    with pytest.raises(BudgetError):
        li(budget=0)
    assert li(first_k=5).options.first_k == 5


def test_metadata_carries_its_schema_version_and_a_newer_one_is_refused() -> None:
    from spire_core import SpireError
    from spire_core.results.schema import SCHEMA, SCHEMA_VERSION, unit_metadata, unit_of

    meta = unit_metadata("a.html", [(1, 0)], (1, 0))
    assert meta[SCHEMA] == SCHEMA_VERSION
    assert unit_of(meta) == ("a.html", frozenset({(1, 0)}))
    assert unit_of({k: v for k, v in meta.items() if k != SCHEMA}) is not None  # written before the key existed
    with pytest.raises(SpireError, match="schema"):
        unit_of({**meta, SCHEMA: SCHEMA_VERSION + 1})


def test_unit_ids_survive_the_separator_change() -> None:
    import uuid

    from spire_core.results.schema import DOC_ID, PATHS, RESULT_NAMESPACE, UNIT_NAMESPACE, result_id, unit_id

    # ids are hashed in schema version 1's spelling: units indexed before keep their ids
    assert unit_id("page.html", [(1, 0, 3), (1, 0, 4)]) == str(uuid.uuid5(UNIT_NAMESPACE, "page.html#1.0.3;1.0.4"))
    old, new = ({DOC_ID: "page.html", PATHS: p} for p in ("1.0.3;1.0.4", "1.0.3,1.0.4"))
    assert result_id(old) == result_id(new) == str(uuid.uuid5(RESULT_NAMESPACE, "page.html#1.0.3;1.0.4"))
