"""The ``vnorm:<stream>:<layer>`` chunk: what a view needs to weight attention by value norm.

A view that has a weight ``α_ij`` (a ``top:`` key, an ``attn:`` cell) draws the
value-weighted ``α_ij ‖f_h(x_j)‖ / Σ_k α_ik ‖f_h(x_k)‖`` (Kobayashi et al. 2020)
from two O(N) arrays per head: the norms ``‖f_h(x_j)‖`` of every key and each
query row's sum ``Σ_k α_ik ‖f_h(x_k)‖``, computed here a block of rows at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnscope.analysis.access import layer_rows
from attnscope.encode.arrays import NamedArray
from attnscope.trace import AttentionStream, AttentionTrace


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


PAGE_SHARE = 0.1
"""Share of a page's budget its ``vnorm:`` chunks may take (the current layer's first)."""


def page_value_chunks(
    trace: AttentionTrace, views: Sequence[str], stream: str, layer: int, max_bytes: int
) -> tuple[dict[str, Any], list[str]]:
    """The ``vnorm:`` chunks a page needs to weight by value norm, packed, and a note if cut.

    Every layer of each stream with value norms, ``stream``'s ``layer`` first, while they fit
    :data:`PAGE_SHARE` of ``max_bytes``; nothing without the head or model view.

    Examples
    --------
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a", "b"], np.full((2, 1, 2, 2), 0.5, np.float32))
    >>> t.stream.set_value_norms(np.ones((2, 1, 2), np.float32))
    >>> sorted(page_value_chunks(t, ["head"], "self", 1, 2**20)[0])
    ['vnorm:self:0', 'vnorm:self:1']
    """
    from attnscope.encode.keys import read_key, value_norms_key
    from attnscope.encode.pack import pack_chunk

    if not {"head", "model"} & set(views):
        return {}, []
    keys = [
        value_norms_key(name, position)
        for name, s in trace.streams.items()
        if s.value_norms is not None
        for position in sorted(range(s.num_layers), key=lambda p: (name, p) != (stream, layer))
    ]
    packed: dict[str, Any] = {}
    used = 0
    for i, key in enumerate(keys):
        parsed = read_key(key)
        assert parsed.layer is not None  # a vnorm: key names its layer
        chunk = pack_chunk(value_norm_arrays(trace.streams[parsed.stream], parsed.layer), half=())
        if used + len(chunk["data"]) + 200 > PAGE_SHARE * max_bytes:
            left = len(keys) - i
            return packed, [
                f"Weighting by value norm: {left} of {len(keys)} layers' value norms were left "
                f"out to bound the page's size (those layers draw raw weights); save with a "
                "larger max_bytes for all."
            ]
        packed[key] = chunk
        used += len(chunk["data"]) + 200
    return packed, []
