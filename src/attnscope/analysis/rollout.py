"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Each layer's heads are averaged and the residual connection is added as an
identity: ``Â_l = rownorm(mean_h A_l + I)``. Rollout multiplies these from the
first layer up: ``R_1 = Â_1``, ``R_l = Â_l · R_{l-1}``. Row ``i`` of ``R_l`` says
how much of token ``i``'s representation after layer ``l`` traces back to each
input token, if attention and the residual path were all that mixed tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attnscope.analysis.access import (
    Float64Array,
    pick_stream,
    require_consecutive_layers,
    require_self_attention,
)
from attnscope.analysis.aggregate import layer_mean
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    from torch import Tensor


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
    out = np.empty((chosen.num_layers, chosen.q_len, chosen.k_len))
    product = None
    for position in range(chosen.num_layers):
        product = rollout_step(product, layer_mean(chosen, position))
        out[position] = product.numpy()
    return out
