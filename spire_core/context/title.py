"""Title rule (Definition 4): the ``<title>``, else the first ``<h1>``, else nothing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .policy import Rule

if TYPE_CHECKING:
    from ..document import Document


class TitleRule(Rule):
    name = "title"

    def constant(self, doc: Document) -> Iterable[int]:
        i = doc.title_index
        return () if i is None else (i,)
