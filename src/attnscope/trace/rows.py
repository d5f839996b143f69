"""Rows of one head's attention, computed on demand from q, k and the terms around them.

Everything that reads attention (chunks for the views, statistics, the
trace's own check) asks for a block of query rows of one ``(layer, head)``
at a time, so no more than :data:`BLOCK_VALUES` weights exist at once, however
long the input. Rows come from stored weights when the stream keeps them,
otherwise they are recomputed exactly as transformers' eager attention does:
``scores = (q · kᵀ) * scaling``, ``+ bias``, optional ``tanh`` softcap,
hidden keys set to ``-inf``, optional sink logit, softmax (a query that sees
no key gets a row of zeros).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

    from attnscope.trace.stream import AttentionStream

BLOCK_VALUES = 1 << 22
"""Most attention weights computed at once (16 MiB of float32)."""

Rows = slice | np.ndarray[Any, Any]


def block_rows(k_len: int) -> int:
    """Query rows per block so that a block holds at most :data:`BLOCK_VALUES` weights.

    Examples
    --------
    >>> block_rows(4096)
    1024
    """
    return max(1, BLOCK_VALUES // max(k_len, 1))


def row_blocks(q_len: int, k_len: int) -> Iterator[slice]:
    """Slices of query rows covering ``0 .. q_len`` in blocks of :func:`block_rows`.

    Examples
    --------
    >>> list(row_blocks(3, BLOCK_VALUES // 2))
    [slice(0, 2, None), slice(2, 3, None)]
    """
    step = block_rows(k_len)
    for start in range(0, q_len, step):
        yield slice(start, min(start + step, q_len))


def _tensor(array: np.ndarray[Any, Any]) -> torch.Tensor:
    """A tensor over ``array``'s memory, or over a copy when it is read-only or strided."""
    import torch

    if not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(np.ascontiguousarray(array))


def _term(array: np.ndarray[Any, Any], position: int, head: int, rows: Rows) -> Any:
    """The ``(rows, k)`` part of a term broadcastable to ``(layers, heads, q, k)``."""
    part = array[position if array.shape[0] > 1 else 0, head if array.shape[1] > 1 else 0]
    if part.shape[0] > 1:
        part = part[rows]
    return _tensor(part)


def _visible_span_mask(spans: np.ndarray[Any, Any], position: int, rows: Rows, k_len: int) -> Any:
    import torch

    layer = spans[position if spans.shape[0] > 1 else 0]
    part = _tensor(layer[rows])
    keys = torch.arange(k_len, dtype=torch.int32)
    return (keys < part[:, :1]) | (keys >= part[:, 1:])


def compute_rows(stream: AttentionStream, position: int, head: int, rows: Rows) -> torch.Tensor:
    """Attention of query ``rows`` of one head, float32 ``(len(rows), k_len)``, on the CPU.

    Stored weights are read when the stream has them; otherwise the rows are
    recomputed from q and k. Use :meth:`AttentionStream.attention_rows`.
    """
    import torch

    if stream.weights is not None:
        return _tensor(stream.weights[position, head, rows]).float()
    if stream.queries is None or stream.keys is None or stream.scaling is None:
        raise ValueError(f"stream {stream.name!r} has neither weights nor q/k to compute from.")
    device = stream.device
    q = _tensor(stream.queries[position, head, rows]).to(device)
    k = _tensor(stream.keys[position, stream.kv_head(head)]).to(device)
    scores = q @ k.T
    scores *= float(stream.scaling[position])
    if stream.bias is not None:
        scores += _term(stream.bias, position, head, rows).to(device)
    if stream.softcap is not None and stream.softcap[position] > 0:
        cap = float(stream.softcap[position])
        scores = torch.tanh(scores / cap) * cap
    if stream.mask is not None:
        scores.masked_fill_(_term(stream.mask, position, head, rows).to(device), -torch.inf)
    if stream.key_spans is not None:
        hidden = _visible_span_mask(stream.key_spans, position, rows, stream.k_len)
        scores.masked_fill_(hidden.to(device), -torch.inf)
    if stream.sinks is not None:
        sink = torch.full((scores.shape[0], 1), float(stream.sinks[position, head]), device=device)
        scores = torch.cat([scores, sink], dim=1)
    weights = torch.softmax(scores, dim=-1)
    if stream.sinks is not None:
        weights = weights[:, :-1]
    # A query that sees no key: softmax of all -inf is NaN; the row is zeros.
    return torch.nan_to_num_(weights, nan=0.0).cpu()
