"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Each layer's heads are averaged and the residual connection is added as an
identity: ``Â_l = rownorm(mean_h A_l + I)``. Rollout multiplies these from the
first layer up: ``R_1 = Â_1``, ``R_l = Â_l · R_{l-1}``. Row ``i`` of ``R_l`` says
how much of token ``i``'s representation after layer ``l`` traces back to each
input token, if attention and the residual path were all that mixed tokens.

:func:`rollout` forms every ``R_l`` (``n x n`` each, products of two ``n x n``
matrices): up to :data:`ROLLOUT_MAX_BYTES`. :func:`rollout_row` gives the rows
of chosen queries at any length: a row vector times each layer's ``Â``, from
the top layer down, reading a block of rows at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from attnscope._progress import progress
from attnscope.analysis.access import (
    Float64Array,
    pick_stream,
    require_consecutive_layers,
    require_self_attention,
)
from attnscope.analysis.aggregate import layer_mean
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    from torch import Tensor

ROLLOUT_MAX_BYTES = 2 << 30
"""Largest ``(layers, n, n)`` float64 array :func:`rollout` returns (8000 tokens x 4 layers);
longer inputs read one query's rollout with :func:`rollout_row`."""


def residual_of(mean: Tensor) -> Tensor:
    """``Â = rownorm(mean + I)`` from a layer's head mean (float32 ``(n, n)``; left unchanged).

    Examples
    --------
    >>> import torch
    >>> residual_of(torch.full((2, 2), 0.5)).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    mixed = mean.clone()
    mixed.diagonal().add_(1.0)
    return mixed.div_(mixed.sum(dim=-1, keepdim=True))


def rollout_step(product: Tensor | None, mean: Tensor) -> Tensor:
    """``R_l = Â_l · R_{l-1}`` from the layer's head mean; ``product`` None: the first layer.

    Examples
    --------
    >>> import torch
    >>> first = rollout_step(None, torch.full((2, 2), 0.5))
    >>> rollout_step(first, torch.full((2, 2), 0.5)).tolist()
    [[0.625, 0.375], [0.375, 0.625]]
    """
    residual = residual_of(mean)
    return residual if product is None else residual @ product


def residual_attention(stream: AttentionStream, position: int) -> Float64Array:
    """``Â``: the layer's head-mean attention plus the identity, rows renormalised.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 2, 2, 2), 0.5, np.float32))
    >>> residual_attention(s, 0).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    normalised: Float64Array = residual_of(layer_mean(stream, position)).double().numpy()
    return normalised


def rollout(trace: AttentionTrace, *, stream: str | None = None) -> Float64Array:
    """Attention rollout of every layer, ``(layers, n, n)``.

    ``out[l]`` is ``R_{l+1} = Â_{l+1} · … · Â_1`` with ``Â = rownorm(mean over heads
    of A + I)`` (Abnar & Zuidema 2020); its rows sum to 1. Layers are read one
    at a time, a block of one head's rows at a time; products are float32.

    Parameters
    ----------
    trace
        The trace; the stream must be self-attention over consecutive layers.
    stream
        Which stream; None for the trace's first.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> uniform = np.full((3, 2, 4, 4), 0.25, np.float32)  # rollout: (1 - 2^-l) U + 2^-l I
    >>> r = rollout(AttentionTrace(list("abcd"), uniform))
    >>> r.shape, round(float(r[2, 0, 0]), 6) == round(7 / 8 / 4 + 1 / 8, 6)
    ((3, 4, 4), True)
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "rollout")
    require_consecutive_layers(chosen, "rollout")
    n, size = chosen.q_len, 8 * chosen.num_layers * chosen.q_len * chosen.k_len
    if size > ROLLOUT_MAX_BYTES:
        raise AttnscopeError(
            f"rollout(trace) of every query at {n} tokens is {chosen.num_layers} x {n} x {n} "
            f"float64 ({size / 2**30:.1f} GiB, over ROLLOUT_MAX_BYTES = "
            f"{ROLLOUT_MAX_BYTES / 2**30:g} GiB) and costs a product of two {n} x {n} "
            "matrices per layer. For the queries you read, use "
            "attnscope.rollout_row(trace, query) (one row, any length, streamed), or capture "
            "fewer tokens."
        )
    out = np.empty((chosen.num_layers, chosen.q_len, chosen.k_len))
    product = None
    for position in range(chosen.num_layers):
        product = rollout_step(product, layer_mean(chosen, position))
        out[position] = product.numpy()
    return out


def rollout_row(
    trace: AttentionTrace,
    query: int | Sequence[int],
    *,
    layer: int | None = None,
    stream: str | None = None,
) -> Float64Array:
    """Rollout of one query (or several) through ``layer``, at any length: ``(n,)`` or ``(m, n)``.

    Row ``query`` of ``rollout(trace)[position of layer]``, computed as the row
    vector ``e_query · Â_layer · … · Â_first`` from the top layer down. Each
    layer's ``Â`` is read a block of rows at a time (only rows up to the last
    key the vector reaches: under a causal mask, the query's own prefix), so
    memory stays ``O(n)`` plus one block, and the work is one pass over each
    layer's weights (recomputed from q and k where the trace keeps them). A
    progress bar shows past two seconds.

    Parameters
    ----------
    trace
        The trace; the stream must be self-attention over consecutive layers.
    query
        Query token index, or a sequence of them (one row each).
    layer
        The model's layer number the rollout runs through; None: the last captured.
    stream
        The stream's name (None: the trace's first).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(list("abcd"), np.full((3, 2, 4, 4), 0.25, np.float32))
    >>> np.allclose(rollout_row(t, 2), rollout(t)[2, 2])
    True
    >>> rollout_row(t, [0, 3], layer=0).shape
    (2, 4)
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "rollout")
    require_consecutive_layers(chosen, "rollout")
    queries = _queries(query, chosen.q_len)
    result = stream_rollout_rows(chosen, queries, _top_position(chosen, layer))
    return result[0] if isinstance(query, int | np.integer) else result


