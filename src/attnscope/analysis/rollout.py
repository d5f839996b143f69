"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Each layer's heads are averaged and the residual connection is added as an
identity: ``Â_l = rownorm(mean_h A_l + I)``. Rollout multiplies these from the
first layer up: ``R_1 = Â_1``, ``R_l = Â_l · R_{l-1}``. Row ``i`` of ``R_l`` says
how much of token ``i``'s representation after layer ``l`` traces back to each
input token, if attention and the residual path were all that mixed tokens.
"""

from __future__ import annotations

import numpy as np

from attnscope.analysis.access import (
    Float64Array,
    layer_block,
    pick_stream,
    require_consecutive_layers,
    require_self_attention,
)
from attnscope.trace import AttentionStream, AttentionTrace


def residual_attention(stream: AttentionStream, position: int) -> Float64Array:
    """``Â``: the layer's head-mean attention plus the identity, rows renormalised.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 2, 2, 2), 0.5, np.float32))
    >>> residual_attention(s, 0).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    mixed = layer_block(stream, position).mean(axis=0) + np.eye(stream.q_len)
    normalised: Float64Array = mixed / mixed.sum(axis=-1, keepdims=True)
    return normalised


def rollout(trace: AttentionTrace, *, stream: str | None = None) -> Float64Array:
    """Attention rollout of every layer, ``(layers, n, n)``.

    ``out[l]`` is ``R_{l+1} = Â_{l+1} · … · Â_1`` with ``Â = rownorm(mean over heads
    of A + I)`` (Abnar & Zuidema 2020); its rows sum to 1. Layers are read one
    at a time.

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
    product = np.eye(chosen.q_len)
    for position in range(chosen.num_layers):
        product = residual_attention(chosen, position) @ product
        out[position] = product
    return out
