"""Align the tokens of two inputs, so their attention can be compared position by position.

Two inputs of the same length align position by position. Otherwise the
alignment runs over the tokenizer's raw strings: runs of equal tokens align,
and so do replaced runs of equal length (a minimal pair such as "she" / "he"
replaces one token by one token); tokens inserted, deleted, or replaced by a
run of another length have no partner and are left out of the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from itertools import pairwise

from attnscope.errors import AttnscopeError

Alignment = tuple[tuple[int, int], ...]
"""Pairs ``(position in A, position in B)``, increasing in both."""


def align_tokens(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> Alignment:
    """Pair positions of ``tokens_a`` with positions of ``tokens_b``.

    Equal lengths pair position by position. Otherwise equal runs pair up,
    replaced runs of equal length pair position by position, and the other
    tokens are left unpaired.

    Examples
    --------
    >>> align_tokens(["the", "nurse", "said", "she"], ["the", "nurse", "said", "he"])
    ((0, 0), (1, 1), (2, 2), (3, 3))
    >>> align_tokens(["a", "big", "cat", "sat"], ["a", "cat", "sat"])
    ((0, 0), (2, 1), (3, 2))
    """
    if len(tokens_a) == len(tokens_b):
        return tuple((i, i) for i in range(len(tokens_a)))
    matcher = SequenceMatcher(None, list(tokens_a), list(tokens_b), autojunk=False)
    pairs: list[tuple[int, int]] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and a1 - a0 == b1 - b0):
            pairs += [(a0 + i, b0 + i) for i in range(a1 - a0)]
    return tuple(pairs)


def check_alignment(pairs: object, len_a: int, len_b: int) -> Alignment:
    """Return ``pairs`` as an :data:`Alignment`, or say what is wrong with it.

    Examples
    --------
    >>> check_alignment([(0, 0), (2, 1)], 3, 2)
    ((0, 0), (2, 1))
    >>> check_alignment([(1, 0), (0, 1)], 2, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: alignment must increase in both inputs; ...
    """
    try:
        result = tuple((int(a), int(b)) for a, b in pairs)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise AttnscopeError(
            f"alignment={pairs!r} must be a sequence of (position in A, position in B) "
            "pairs of ints, e.g. [(0, 0), (1, 1)]."
        ) from None
    if not result:
        raise AttnscopeError(
            "the two inputs share no aligned token, so there is nothing to compare; "
            "pass alignment=[(i_a, i_b), ...] naming the positions that correspond."
        )
    bad = [(a, b) for a, b in result if not (0 <= a < len_a and 0 <= b < len_b)]
    if bad:
        raise AttnscopeError(
            f"alignment pairs {bad[:3]} are out of range: A has {len_a} tokens "
            f"(0..{len_a - 1}) and B has {len_b} (0..{len_b - 1})."
        )
    if any(a1 <= a0 or b1 <= b0 for (a0, b0), (a1, b1) in pairwise(result)):
        raise AttnscopeError(
            f"alignment must increase in both inputs; got {list(result)[:6]}... — list the "
            "pairs in order, each position at most once."
        )
    return result
