"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

The layers form a graph: one node per token per layer (layer 0 the input),
an edge from token ``i`` after layer ``l`` to token ``k`` before it with capacity
``Â_l[i, k]`` (head-mean attention plus the residual identity, rows
renormalised, as in rollout). The flow from a query token after layer ``l`` to
input token ``j`` is the maximum flow between those two nodes. Where rollout
multiplies, flow takes the bottleneck of every route, so it spreads less
evenly over the input.

Each value is its own maximum-flow problem, so the cost grows quickly with the
input; :data:`MAX_FLOW_NODES` bounds it.
"""

from __future__ import annotations

import numpy as np

from attnscope.analysis.access import (
    Float64Array,
    pick_stream,
    require_consecutive_layers,
    require_self_attention,
)
from attnscope.analysis.layered_maxflow import max_flow
from attnscope.analysis.rollout import residual_attention
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionTrace

MAX_FLOW_NODES = 400
"""Largest ``layers × tokens`` :func:`flow` accepts.

Flow solves ``layers × tokens`` maximum-flow problems, each over a graph of up
to ``layers × tokens`` nodes and ``layers × tokens²`` edges, so the work grows
with about ``tokens³``. Measured on MiniLM (6 layers), one query, one core of a
shared 2-core machine: 19 tokens 1.1 s, 32 tokens 4.2 s, 68 tokens 35 s, 134
tokens 263 s. The bound keeps one call under about half a minute; above it use
:func:`attnscope.rollout`, or capture a shorter text or fewer layers.
"""


def flow(
    trace: AttentionTrace, query: int, *, stream: str | None = None, normalize: bool = False
) -> Float64Array:
    """Attention flow from one query token to every input token, after each layer.

    Parameters
    ----------
    trace
        The trace; the stream must be self-attention over consecutive layers.
    query
        Row index of the query token.
    stream
        Which stream; None for the trace's first.
    normalize
        Divide each layer's row by its sum, as Abnar & Zuidema's figures do.

    Returns
    -------
    numpy.ndarray
        ``(layers, n)``: ``out[l, j]`` is the maximum flow from token ``query``
        after layer ``l + 1`` (the stream's ``l``-th layer) to input token
        ``j``, with capacities ``Â`` (see :func:`attnscope.rollout`). Each value
        is at most 1 (the query's own capacity), but each is its own problem,
        so a row may sum to more than 1: ``normalize=True`` rescales it.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> uniform = np.full((2, 1, 4, 4), 0.25, np.float32)  # Â = (U + I) / 2
    >>> f = flow(AttentionTrace(list("abcd"), uniform), 0)
    >>> f.shape, f[0].round(6).tolist()
    ((2, 4), [0.625, 0.125, 0.125, 0.125])
    """
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "attention flow")
    require_consecutive_layers(chosen, "attention flow")
    n, layers = chosen.q_len, chosen.num_layers
    if isinstance(query, bool) or not isinstance(query, int | np.integer):
        raise AttnscopeTypeError(f"query must be a token index (int), not {type(query).__name__}.")
    if not 0 <= query < n:
        raise AttnscopeError(
            f"query={query} is out of range: the stream has {n} tokens (0..{n - 1})."
        )
    if layers * n > MAX_FLOW_NODES:
        raise AttnscopeError(
            f"attention flow over {layers} layers × {n} tokens = {layers * n} nodes is above "
            f"attnscope.analysis.MAX_FLOW_NODES ({MAX_FLOW_NODES}): each value is its own "
            "maximum-flow problem and the work grows faster than tokens³. Use "
            "attnscope.rollout(trace), or capture a shorter text or fewer layers."
        )
    residual = [residual_attention(chosen, p) for p in range(layers)]
    out = np.empty((layers, n))
    for top in range(layers):
        for key in range(n):
            out[top, key] = _one_flow(residual[: top + 1], int(query), key)
    if normalize:
        out /= np.maximum(out.sum(axis=-1, keepdims=True), np.finfo(np.float64).tiny)
    return out


def _one_flow(residual: list[Float64Array], query: int, key: int) -> float:
    """Max flow from ``query`` above ``residual[-1]`` to ``key`` below ``residual[0]``."""
    if len(residual) == 1:
        return float(residual[0][query, key])
    caps = [residual[0][:, key : key + 1], *residual[1:-1], residual[-1][query : query + 1]]
    return max_flow(caps)