def stream_rollout_rows(stream: AttentionStream, queries: list[int], top: int) -> Float64Array:
    """:func:`rollout_row` of valid ``queries`` through layer position ``top``: ``(m, n)``.

    The stream is self-attention over consecutive layers (not checked here).

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((2, 1, 2, 2), 0.5, np.float32))
    >>> stream_rollout_rows(s, [0], 1).tolist()
    [[0.625, 0.375]]
    """
    import torch

    from attnscope.trace.rows import row_blocks

    n, heads = stream.q_len, stream.num_heads
    vector = torch.zeros((len(queries), n), dtype=torch.float64)
    vector[torch.arange(len(queries)), torch.tensor(queries)] = 1.0
    with progress(top + 1, "attnscope rollout", unit="layer") as bar:
        for position in range(top, -1, -1):
            reached = int(torch.nonzero(vector.abs().sum(dim=0)).max()) + 1
            out = torch.zeros_like(vector)
            for rows in row_blocks(reached, n):
                mean = sum(
                    (stream.attention_rows(position, h, rows).double() for h in range(heads)),
                    torch.zeros((rows.stop - rows.start, n), dtype=torch.float64),
                )
                mean /= heads
                within = torch.arange(rows.stop - rows.start)
                mean[within, within + rows.start] += 1.0
                mean /= mean.sum(dim=1, keepdim=True)
                out += vector[:, rows] @ mean
            vector = out
            bar.update(1)
    result: Float64Array = vector.numpy()
    return result


def _queries(query: int | Sequence[int], q_len: int) -> list[int]:
    """``query`` as a list of valid query indices, or a clear error."""
    values: list[object] = [query] if isinstance(query, int | np.integer | bool) else list(query)
    ok = bool(values) and all(
        isinstance(q, int | np.integer) and not isinstance(q, bool) and 0 <= q < q_len
        for q in values
    )
    if not ok:
        raise AttnscopeError(
            f"query={query!r} must be a token index (or a non-empty list of them) from 0 to "
            f"{q_len - 1}, the trace's {q_len} tokens; trace.tokens lists them."
        )
    return [int(q) for q in values if isinstance(q, int | np.integer)]


def _top_position(stream: AttentionStream, layer: int | None) -> int:
    """The position of the model's ``layer`` in ``stream`` (None: the last), or a clear error."""
    if layer is None:
        return stream.num_layers - 1
    if isinstance(layer, bool) or not isinstance(layer, int | np.integer):
        raise AttnscopeTypeError(
            f"layer must be the model's layer number (int) or None, not {layer!r}."
        )
    try:
        return stream.layer_position(int(layer))
    except IndexError as err:
        raise AttnscopeError(str(err)) from None
