"""The ``vnorm:<stream>:<layer>`` chunk: what a view needs to weight attention by value norm.

A view that has a weight ``α_ij`` (a ``top:`` key, an ``attn:`` cell) draws the
value-weighted ``α_ij ‖f_h(x_j)‖ / Σ_k α_ik ‖f_h(x_k)‖`` (Kobayashi et al. 2020)
from two O(N) arrays per head: the norms ``‖f_h(x_j)‖`` of every key and each
query row's sum ``Σ_k α_ik ‖f_h(x_k)‖``, computed here a block of rows at a time.
"""

from __future__ import annotations

import numpy as np

from attnscope.analysis.access import layer_rows
from attnscope.encode.arrays import NamedArray
from attnscope.trace import AttentionStream


def value_norm_arrays(stream: AttentionStream, position: int) -> list[NamedArray]:
    """``norm`` f32 ``(H, K)`` and ``rowsum`` f32 ``(H, Q)`` of one layer (float32, exact).

    Examples
    --------
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> s.set_value_norms(np.array([[[1.0, 3.0]]], np.float32))
    >>> [(name, a.tolist()) for name, a in value_norm_arrays(s, 0)]
    [('norm', [[1.0, 3.0]]), ('rowsum', [[2.0, 2.0]])]
    """
    import torch

    assert stream.value_norms is not None  # parse_key refuses a stream without them
    norms = stream.value_norms[position]
    sums = np.zeros((stream.num_heads, stream.q_len), np.float32)
    for rows, heads, weights in layer_rows(stream, position):
        scale = torch.from_numpy(norms[heads]).to(weights.device)[:, None, :]
        sums[heads, rows] = (weights * scale).sum(dim=-1).cpu().numpy()
    return [("norm", np.ascontiguousarray(norms)), ("rowsum", sums)]
