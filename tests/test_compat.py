"""The adapters use LlamaIndex's and LangChain's public API; what cannot sits in one ``compat`` module per
adapter, each function checked on named framework versions (issue 51, "public framework APIs only").

- An AST check: no ``x._name`` (nor ``getattr(x, "_name")``) outside the compat modules where ``x`` is
  not ``self`` or ``cls``, unless :data:`ALLOWED` says why; no ``self._name`` that our code never
  defines (a framework base class's private member reached through ``self``).
- Per compat function: the installed framework is within the versions it was checked on
  (``CHECKED_ON``), and the private member it reads is there and means what the function says. An
  upgrade of ``constraints.txt`` past a checked version fails here, not in a user's hands.
- ``constraints-lowest.txt`` (CI's lowest-versions run) pins each framework package at the floor
  ``pyproject.toml`` declares, and every compat range covers it and the pinned version.
"""

from __future__ import annotations

import ast
import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
#: the packages that talk to the frameworks (spire_app: the product, built on an adapter, when present)
PACKAGES = ("spire_llamaindex", "spire_langchain", "spire_runtime", "spire_app")
COMPAT = (ROOT / "spire_llamaindex" / "compat.py", ROOT / "spire_langchain" / "compat.py")

#: private names that may be read on an object other than ``self``/``cls``, each with why
ALLOWED: dict[str, str] = {
    "_replace": "namedtuple's public API (urlsplit's SplitResult), underscored only so that no field name clashes",
}
#: our own private members read on another object, as (module name, member): why it is not public
OWN: dict[tuple[str, str], str] = {
    ("json_files", "_packed"): (
        "PackedKVStore.from_persist_path, a classmethod of the same class, fills the instance it has just made"
    ),
    ("indexing", "_lexicon"): (
        "PageIndexing.from_documents, a classmethod of the retriever's own mixin (which declares _lexicon and "
        "keeps it in step with the stores), builds the lexical index of the retriever it has just made"
    ),
}


