"""One vocabulary of options: the names, types and defaults every layer (core, adapters, CLI) uses.

Adapters and the CLI import their defaults from here, so the same ``budget`` buys the same
evidence everywhere.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Literal

from spire_core.size import SizeFn, approx_tokens

#: Rendering of a path set.
Fmt = Literal["markdown", "text"]
#: What one indexed unit is: a sentence, a whole block leaf, or a passage (consecutive
#: sentences of one section, embedded together and cited sentence by sentence).
Unit = Literal["sentence", "block", "passage"]
#: What the evidence filter does with an answer it cannot use.
OnError = Literal["keep", "raise"]
#: What a bulk indexing call does with a page that fails: stop, or report it and index the rest.
OnPageError = Literal["raise", "skip"]

#: Tokens of evidence delivered per query.
DEFAULT_BUDGET = 1000
#: Size a result is grown toward by local context before filtering.
DEFAULT_TARGET = 400
#: Hits fetched in the first search round (the prefix then doubles while under budget).
DEFAULT_FIRST_K = 32
#: Share of the budget under which the search prefix keeps growing.
DEFAULT_FILL = 0.9
#: Search rounds at most (the prefix doubles each round).
DEFAULT_MAX_ROUNDS = 4
#: The size function budgets and targets count with, in the core and both adapters: the same
#: ``budget`` buys the same evidence everywhere, whatever is installed (the benchmark judge counts so too).
DEFAULT_SIZE: SizeFn = approx_tokens
#: The unit the adapters and the ``spire`` CLI index by default.
DEFAULT_UNIT: Unit = "passage"
#: Tokens of own and context text a passage is packed up to (``spire_core.indexing.passages``).
DEFAULT_PASSAGE_TOKENS = 160
#: Tokens the packaged embedding model reads (all-MiniLM-L6-v2): no passage renders longer, bar one sentence.
MODEL_WINDOW = 256
#: Share of the budget the table views may take from lower-ranked seeds (:mod:`spire_core.query.table_views`).
DEFAULT_TABLE_SHARE = 0.9
#: Tables that get a view at most, best-ranked first.
DEFAULT_TABLE_VIEWS = 3
#: Follow the references of cited sentences one hop into the corpus (:mod:`spire_core.query.references`).
DEFAULT_RESOLVE_REFS = False
#: The citation cut (:class:`spire_core.query.strength.Cut`): at most this many citations are named
#: as evidence, each at least ``DEFAULT_MIN_SCORE`` strong and at least ``DEFAULT_RELATIVE_SCORE``
#: times the strongest (tuned on the docs and wtq dev sets; docs/benchmarks.md, "Ranked evidence").
DEFAULT_MAX_CITATIONS: int | None = 12
DEFAULT_MIN_SCORE = 0.0
DEFAULT_RELATIVE_SCORE = 0.4


def check_options(where: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise ``TypeError`` naming the options in ``given`` that ``where`` does not know (a typo such as
    ``budgt=``, with the closest known name) and the ones it does: before any work is done."""
    valid = sorted(set(known))
    unknown = [name for name in given if name not in valid]
    if not unknown:
        return
    hints = [
        f"{name!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(name, valid, 1)) else repr(name)
        for name in unknown
    ]
    raise TypeError(f"{where}: unknown option(s) {', '.join(hints)}; valid: {', '.join(valid)}")
