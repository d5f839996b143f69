"""Where one head looked at each generation step: its strongest key, step by step.

What a retrieval head is judged on (Wu et al. 2024; :func:`attnscope.retrieval_scores`):
at the step that wrote token ``p``, the query ``p - 1``'s strongest key
``j* < p``, and whether it is a copy of a needle token. :func:`looked_at` lists
it for one head, so a head ranked high by retrieval can be read step by step.

Ties follow one rule, the one the head view's step caption reads: weights are
told apart to :data:`LEVELS` levels of their row's largest (what a page stores,
``rint(w * 255 / rowmax)``); the keys at the top level tie, and the lowest wins.
Near-ties (``0.0020712`` beside ``0.0020731``) are ties, counted in ``tied``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import pick_stream, require_self_attention
from attnscope.analysis.frames import pandas_for
from attnscope.analysis.retrieval import check_needle, check_start
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    import pandas as pd

LEVELS = 255
"""Levels of a row's largest weight that keys are told apart by (a page's ``top:`` bytes)."""


def strongest_shown(
    stream: AttentionStream, position: int, head: int, start: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each ``p >= start``: query ``p - 1``'s strongest key ``j < p`` and how many more tie.

    Keys tie when their weights round to the same of :data:`LEVELS` levels of
    the row's largest; the lowest tied key is the strongest.

    Examples
    --------
    >>> w = np.array([[1, 0, 0], [0.4995, 0.5, 0.0005], [0.2, 0.3, 0.5]], np.float32)
    >>> [a.tolist() for a in strongest_shown(AttentionStream(w[None, None]), 0, 0, 2)]
    [[0], [1]]
    """
    import torch

    from attnscope.trace.rows import row_blocks

    count = stream.q_len - start
    keys = np.empty(count, np.int64)
    tied = np.empty(count, np.int64)
    for block in row_blocks(count, stream.k_len):
        rows = slice(start - 1 + block.start, start - 1 + block.stop)
        weights = stream.attention_rows(position, head, rows).float()
        queries = torch.arange(rows.start, rows.stop)[:, None]
        weights = weights.masked_fill(torch.arange(weights.shape[1])[None, :] > queries, 0.0)
        rowmax = weights.amax(dim=1, keepdim=True)
        scale = torch.where(rowmax > 0, LEVELS / rowmax, torch.zeros_like(rowmax))  # float32
        top = torch.round(weights * scale) >= LEVELS  # rint, as the page's bytes
        top[:, 0] |= ~top.any(dim=1)  # a row without weight: key 0, as argmax gives it
        keys[block] = top.int().argmax(dim=1).numpy()  # the first (lowest) tied key
        tied[block] = top.sum(dim=1).numpy() - 1
    return keys, tied


def looked_at(
    trace: AttentionTrace,
    *,
    layer: int,
    head: int,
    start: int | None = None,
    needle: tuple[int, int] | None = None,
    stream: str | None = None,
) -> pd.DataFrame:
    """Each step's strongest key of one head: where it looked as it wrote each token.

    Parameters
    ----------
    trace
        A self-attention trace, usually of a generation (``capture(...,
        max_new_tokens=N)``).
    layer, head
        The head: the model's layer index (as in the trace's ``layers``) and head.
    start
        The first position scored; None for the first generated token.
    needle
        ``(first, stop)``, the needle's tokens, to mark copies; None for no needle.
    stream
        Which stream; None for the trace's first.

    Returns
    -------
    pandas.DataFrame
        One row per position ``p >= start``: ``step`` (0 for ``start``),
        ``position`` (``p``), ``token`` (the raw token written at ``p``),
        ``key`` (the strongest key ``j* < p`` of query ``p - 1``; the lowest of
        keys tied to :data:`LEVELS` levels of the row's largest), ``key_token``,
        ``tied`` (how many more keys tie with it);
        with a needle also ``in_needle`` and ``copy`` (``j*`` in the needle and
        holding the token written, Wu et al.'s copy).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> tokens = ["x", "a", "b", "c", "a", "b", "c"]
    >>> weights = np.zeros((1, 1, 7, 7), np.float32)
    >>> weights[0, 0, np.arange(7), np.maximum(np.arange(7) - 2, 0)] = 1  # query i -> key i - 2
    >>> df = looked_at(AttentionTrace(tokens, weights), layer=0, head=0, start=4, needle=(1, 4))
    >>> df[["step", "position", "token", "key", "key_token", "copy"]].values.tolist()
    [[0, 4, 'a', 1, 'a', True], [1, 5, 'b', 2, 'b', True], [2, 6, 'c', 3, 'c', True]]
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "looked_at")
    if layer not in chosen.layers:
        raise AttnscopeError(
            f"layer={layer!r} is not in stream {chosen.name!r}, whose layers are "
            f"{list(chosen.layers)}; pass one of them (the model's layer index)."
        )
    if not isinstance(head, int) or not 0 <= head < chosen.num_heads:
        raise AttnscopeError(
            f"head={head!r} is out of range: stream {chosen.name!r} has {chosen.num_heads} "
            f"heads (0..{chosen.num_heads - 1})."
        )
    length = chosen.q_len
    begin = check_start(start, trace, length)
    span = None if needle is None else check_needle(needle, length)
    pandas = pandas_for("attnscope.analysis.looked_at")
    keys, tied = strongest_shown(chosen, list(chosen.layers).index(layer), head, begin)
    raw = np.asarray(trace.tokens_for(chosen.key_side).raw, dtype=object).astype(str)
    written = raw[begin:]
    columns: dict[str, object] = {
        "step": np.arange(len(keys)),
        "position": np.arange(begin, length),
        "token": written,
        "key": keys,
        "key_token": raw[keys],
        "tied": tied,
    }
    if span is not None:
        inside = (keys >= span[0]) & (keys < span[1])
        columns |= {"in_needle": inside, "copy": inside & (raw[keys] == written)}
    frame: pd.DataFrame = pandas.DataFrame(columns)
    return frame
