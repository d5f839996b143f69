"""Where an input repeats itself: the patterns duplicate-token and induction heads follow.

These are TransformerLens's head-detector patterns (``head_detector.py``),
written from their definitions. Tokens are compared by the tokenizer's raw
strings (one string per vocabulary entry); padding never matches.

- duplicate: ``P[i, j] = 1`` when key ``j < i`` is the same token as query ``i``.
- induction: ``P[i, j] = 1`` when the token *before* key ``j`` is the same token
  as query ``i`` and ``j - 1 < i`` (``j <= i``): the head looks at what followed
  the earlier occurrence.

A pattern is ``n x n``; it is built a block of query rows at a time
(:func:`pattern_rows`) from one integer code per token (:func:`token_codes`),
so a long input never holds the whole of it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from attnscope.trace import Tokens

Codes = npt.NDArray[np.int64]
PatternKind = Literal["duplicate", "induction"]


def token_codes(tokens: Tokens) -> Codes:
    """One integer per token, equal where the raw strings are; each padding token its own.

    Examples
    --------
    >>> token_codes(Tokens(["a", "b", "a"])).tolist()
    [0, 1, 0]
    """
    _, codes = np.unique(np.array(tokens.raw, dtype=object), return_inverse=True)
    out: Codes = codes.astype(np.int64).reshape(-1)
    padding = np.array([k == "padding" for k in tokens.kinds], dtype=bool)
    out[padding] = -1 - np.arange(int(padding.sum()))  # negative, and no two alike
    return out


def repeats_any(codes: Codes) -> bool:
    """Whether some token repeats an earlier one: both patterns are empty otherwise.

    A duplicate ``(i, j)``, ``j < i``, puts an induction 1 at ``(i, j + 1)``,
    ``j + 1 <= i``, and every induction 1 comes from such a pair.

    Examples
    --------
    >>> repeats_any(np.array([0, 1, 0])), repeats_any(np.array([0, 1, -1, -2]))
    (True, False)
    """
    return len(np.unique(codes)) < len(codes)


def pattern_rows(codes: Codes, rows: slice, kind: PatternKind) -> npt.NDArray[np.bool_]:
    """Rows ``rows`` of the ``kind`` pattern, ``(len(rows), n)``.

    Examples
    --------
    >>> codes = token_codes(Tokens(["a", "b", "a"]))
    >>> pattern_rows(codes, slice(0, 3), "duplicate").astype(int).tolist()
    [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    >>> pattern_rows(codes, slice(2, 3), "induction").astype(int).tolist()
    [[0, 1, 0]]
    """
    n = len(codes)
    queries = np.arange(n)[rows]
    # Key column j compared with token j (duplicate) or j - 1 (induction).
    shift = 1 if kind == "induction" else 0
    compared = np.arange(n) - shift
    out = np.zeros((len(queries), n), dtype=bool)
    out[:, shift:] = codes[queries][:, None] == codes[compared[shift:]][None, :]
    out &= compared[None, :] < queries[:, None]
    return out