def _sources() -> list[Path]:
    return sorted(f for p in PACKAGES if (ROOT / p).is_dir() for f in (ROOT / p).rglob("*.py"))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_names() -> set[str]:
    """Every private name our code defines: functions, classes, module and class attributes, and
    attributes assigned on ``self``/``cls`` (spire_core's too)."""
    names: set[str] = set()
    for path in [*_sources(), *sorted((ROOT / "spire_core").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.id if isinstance(node, ast.Name) else node.attr)
    return {n for n in names if _private(n)}


def _accesses(path: Path) -> list[tuple[int, str, str]]:
    """``(line, object, member)`` of each private member read on an object in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            found.append((node.lineno, ast.unparse(node.value), node.attr))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append((node.lineno, ast.unparse(node.args[0]), node.args[1].value))
    return found


def test_no_private_framework_member_outside_the_compat_modules() -> None:
    ours = _defined_names()
    wrong = []
    for path in _sources():
        if path in COMPAT:
            continue
        for line, obj, member in _accesses(path):
            where = f"{path.relative_to(ROOT)}:{line}: {obj}.{member}"
            if obj in ("self", "cls"):
                if member not in ours:  # a framework base class's
                    wrong.append(where)
            elif member not in ALLOWED and (path.stem, member) not in OWN:
                wrong.append(where)
    assert not wrong, (
        "private members read outside spire_llamaindex/compat.py and spire_langchain/compat.py (a framework's: "
        "move it to its adapter's compat module, checked on named versions; our own: make it public):\n"
        + "\n".join(wrong)
    )


def test_the_check_finds_what_it_is_for(tmp_path: Path) -> None:
    """The AST check sees each shape of a private read (and not a public one)."""
    source = tmp_path / "probe.py"
    source.write_text(
        "def f(index, self):\n"
        "    index._embed_model.x\n"
        "    getattr(index, '_kwargs', None)\n"
        "    self._get_nodes_with_embeddings()\n"
        "    index.vector_store.query\n"
        "    index.__class__\n"
    )
    assert [(obj, member) for _, obj, member in sorted(_accesses(source))] == [
        ("index", "_embed_model"),
        ("index", "_kwargs"),
        ("self", "_get_nodes_with_embeddings"),
    ]
    assert "_get_nodes_with_embeddings" not in _defined_names()  # a VectorIndexRetriever private: flagged through self


def test_the_allowed_own_members_are_ours_and_still_read() -> None:
    ours = _defined_names()
    read = {(path.stem, member) for path in _sources() for _, _, member in _accesses(path)}
    for module, member in OWN:
        assert member in ours, f"{member} is not defined by our code: it belongs in a compat module"
        assert (module, member) in read, f"OWN lists {module}.{member}, which nothing reads any more: remove it"


# -- the compat functions, each on the versions it was checked on ------------------------------------


def _compat_modules() -> list[ModuleType]:
    from spire_langchain import compat as langchain_compat
    from spire_llamaindex import compat as llamaindex_compat

    return [llamaindex_compat, langchain_compat]


def _within(function: str, checked: dict[str, tuple[str, str, str]]) -> None:
    package, lowest, highest = checked[function]
    installed = Version(version(package))
    assert Version(lowest) <= installed <= Version(highest), (
        f"{package} {installed} is installed; compat.{function} was checked on {lowest} to {highest} only: "
        f"check that the private member it reads still means the same in {installed}, then widen its CHECKED_ON"
    )


@pytest.mark.parametrize("module", _compat_modules(), ids=lambda m: m.__name__)
def test_every_compat_function_names_the_versions_it_was_checked_on(module: ModuleType) -> None:
    functions = {
        name
        for name, f in inspect.getmembers(module, inspect.isfunction)
        if f.__module__ == module.__name__ and not name.startswith("_")
    }
    assert functions == set(module.CHECKED_ON)
    for name in functions:
        doc = inspect.getdoc(getattr(module, name)) or ""
        assert "Why private:" in doc, f"{module.__name__}.{name} does not say why it needs a private member"


def test_index_embed_model() -> None:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from spire_llamaindex import compat

    _within("index_embed_model", compat.CHECKED_ON)
    model = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex([], embed_model=model)
    assert compat.index_embed_model(index) is model  # the model given, not Settings'


def test_chosen_embed_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_index.core import Settings
    from llama_index.core.embeddings import MockEmbedding

    from spire_llamaindex import compat
    from spire_llamaindex.index import settings_embed_model

    _within("chosen_embed_model", compat.CHECKED_ON)
    monkeypatch.setattr(Settings, "_embed_model", None)
    assert compat.chosen_embed_model() is None  # unset, and not resolved to OpenAI's default by asking
    assert type(settings_embed_model()).__name__ == "FastEmbedEmbedding"  # SPIRE's packaged model instead
    model = MockEmbedding(embed_dim=8)
    Settings.embed_model = model  # the public setter sets what the function reads
    assert compat.chosen_embed_model() is model and settings_embed_model() is model


def test_llamaindex_sentence_transformer() -> None:
    from sentence_transformers import SentenceTransformer

    from spire_llamaindex import compat, default_embeddings

    _within("sentence_transformer", compat.CHECKED_ON)
    embed = default_embeddings(runtime="torch")
    model = compat.sentence_transformer(embed)  # type: ignore[arg-type]
    assert isinstance(model, SentenceTransformer)
    # the wrapped model is the one that embeds: same vector through either
    text = "The valid range of checkpoint_timeout is between 30 seconds and one day."
    assert model.encode([text], normalize_embeddings=True)[0].tolist() == pytest.approx(
        embed.get_text_embedding(text), abs=1e-3
    )


def test_gives_relevance_scores() -> None:
    from langchain_community.vectorstores import FAISS
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

    from spire_langchain import compat

    _within("gives_relevance_scores", compat.CHECKED_ON)
    assert callable(VectorStore._select_relevance_score_fn)
    assert callable(VectorStore._similarity_search_with_relevance_scores)
    embeddings = DeterministicFakeEmbedding(size=8)
    texts = ["checkpoint_timeout is between 30 seconds and one day", "a row can hold 1.6 TB"]
    memory = InMemoryVectorStore.from_texts(texts, embeddings)
    faiss = FAISS.from_texts(texts, embeddings)
    assert not compat.gives_relevance_scores(memory)
    with pytest.raises(NotImplementedError):  # what the function spares a query to find out
        memory.similarity_search_with_relevance_scores(texts[0], k=1)
    assert compat.gives_relevance_scores(faiss)
    [(document, score)] = faiss.similarity_search_with_relevance_scores(texts[0], k=1)
    assert document.page_content == texts[0] and 0.0 <= score <= 1.0
    overridden = InMemoryVectorStore(embeddings)
    overridden.override_relevance_score_fn = lambda distance: distance  # type: ignore[attr-defined]
    assert compat.gives_relevance_scores(overridden)


def test_langchain_sentence_transformer() -> None:
    from sentence_transformers import SentenceTransformer

    from spire_langchain import compat, default_embeddings

    _within("sentence_transformer", compat.CHECKED_ON)
    embeddings = default_embeddings(runtime="torch")
    model = compat.sentence_transformer(embeddings)  # type: ignore[arg-type]
    assert isinstance(model, SentenceTransformer)
    text = "The valid range of checkpoint_timeout is between 30 seconds and one day."
    assert model.encode([text], normalize_embeddings=True)[0].tolist() == pytest.approx(
        embeddings.embed_query(text), abs=1e-3
    )


# -- the lowest versions CI runs the adapter tests on --------------------------------------------------

#: the framework packages: LlamaIndex's and LangChain's distributions
FRAMEWORK = re.compile(r"^(llama-index|langchain)(-|$)")


def _pins(path: Path) -> dict[str, Version]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, pinned = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = Version(pinned.strip())
    return pins


def _floors() -> dict[str, Version]:
    """The framework packages pyproject.toml names, each with the floor it declares."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    floors: dict[str, Version] = {}
    for requirement in (Requirement(r) for group in extras.values() for r in group):
        name = requirement.name.lower()
        lows = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
        if FRAMEWORK.match(name) and lows:
            floors[name] = max([*lows, floors.get(name, lows[0])])
    return floors


def _lowest_inputs() -> set[str]:
    """The packages the lowest-versions run installs: .ci/lowest.in's and the extras it names."""
    lines = [line.split("#", 1)[0].strip() for line in (ROOT / ".ci" / "lowest.in").read_text().splitlines()]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names: set[str] = set()
    for line in filter(None, lines):
        if line.startswith("-e"):
            names |= {Requirement(r).name.lower() for e in re.findall(r"\w+", line.split("[", 1)[1]) for r in extras[e]}
        else:
            names.add(Requirement(line).name.lower())
    return names


def test_the_lowest_constraints_pin_the_declared_floors() -> None:
    lowest = _pins(ROOT / "constraints-lowest.txt")
    floors = {name: floor for name, floor in _floors().items() if name in _lowest_inputs()}
    assert {"llama-index-core", "langchain-core"} <= set(floors)
    wrong = {name: (str(floor), str(lowest.get(name))) for name, floor in floors.items() if lowest.get(name) != floor}
    assert not wrong, f"pyproject floor vs constraints-lowest.txt (regenerate it, .ci/lowest.in): {wrong}"


@pytest.mark.parametrize("module", _compat_modules(), ids=lambda m: m.__name__)
def test_compat_ranges_cover_both_ci_runs(module: ModuleType) -> None:
    """Each compat function was checked on the versions CI runs: the lowest and the pinned."""
    lowest, pinned = _pins(ROOT / "constraints-lowest.txt"), _pins(ROOT / "constraints.txt")
    for function, (package, low, high) in module.CHECKED_ON.items():
        assert Version(low) <= lowest[package] and pinned[package] <= Version(high), (function, package)


def test_kv_collections_and_kv_collection(tmp_path: Path) -> None:
    """PackedKVStore, through them: a value put is read back, persisted to SimpleKVStore's file and
    read from it by LlamaIndex's own SimpleKVStore."""
    from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore

    from spire_llamaindex import compat
    from spire_llamaindex.json_files import PackedKVStore

    _within("kv_collections", compat.CHECKED_ON)
    _within("kv_collection", compat.CHECKED_ON)
    store = PackedKVStore()
    store.put("page", {"text": "The valid range is between 30 seconds and one day."}, collection="docs")
    assert set(compat.kv_collections(store)) == {"docs"}
    assert compat.kv_collection(store, "docs") is compat.kv_collections(store)["docs"]
    store.persist(str(tmp_path / "kv.json"))
    plain = SimpleKVStore.from_persist_path(str(tmp_path / "kv.json"))
    assert plain.get("page", collection="docs") == {"text": "The valid range is between 30 seconds and one day."}


def test_vector_store_fs(tmp_path: Path) -> None:
    """ArrayVectorStore persists to the filesystem its SimpleVectorStore base was given."""
    import fsspec

    from spire_llamaindex import compat
    from spire_llamaindex.array_store import ArrayVectorStore

    _within("vector_store_fs", compat.CHECKED_ON)
    fs = fsspec.filesystem("memory")
    store = ArrayVectorStore(fs=fs)
    assert compat.vector_store_fs(store) is fs
    store.persist("/spire-test/vectors.json")
    assert fs.exists("/spire-test/vectors.json")
