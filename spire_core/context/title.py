"""Title rule (Definition 4): the ``<title>``, else the first ``<h1>``, else nothing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from spire_core.context.headers import heading_label
from spire_core.context.policy import Rule
from spire_core.document.tree import HEADING_LEVELS

if TYPE_CHECKING:
    from spire_core.document.tree import Document


class TitleRule(Rule):
    name = "title"

    def constant(self, doc: Document) -> Iterable[int]:
        i = doc.title_index
        if i is None:
            return ()
        return heading_label(doc, i) if doc.tag[i] in HEADING_LEVELS else (i,)
