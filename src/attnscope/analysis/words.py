"""Subword pieces merged into words, as Clark et al. (2019) do for word-level attention.

Attention *to* a word is the sum over its pieces (keys); attention *from* a
word is the mean over its pieces (queries), so each word's row still sums to
1. Word boundaries are the views' piece marks, which the tokens compute once
(:attr:`attnscope.Tokens.word_ids`): WordPiece continues a word with ``##``;
byte-level BPE (``Ġ``) and SentencePiece (``▁``) start one; punctuation,
special and padding tokens stay words of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import Float64Array
from attnscope.errors import AttnscopeError
from attnscope.trace import Tokens


def word_ids(tokens: Tokens) -> list[int]:
    """The word each token belongs to, numbered from 0 in order (:attr:`Tokens.word_ids`).

    Examples
    --------
    >>> word_ids(Tokens(["[CLS]", "play", "##ing", "cards", "[SEP]"],
    ...                 kinds=["special", "token", "token", "token", "special"]))
    [0, 1, 1, 2, 3]
    >>> word_ids(Tokens.from_strings(["The", "Ġcat", "s", "Ġsat"]))
    [0, 1, 1, 2]
    """
    return list(tokens.word_ids)


def word_labels(tokens: Tokens) -> list[str]:
    """One display label per word: its pieces' labels joined.

    Examples
    --------
    >>> word_labels(Tokens.from_strings(["[CLS]", "play", "##ing", "[SEP]"]))
    ['[CLS]', 'playing', '[SEP]']
    """
    labels: list[str] = []
    for word, label in zip(tokens.word_ids, tokens.labels, strict=True):
        if word == len(labels):
            labels.append(label)
        else:
            labels[word] += label
    return labels


def merge_words(
    weights: Float64Array, query_words: Sequence[int], key_words: Sequence[int]
) -> Float64Array:
    """Merge pieces into words: sum over each word's key pieces, mean over its query pieces.

    Parameters
    ----------
    weights
        ``(..., q_len, k_len)`` attention.
    query_words, key_words
        The word of each query and each key token (:func:`word_ids`).

    Returns
    -------
    numpy.ndarray
        ``(..., query words, key words)``.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[0.5, 0.25, 0.25], [0.0, 0.5, 0.5], [0.5, 0.25, 0.25]])
    >>> merge_words(a, [0, 1, 1], [0, 1, 1]).tolist()
    [[0.5, 0.5], [0.25, 0.75]]
    """
    array = np.asarray(weights, dtype=np.float64)
    q_ids, k_ids = np.asarray(query_words), np.asarray(key_words)
    if array.ndim < 2 or array.shape[-2:] != (q_ids.size, k_ids.size):
        raise AttnscopeError(
            f"weights has shape {array.shape} but there are {q_ids.size} query and "
            f"{k_ids.size} key word ids; pass one word id per query row and key column."
        )
    to_keys = _membership(k_ids)  # (k_len, key words)
    from_queries = _membership(q_ids)
    from_queries = from_queries / from_queries.sum(axis=0, keepdims=True)
    merged: Float64Array = np.einsum("...qk,kw,qv->...vw", array, to_keys, from_queries)
    return merged


def _membership(ids: npt.NDArray[np.int_]) -> Float64Array:
    """``(tokens, words)``: 1 where the token belongs to the word."""
    if ids.size and (ids.min() != 0 or np.any(np.diff(np.unique(ids)) != 1)):
        raise AttnscopeError(
            f"word ids {ids.tolist()} must number the words 0, 1, 2, ... with none skipped "
            "(use attnscope.analysis.word_ids)."
        )
    out = np.zeros((ids.size, int(ids.max()) + 1 if ids.size else 0))
    out[np.arange(ids.size), ids] = 1.0
    return out
