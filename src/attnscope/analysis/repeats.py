"""Where an input repeats itself: the patterns duplicate-token and induction heads follow.

These are TransformerLens's head-detector patterns (``head_detector.py``),
written from their definitions. Tokens are compared by the tokenizer's raw
strings (one string per vocabulary entry); padding never matches.

- duplicate: ``P[i, j] = 1`` when key ``j < i`` is the same token as query ``i``.
- induction: ``P[i, j] = 1`` when the token *before* key ``j`` is the same token
  as query ``i`` and ``j - 1 < i`` (``j <= i``): the head looks at what followed
  the earlier occurrence.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from attnscope.trace import Tokens

Pattern = npt.NDArray[np.float64]


def duplicate_pattern(tokens: Tokens) -> Pattern:
    """``(n, n)``: 1 where key ``j < i`` repeats query token ``i``.

    Examples
    --------
    >>> duplicate_pattern(Tokens(["a", "b", "a"])).astype(int).tolist()
    [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    """
    raw = np.array(tokens.raw, dtype=object)
    usable = np.array([k != "padding" for k in tokens.kinds], dtype=bool)
    same = (raw[:, None] == raw[None, :]) & usable[:, None] & usable[None, :]
    pattern: Pattern = np.tril(same, k=-1).astype(np.float64)
    return pattern


def induction_pattern(tokens: Tokens) -> Pattern:
    """``(n, n)``: 1 where the token before key ``j`` repeats query token ``i`` (``j <= i``).

    Examples
    --------
    >>> induction_pattern(Tokens(["a", "b", "a"])).astype(int).tolist()
    [[0, 0, 0], [0, 0, 0], [0, 1, 0]]
    """
    duplicate = duplicate_pattern(tokens)
    shifted = np.zeros_like(duplicate)
    shifted[:, 1:] = duplicate[:, :-1]
    return np.tril(shifted)
