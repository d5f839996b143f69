"""Recompute attention weights from the vectors that produced them.

The order of operations follows what transformers' eager attention does:
``scores = (q · kᵀ) * scaling``, ``+ bias``, optional ``tanh`` softcap,
masked keys set to ``-inf``, optional sink logit, softmax. A row whose keys
are all masked gives zeros, never NaN.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


def recompute_attention(
    queries: FloatArray,
    keys: FloatArray,
    scaling: FloatArray,
    *,
    bias: FloatArray | None = None,
    mask: npt.NDArray[np.bool_] | None = None,
    softcap: FloatArray | None = None,
    sinks: FloatArray | None = None,
) -> FloatArray:
    """Attention ``(layers, heads, q_len, k_len)`` from q, k and the terms around them.

    Parameters
    ----------
    queries
        ``(layers, heads, q_len, head_dim)``.
    keys
        ``(layers, kv_heads, k_len, head_dim)``; repeated over query-head groups.
    scaling
        ``(layers,)`` factor applied to ``q · k``.
    bias, mask, softcap, sinks
        As documented on :class:`attnscope.AttentionStream`.

    Examples
    --------
    >>> import numpy as np
    >>> q = np.zeros((1, 1, 2, 4), np.float32); k = np.zeros((1, 1, 2, 4), np.float32)
    >>> recompute_attention(q, k, np.ones(1, np.float32))[0, 0]
    array([[0.5, 0.5],
           [0.5, 0.5]], dtype=float32)
    """
    heads, kv_heads = queries.shape[1], keys.shape[1]
    k = np.repeat(keys, heads // kv_heads, axis=1) if kv_heads != heads else keys
    q64 = queries.astype(np.float64)
    scores = np.einsum("lhqd,lhkd->lhqk", q64, k.astype(np.float64))
    scores *= scaling.astype(np.float64)[:, None, None, None]
    if bias is not None:
        scores = scores + bias.astype(np.float64)
    if softcap is not None:
        cap = softcap.astype(np.float64)[:, None, None, None]
        capped = np.tanh(scores / np.where(cap > 0, cap, 1.0)) * cap
        scores = np.where(cap > 0, capped, scores)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    if sinks is not None:
        sink = np.broadcast_to(sinks.astype(np.float64)[:, :, None, None], (*scores.shape[:3], 1))
        scores = np.concatenate([scores, sink], axis=-1)
    peak = np.max(scores, axis=-1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    exp = np.exp(scores - peak)
    total = exp.sum(axis=-1, keepdims=True)
    weights = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    if sinks is not None:
        weights = weights[..., :-1]
    result: FloatArray = weights.astype(np.float32)
    return result
