"""The aggregations the views draw: over heads, and over several query tokens.

Each reads one layer a block of rows at a time
(:func:`attnscope.analysis.access.layer_rows`) and sums in float32. ``layer``
is the model's layer number, as in :func:`attnscope.head_stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from attnscope.analysis.access import Float64Array, layer_rows, pick_stream
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    from torch import Tensor


class HeadMean:
    """The mean over heads of one layer, float32 ``(q_len, k_len)``, fed a block of rows at a time.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> from attnscope.analysis.access import layer_rows
    >>> s = AttentionStream(np.stack([np.eye(2), np.full((2, 2), 0.5)])[None].astype(np.float32))
    >>> mean = HeadMean(s.q_len, s.k_len, s.num_heads)
    >>> for rows, _, weights in layer_rows(s, 0):
    ...     mean.add(rows, weights)
    >>> mean.result().tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """

    def __init__(self, q_len: int, k_len: int, num_heads: int) -> None:
        import torch

        self.total = torch.zeros((q_len, k_len))
        self.num_heads = num_heads

    def add(self, rows: slice, weights: Tensor) -> None:
        """Add ``(heads, len(rows), width)`` weights of query ``rows`` (each head's rows once).

        ``width`` is ``k_len``, or less when the later keys have weight 0 in these rows.
        """
        self.total[rows, : weights.shape[-1]] += weights.sum(dim=0)

    def result(self) -> Tensor:
        """The mean over the ``num_heads`` heads added."""
        mean: Tensor = self.total.div_(self.num_heads)
        return mean


def layer_mean(
    stream: AttentionStream, position: int, heads: Sequence[int] | None = None
) -> Tensor:
    """The mean over ``heads`` (None: all) of one layer's weights, float32 ``(q_len, k_len)``.

    Examples
    --------
    >>> import numpy as np
    >>> layer_mean(AttentionStream(np.full((1, 3, 1, 2), 0.5, np.float32)), 0).tolist()
    [[0.5, 0.5]]
    """
    mean = HeadMean(stream.q_len, stream.k_len, stream.num_heads if heads is None else len(heads))
    for rows, _, weights in layer_rows(stream, position, heads, narrow=True):
        mean.add(rows, weights)
    return mean.result()


def _chosen(
    trace: AttentionTrace, layer: int, stream: str | None, heads: Sequence[int] | None
) -> tuple[AttentionStream, int, list[int] | None]:
    """The stream, the layer's position in it and the picked heads (None: all), checked."""
    chosen = pick_stream(trace, stream)
    position = _position(chosen, layer)
    if heads is None:
        return chosen, position, None
    picked = _indices(heads, chosen.num_heads, "heads", "heads")
    if not picked:
        raise AttnscopeError("heads=[] selects no head; pass None for every head.")
    return chosen, position, picked


def _position(stream: AttentionStream, layer: int) -> int:
    if isinstance(layer, bool) or not isinstance(layer, int | np.integer):
        raise AttnscopeTypeError(
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
    mean: Float64Array = layer_mean(*_chosen(trace, layer, stream, heads)).double().numpy()
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
    import torch

    chosen, position, picked = _chosen(trace, layer, stream, heads)
    most = torch.full((chosen.q_len, chosen.k_len), -torch.inf)
    for rows, _, weights in layer_rows(chosen, position, picked):
        block = most[rows]  # a view: the maximum is written into ``most``
        torch.maximum(block, weights.amax(dim=0), out=block)
    out: Float64Array = most.double().numpy()
    return out


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
