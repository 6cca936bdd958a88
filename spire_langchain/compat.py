"""The private members of LangChain that SPIRE reads, each behind one function.

Everything else in :mod:`spire_langchain` uses LangChain's public API. What is here has no public
equivalent in the versions :data:`CHECKED_ON` names, each function's entry: the package whose
member it reads and the lowest and highest versions it was checked on (the lowest that
``pyproject.toml`` declares, CI's ``constraints-lowest.txt``, and the pinned one,
``constraints.txt``). ``tests/test_compat.py`` fails when the installed version is outside that
range or the member is gone, so an upgrade is caught by the tests, not by a user: check the
function on the new version, then widen its range.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.vectorstores import VectorStore

if TYPE_CHECKING:
    from langchain_huggingface import HuggingFaceEmbeddings

#: function name -> (distribution, lowest version checked, highest version checked)
CHECKED_ON: dict[str, tuple[str, str, str]] = {
    "gives_relevance_scores": ("langchain-core", "1.0.0", "1.8.3"),
    "sentence_transformer": ("langchain-huggingface", "1.0.0", "1.2.3"),
}


def gives_relevance_scores(store: VectorStore) -> bool:
    """Whether ``store`` gives relevance scores (``InMemoryVectorStore`` does not): its class
    overrides ``VectorStore._select_relevance_score_fn`` or
    ``_similarity_search_with_relevance_scores``, or it was given an ``override_relevance_score_fn``.

    Why private: the public ``similarity_search_with_relevance_scores`` exists on every store and
    raises ``NotImplementedError`` only when called (a query) on a store without the score; those
    two methods are what a store overrides to give one, and no public attribute says it does.
    """
    cls = type(store)
    return (
        cls._select_relevance_score_fn is not VectorStore._select_relevance_score_fn
        or cls._similarity_search_with_relevance_scores is not VectorStore._similarity_search_with_relevance_scores
        or getattr(store, "override_relevance_score_fn", None) is not None
    )


def sentence_transformer(embeddings: HuggingFaceEmbeddings) -> Any:
    """The ``SentenceTransformer`` that ``HuggingFaceEmbeddings`` wraps (its private ``_client``).

    Why private: ``HuggingFaceEmbeddings`` builds the model itself from ``model_name``, takes no
    ready model and exposes no accessor; SPIRE sets the model's batch padding on it
    (:func:`spire_runtime.model.pad_in_buckets`), which bounds the memory of a long indexing run.
    """
    return embeddings._client
