"""Retrieval heads (Wu et al. 2024): heads whose strongest key is the token being copied.

Wu, Wang, Xiao, Peng, Fu (2024), "Retrieval Head Mechanistically Explains
Long-Context Factuality" (arXiv:2404.15574): while the model writes out a
needle it was shown, at each decoding step a retrieval head's most attended
context token is the needle token the model is emitting. With ``p`` the
position of a generated token and ``j*`` the strongest key of the query that
produced it (position ``p - 1``; lowest index on ties, keys ``j < p``), the
step is a *copy* when ``first <= j* < stop`` and ``token[j*] == token[p]``;
the head's retrieval score is the number of distinct needle positions copied
divided by the needle's length ``stop - first``.

Only the query rows ``start - 1 .. n - 2`` are read, a block of rows of one
head at a time (:meth:`~attnscope.trace.AttentionStream.attention_rows`):
from q and k on the trace's device for a long capture, never the N x N.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import pick_stream, require_self_attention
from attnscope.analysis.frames import head_frame
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    import pandas as pd

IntArray = npt.NDArray[np.int64]


def check_needle(needle: object, length: int) -> tuple[int, int]:
    """``(first, stop)`` as ints, ``0 <= first < stop <= length``, or a clear error.

    Examples
    --------
    >>> check_needle((2, 5), 8)
    (2, 5)
    >>> check_needle((5, 2), 8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: needle=(5, 2) must be (first, stop) token positions ...
    """
    ok = (
        isinstance(needle, tuple | list)
        and len(needle) == 2
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in needle)
    )
    if ok:
        first, stop = int(needle[0]), int(needle[1])  # type: ignore[index]
        if 0 <= first < stop <= length:
            return first, stop
    raise AttnscopeError(
        f"needle={needle!r} must be (first, stop) token positions with 0 <= first < stop <= "
        f"{length} (the trace's token count): the needle is tokens first .. stop - 1."
    )


def check_start(start: object, trace: AttentionTrace, length: int) -> int:
    """The first scored position: ``start``, or the trace's first generated token.

    Examples
    --------
    >>> t = AttentionTrace(list("abc"), np.full((1, 1, 3, 3), 1 / 3, np.float32))
    >>> check_start(1, t, 3)
    1
    >>> check_start(None, t, 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: start=None needs a trace that holds a generation ...
    """
    if start is None:
        if trace.prompt_length is None:
            raise AttnscopeError(
                "start=None needs a trace that holds a generation (capture(..., "
                "max_new_tokens=N)), whose first generated token is where copying starts; "
                "this trace has none: pass start= (the first position whose token may be a copy)."
            )
        start = trace.prompt_length
    if not isinstance(start, int | np.integer) or isinstance(start, bool) or start < 1:
        raise AttnscopeError(
            f"start={start!r} must be a token position >= 1 (position p is scored by the "
            "query p - 1 that produced it)."
        )
    if start >= length:
        raise AttnscopeError(
            f"start={start} leaves no position to score: the trace has {length} tokens; "
            f"pass a start below {length} (or generate more tokens)."
        )
    return int(start)


def strongest_keys(stream: AttentionStream, position: int, head: int, start: int) -> IntArray:
    """For each ``p`` in ``start .. q_len - 1``, the strongest key ``j < p`` of query ``p - 1``.

    The lowest key index wins a tie. Rows are read a block at a time.

    Examples
    --------
    >>> w = np.array([[1, 0, 0], [0.5, 0.5, 0], [0.1, 0.8, 0.1]], np.float32)
    >>> strongest_keys(AttentionStream(w[None, None]), 0, 0, 1).tolist()
    [0, 0]
    """
    import torch

    from attnscope.trace.rows import row_blocks

    count = stream.q_len - start
    found = np.empty(count, np.int64)
    for block in row_blocks(count, stream.k_len):
        rows = slice(start - 1 + block.start, start - 1 + block.stop)
        weights = stream.attention_rows(position, head, rows)
        queries = torch.arange(rows.start, rows.stop)[:, None]
        later = torch.arange(weights.shape[1])[None, :] > queries  # keys j > p - 1: not j < p
        # argmax returns the first maximal index; -1 keeps later keys out (weights >= 0).
        found[block] = weights.masked_fill(later, -1.0).argmax(dim=1).numpy()
    return found


def retrieval_table(
    trace: AttentionTrace,
    needle: tuple[int, int],
    start: int | None = None,
    *,
    stream: str | None = None,
) -> dict[str, npt.NDArray[np.float64]]:
    """:func:`retrieval_scores` as ``{name: (layers, heads)}`` arrays (no pandas needed).

    Examples
    --------
    >>> w = np.tile(np.eye(4, dtype=np.float32), (1, 1, 1, 1))
    >>> t = AttentionTrace(list("abab"), w)
    >>> retrieval_table(t, (0, 2), start=2)["retrieval"].tolist()
    [[0.0]]
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "retrieval_scores")
    length = chosen.q_len
    first, stop = check_needle(needle, length)
    begin = check_start(start, trace, length)
    raw = trace.tokens_for(chosen.key_side).raw
    _, codes = np.unique(np.asarray(raw, dtype=object).astype(str), return_inverse=True)
    targets = codes[begin:]
    shape = (chosen.num_layers, chosen.num_heads)
    copied = np.zeros(shape)
    copy_steps = np.zeros(shape)
    for position in range(chosen.num_layers):
        for head in range(chosen.num_heads):
            keys = strongest_keys(chosen, position, head, begin)
            copies = (keys >= first) & (keys < stop) & (codes[keys] == targets)
            copied[position, head] = np.unique(keys[copies]).size
            copy_steps[position, head] = copies.sum()
    return {
        "retrieval": copied / (stop - first),
        "copied": copied,
        "copy_steps": copy_steps,
        "steps": np.full(shape, float(length - begin)),
    }


def retrieval_scores(
    trace: AttentionTrace,
    needle: tuple[int, int],
    start: int | None = None,
    *,
    stream: str | None = None,
) -> pd.DataFrame:
    """Wu et al.'s retrieval score of every head: how much of the needle it copied.

    For every position ``p >= start``, the query ``p - 1`` (the one whose output
    produced token ``p``) has a strongest key ``j*``: the key ``j < p`` with the
    largest weight, the lowest index on ties. The step is a copy when the key
    lies in the needle, ``first <= j* < stop``, and holds the token written at
    ``p``, ``raw_tokens[j*] == raw_tokens[p]``. Then::

        retrieval = |{j* of the copy steps}| / (stop - first)

    (Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context
    Factuality", eq. 1: distinct needle tokens copied over the needle's
    length). Only the rows ``start - 1 .. n - 2`` are computed, a block at a
    time, from q and k when the trace keeps those.

    Parameters
    ----------
    trace
        A self-attention trace; usually ``capture(model, prompt,
        max_new_tokens=N)`` of a prompt holding the needle.
    needle
        ``(first, stop)``: the needle is tokens ``first .. stop - 1``.
    start
        The first position scored; None for ``trace.prompt_length`` (the
        first generated token).
    stream
        Which stream; None for the trace's first.

    Returns
    -------
    pandas.DataFrame
        One row per (layer, head): ``layer``, ``head``, ``retrieval`` (in
        [0, 1]), ``copied`` (distinct needle positions copied), ``copy_steps``
        (steps that copied, repeats counted) and ``steps`` (positions scored).
        ``df.attrs`` holds ``needle``, ``start`` and ``stream``.

    Examples
    --------
    A head that at each step looks at the earlier copy of the token it writes:

    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> tokens = ["x", "a", "b", "c", "a", "b", "c"]
    >>> weights = np.zeros((1, 1, 7, 7), np.float32)
    >>> weights[0, 0, np.arange(7), np.maximum(np.arange(7) - 2, 0)] = 1  # query i -> key i - 2
    >>> df = retrieval_scores(AttentionTrace(tokens, weights), needle=(1, 4), start=4)
    >>> df[["layer", "head", "retrieval", "copied", "steps"]].values.tolist()
    [[0.0, 0.0, 1.0, 3.0, 3.0]]
    """
    table = retrieval_table(trace, needle, start, stream=stream)
    chosen = pick_stream(trace, stream)
    frame = head_frame("attnscope.retrieval_scores", chosen.layers, chosen.num_heads, table)
    frame.attrs.update(
        needle=check_needle(needle, chosen.q_len),
        start=check_start(start, trace, chosen.q_len),
        stream=chosen.name,
    )
    return frame
