"""One vocabulary of options: the names, types and defaults every layer (core, adapters, CLI) uses.

Adapters and the CLI import their defaults from here, so the same ``budget`` buys the same
evidence everywhere.
"""

from __future__ import annotations

from typing import Literal

#: Rendering of a path set.
Fmt = Literal["markdown", "text"]
#: What one seed is: a sentence, or a whole block leaf.
Unit = Literal["sentence", "block"]
#: What the evidence filter does with an answer it cannot use.
OnError = Literal["keep", "raise"]

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
