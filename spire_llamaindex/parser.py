"""SpireNodeParser: HTML Documents in, one TextNode per sentence seed out."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import Field, field_serializer, field_validator
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import default_id_func
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import BaseNode, Document, NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.utils import get_tqdm_iterable

from spire_core import HTML, NotHTMLError, Policy, SpireError, policy_named, seeds, unit_id
from spire_core.options import DEFAULT_UNIT, Fmt, Unit
from spire_core.reading.decoding import DEFAULT_MAX_BYTES, decode
from spire_core.reading.files import PAGE_SUFFIXES as PAGE_SUFFIXES  # the pages ``spire index`` reads
from spire_core.results.schema import SPIRE_KEYS, seed_metadata, user_metadata

from ._source import log, parse_source, source_text


class SpireNodeParser(NodeParser):
    """Split HTML Documents into SPIRE passages (drop-in for ``SentenceSplitter``/``HTMLNodeParser``).

    Each node's text is a passage (consecutive sentences of one section, ``unit="passage"``,
    the default), a sentence (``"sentence"``) or a block (``"block"``) rendered with its
    global context (title, active headings, list labels, table row/column labels); its
    identity is the seed path set, kept in metadata (``spire_doc_id``, ``spire_paths``,
    ``spire_begin``, and a passage's member sentences in ``spire_members``: citations stay
    sentences) and hidden from the embedded and LLM-visible text. Node ids are deterministic
    (``uuid5`` of the document id and the seed paths), and each node points to its source
    Document (``NodeRelationship.SOURCE``), so an ``IngestionPipeline`` with a docstore and
    the ``upserts`` strategy replaces a changed page's nodes instead of duplicating them.

    The document id is ``Document.id_``: keep the source Documents in a docstore under it
    (the retriever re-renders from the source). Text without HTML tags, or with metadata
    saying ``text/plain``, is read as paragraphs (:func:`spire_core.parse_text`).

    Errors: a document that is not HTML (binary data such as a PDF) or over ``max_bytes``
    raises the :mod:`spire_core.errors` exception with the document id in its message (and
    ``err.doc_id``); nothing is dropped silently. A page without text gives no nodes and a
    warning naming it.
    """

    policy: Policy = Field(default=HTML, description="Global-context policy (spire_core.HTML; NONE: bare units).")
    unit: Unit = Field(default=DEFAULT_UNIT, description="Indexed unit: passage, sentence or block leaf.")
    fmt: Fmt = Field(default="markdown", description="Rendering of node text.")
    boilerplate: bool = Field(default=True, description="Drop site chrome (navigation, footers, ...).")
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, description="Largest page accepted (bytes).")

    @field_serializer("policy")
    def _policy_name(self, policy: Policy) -> str:
        return policy.name

    @field_validator("policy", mode="before")
    @classmethod
    def _policy_by_name(cls, value: Any) -> Any:
        """A serialized policy (its name, as ``to_dict`` writes it) read back: :func:`spire_core.policy_named`."""
        return policy_named(value) if isinstance(value, str) else value

    @field_validator("id_func", mode="before")
    @classmethod
    def _id_func_from_dict(cls, value: Any) -> Any:
        """``to_dict`` writes ``id_func`` as its name, which LlamaIndex cannot read back; node ids
        here are SPIRE's own (:func:`spire_core.unit_id`), so the default stands in for it."""
        return default_id_func if isinstance(value, dict) else value

    @classmethod
    def from_defaults(cls, **options: Any) -> SpireNodeParser:
        """A parser with ``options`` (its fields), the rest defaulted: the constructor every node parser has."""
        return cls(**options)

    @classmethod
    def class_name(cls) -> str:
        return "SpireNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing pages"):
            out.extend(self.parse_node(node))
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # Metadata and relationships are set in parse_node; character offsets into the HTML
        # would be meaningless for rendered text (and costly to search on large pages).
        return nodes

    def parse_node(self, source: BaseNode) -> list[TextNode]:
        """The seed nodes of one source Document (raises a SpireError naming it when unreadable)."""
        doc_id = source.node_id
        misread = spire_decoded(source, max_bytes=self.max_bytes) is not None  # raises NotHTMLError for binary files
        try:
            doc = parse_source(
                source_text(source),
                doc_id,
                source.metadata,
                max_bytes=self.max_bytes,
                boilerplate=self.boilerplate,
            )
        except SpireError:
            raise  # it names the page; bulk callers report it once (update_index(errors="skip"))
        except Exception as err:
            err.add_note(f"while parsing document {doc_id!r}")
            raise
        if misread:
            log.warning(
                "document %r was read as UTF-8 from %s, which is not how the page is encoded: read it with "
                "spire_llamaindex.read_page, or SimpleDirectoryReader with "
                "file_extractor=spire_llamaindex.parser.spire_file_extractor() "
                "(build_index and update_index re-read it themselves)",
                doc_id,
                source.metadata.get("file_path"),
            )
        for warning in doc.warnings:
            log.warning("document %r: %s", doc_id, warning)
        units = seeds(doc, policy=self.policy, fmt=self.fmt, unit=self.unit)
        if not units:
            log.warning("document %r has no text to index: no nodes", doc_id)
            return []
        base = user_metadata(source.metadata) if self.include_metadata else {}
        embed_hidden = [*source.excluded_embed_metadata_keys, *SPIRE_KEYS]
        llm_hidden = [*source.excluded_llm_metadata_keys, *SPIRE_KEYS]
        relationships = {NodeRelationship.SOURCE: source.as_related_node_info()}
        out: list[TextNode] = []
        for seed in units:
            out.append(
                TextNode(
                    id_=unit_id(doc_id, seed.paths),
                    text=seed.text,
                    metadata={**base, **seed_metadata(doc_id, seed)},
                    excluded_embed_metadata_keys=list(embed_hidden),
                    excluded_llm_metadata_keys=list(llm_hidden),
                    metadata_separator=source.metadata_separator,
                    metadata_template=source.metadata_template,
                    text_template=getattr(source, "text_template", TextNode.model_fields["text_template"].default),
                    relationships=dict(relationships),
                )
            )
        if self.include_prev_next_rel:
            for prev, nxt in itertools.pairwise(out):
                prev.relationships[NodeRelationship.NEXT] = _neighbour(nxt)
                nxt.relationships[NodeRelationship.PREVIOUS] = _neighbour(prev)
        return out


