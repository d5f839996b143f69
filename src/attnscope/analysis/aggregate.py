"""The aggregations the views draw: over heads, and over several query tokens.

Each reads one layer (:func:`attnscope.analysis.access.layer_block`). ``layer``
is the model's layer number, as in :func:`attnscope.head_stats`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnscope.analysis.access import Float64Array, layer_block, pick_stream
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace


def _heads_block(
    trace: AttentionTrace, layer: int, stream: str | None, heads: Sequence[int] | None
) -> Float64Array:
    chosen = pick_stream(trace, stream)
    position = _position(chosen, layer)
    block = layer_block(chosen, position)
    if heads is None:
        return block
    picked = _indices(heads, chosen.num_heads, "heads", "heads")
    if not picked:
        raise AttnscopeError("heads=[] selects no head; pass None for every head.")
    return block[picked]


def _position(stream: AttentionStream, layer: int) -> int:
    if isinstance(layer, bool) or not isinstance(layer, int | np.integer):
        raise TypeError(
            f"layer must be the model's layer number (int), not {type(layer).__name__}."
        )
    try:
        return stream.layer_position(int(layer))
    except IndexError as err:
        raise AttnscopeError(str(err)) from None


def _indices(values: Sequence[int], size: int, name: str, what: str) -> list[int]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < size:
            raise AttnscopeError(
                f"{name}={list(values)!r} holds {v!r}; each must be an index 0..{size - 1} "
                f"(there are {size} {what})."
            )
        out.append(int(v))
    return out


def heads_mean(
    trace: AttentionTrace,
    layer: int,
    *,
    stream: str | None = None,
    heads: Sequence[int] | None = None,
) -> Float64Array:
    """The mean over heads of one layer's attention, ``(q_len, k_len)``: the "mean of heads" view.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> att = np.stack([np.eye(2), np.full((2, 2), 0.5)])[None].astype(np.float32)
    >>> heads_mean(AttentionTrace(["a", "b"], att), 0).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    mean: Float64Array = _heads_block(trace, layer, stream, heads).mean(axis=0)
    return mean


def heads_max(
    trace: AttentionTrace,
    layer: int,
    *,
    stream: str | None = None,
    heads: Sequence[int] | None = None,
) -> Float64Array:
    """The largest weight any head gives each (query, key) in one layer, ``(q_len, k_len)``.

    Rows do not sum to 1: it shows where *some* head looks.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> att = np.stack([np.eye(2), np.full((2, 2), 0.5)])[None].astype(np.float32)
    >>> heads_max(AttentionTrace(["a", "b"], att), 0).tolist()
    [[1.0, 0.5], [0.5, 1.0]]
    """
    most: Float64Array = _heads_block(trace, layer, stream, heads).max(axis=0)
    return most


def query_sum(weights: Float64Array, queries: Sequence[int]) -> Float64Array:
    """The attention of several query tokens summed, ``(..., k_len)`` from ``(..., q_len, k_len)``.

    What the head view draws when several query tokens are selected: how much
    the group as a whole takes from each key (a sum of ``m`` rows sums to ``m``).

    Examples
    --------
    >>> import numpy as np
    >>> query_sum(np.array([[0.5, 0.5], [1.0, 0.0]]), [0, 1]).tolist()
    [1.5, 0.5]
    """
    array = np.asarray(weights, dtype=np.float64)
    if array.ndim < 2:
        raise AttnscopeError(
            f"weights has shape {array.shape}; expected (..., q_len, k_len), e.g. one "
            "layer's (heads, q_len, k_len) or one head's (q_len, k_len)."
        )
    picked = _indices(queries, array.shape[-2], "queries", "query tokens")
    if not picked:
        raise AttnscopeError("queries=[] selects no query token; pass at least one row index.")
    total: Float64Array = array[..., picked, :].sum(axis=-2)
    return total
