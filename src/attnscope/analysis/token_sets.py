"""Which tokens a statistic counts: [CLS]-like, [SEP]-like, punctuation, padding.

Special tokens come from the trace's token kinds, not from their spelling, so
the same rule covers ``[CLS]``/``[SEP]`` (BERT), ``<s>``/``</s>`` (RoBERTa, T5)
and ``<|begin_of_text|>`` (Llama 3): the special tokens before the first
ordinary token play the part of ``[CLS]``, every other special token that of
``[SEP]``. Punctuation is read from the display labels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from attnscope.trace import TokenKind, Tokens

BoolVector = npt.NDArray[np.bool_]

PUNCTUATION = (".", ",")
"""The labels Clark et al. (2019) count as punctuation."""


def leading_specials(kinds: Sequence[TokenKind]) -> BoolVector:
    """Special tokens before the first ordinary token: the ``[CLS]`` part.

    Examples
    --------
    >>> leading_specials(["special", "token", "special"]).tolist()
    [True, False, False]
    """
    out = np.zeros(len(kinds), dtype=bool)
    for i, kind in enumerate(kinds):
        if kind == "token":
            break
        out[i] = kind == "special"
    return out


def other_specials(kinds: Sequence[TokenKind]) -> BoolVector:
    """Special tokens after the first ordinary token: the ``[SEP]`` part.

    Examples
    --------
    >>> other_specials(["special", "token", "special", "token", "special"]).tolist()
    [False, False, True, False, True]
    """
    special = np.array([k == "special" for k in kinds], dtype=bool)
    return special & ~leading_specials(kinds)


def punctuation(labels: Sequence[str]) -> BoolVector:
    """Tokens whose display label, without surrounding spaces, is ``.`` or ``,``.

    Examples
    --------
    >>> punctuation(["cat", " .", ","]).tolist()
    [False, True, True]
    """
    return np.array([label.strip() in PUNCTUATION for label in labels], dtype=bool)


def of_kind(tokens: Tokens, *kinds: TokenKind) -> BoolVector:
    """True where the token's kind is one of ``kinds``.

    Examples
    --------
    >>> of_kind(Tokens(["[CLS]", "a"], kinds=["special", "token"]), "token").tolist()
    [False, True]
    """
    return np.array([k in kinds for k in tokens.kinds], dtype=bool)