def _neighbour(node: TextNode) -> RelatedNodeInfo:
    """``node`` as a prev/next link, without its SPIRE keys: a neighbour's path sets in every
    node were a third of the docstore, and its own node holds them."""
    info = node.as_related_node_info()
    info.metadata = {k: v for k, v in info.metadata.items() if k not in SPIRE_KEYS}
    return info


def spire_decoded(source: BaseNode, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str | None:
    """The page file a source was read from, decoded by SPIRE, when the source's text is a
    lossy UTF-8 reading of it; else None.

    ``SimpleDirectoryReader`` reads a file without a reader of its own as UTF-8, dropping
    (``errors="ignore"``) or replacing what is not UTF-8: a Latin-1 page without a charset
    loses its accents. SPIRE decodes the bytes as a browser does (BOM, ``<meta charset>``,
    detection: :func:`spire_core.decoding.decode`). None when the source names no readable
    page file (``metadata["file_path"]``, a :data:`PAGE_SUFFIXES` suffix), when its text is
    not such a reading (already SPIRE's, or edited since), or when the file cannot be decoded;
    raises :class:`~spire_core.NotHTMLError` when the file is binary (an image or archive named
    like a page), whose UTF-8 reading would otherwise be indexed as text.
    """
    path = (source.metadata or {}).get("file_path")
    if not isinstance(path, str) or Path(path).suffix.lower() not in PAGE_SUFFIXES:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    try:
        decoded = decode(data, max_bytes=max_bytes, doc_id=source.node_id).text
    except NotHTMLError:
        raise  # a binary file (an image, an archive) named like a page: no reading of it is a page
    except SpireError:
        return None
    text = source_text(source)
    if text not in {data.decode("utf-8", errors="ignore"), data.decode("utf-8", errors="replace")}:
        return None
    return decoded if decoded != text else None


class SpireFileReader(BaseReader):
    """A ``SimpleDirectoryReader`` reader for HTML and Markdown files that decodes their bytes
    as :func:`spire_llamaindex.read_page` does (BOM, ``<meta charset>``, detection), not as UTF-8."""

    max_bytes: int = DEFAULT_MAX_BYTES

    def load_data(self, *args: Any, **load_kwargs: Any) -> list[Document]:
        """The page at ``file`` (first argument) as one ``Document`` with ``extra_info`` as metadata."""
        file = Path(load_kwargs.pop("file", None) or args[0])
        fs = load_kwargs.get("fs")
        if fs is not None:
            with fs.open(str(file), "rb") as f:
                data = f.read()
        else:
            data = file.read_bytes()
        decoded = decode(data, max_bytes=self.max_bytes, doc_id=str(file))
        if decoded.replaced:
            log.warning("document %r: %d invalid %s byte(s) replaced", str(file), decoded.replaced, decoded.encoding)
        return [Document(text=decoded.text, metadata=dict(load_kwargs.get("extra_info") or {}))]


def spire_file_extractor() -> dict[str, BaseReader]:
    """A ``SimpleDirectoryReader`` ``file_extractor``: :class:`SpireFileReader` for every :data:`PAGE_SUFFIXES` file."""
    reader = SpireFileReader()
    return dict.fromkeys(PAGE_SUFFIXES, reader)
