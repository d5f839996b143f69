"""Recorded calls to :class:`~attnscope.AttentionStream`: stack, trim padding, validate."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnscope.sources.hf.recorder import AttentionCall
from attnscope.trace import AttentionStream, BoolArray, FloatArray, Side


def _numpy(tensor: torch.Tensor) -> FloatArray:
    return tensor.detach().to(torch.float32).cpu().numpy()


def _pick(tensor: torch.Tensor, rows: list[int] | None, cols: list[int] | None) -> torch.Tensor:
    """Keep the non-padding rows (queries) and columns (keys) of a (heads, q, k) tensor."""
    if rows is not None and tensor.shape[-2] > 1:
        tensor = tensor[..., rows, :]
    if cols is not None and tensor.shape[-1] > 1:
        tensor = tensor[..., cols]
    return tensor


def _stack_terms(
    terms: Sequence[torch.Tensor | None], heads: int, q_len: int, k_len: int, fill: float | bool
) -> torch.Tensor | None:
    """Stack per-layer masks or biases to (layers or 1, heads or 1, q, k); None if all absent."""
    if all(t is None for t in terms):
        return None
    dtype = torch.bool if isinstance(fill, bool) else torch.float32
    shared = all(t is None or t.shape[0] == 1 for t in terms)
    shape = (1 if shared else heads, q_len, k_len)
    full = [
        torch.full(shape, fill, dtype=dtype)
        if t is None
        else torch.broadcast_to(t.to(device="cpu", dtype=dtype), shape)
        for t in terms
    ]
    if all(f is full[0] or torch.equal(f, full[0]) for f in full[1:]):
        return full[0][None]  # the same for every layer: store it once
    return torch.stack(full)


def _check_rows(attention: FloatArray, mask: BoolArray | None, sinks: bool, name: str) -> None:
    sums = attention.sum(-1)
    bad = sums > 1 + 1e-3 if sinks else np.abs(sums - 1) > 1e-3
    if mask is not None:  # a query that sees no key at all has no distribution
        bad &= ~np.broadcast_to(mask.all(-1), bad.shape)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise RuntimeError(
            f"{name}: captured attention row (layer, head, query) = {where} sums to "
            f"{float(sums[where]):.4g}, not 1; the model's attention is not a softmax over "
            "keys, so attnscope cannot show it faithfully."
        )


def build_stream(
    name: str,
    calls: Sequence[tuple[int, AttentionCall]],
    *,
    rows: list[int] | None = None,
    cols: list[int] | None = None,
    query_side: Side = "source",
    key_side: Side = "source",
) -> AttentionStream:
    """One :class:`AttentionStream` from ``(model layer, call)`` pairs.

    Parameters
    ----------
    name
        ``"self"``, ``"encoder"``, ``"decoder"`` or ``"cross"``.
    calls
        The recorded calls of this stream, one per captured layer.
    rows, cols
        Query and key positions to keep (None keeps all): padding is dropped.
    query_side, key_side
        Which tokens label rows and columns.

    Examples
    --------
    >>> import torch
    >>> call = AttentionCall(weights=torch.full((1, 2, 2), 0.5))
    >>> build_stream("self", [(0, call)]).attention.shape
    (1, 1, 2, 2)
    """
    calls = sorted(calls, key=lambda item: item[0])
    weights = [_pick(c.weights, rows, cols) for _, c in calls if c.weights is not None]
    if len(weights) != len(calls):
        raise RuntimeError(f"{name}: a captured layer recorded no attention weights.")
    attention = _numpy(torch.stack(weights))
    heads, q_len, k_len = attention.shape[1:]
    records = [c for _, c in calls]
    mask_t = _stack_terms(
        [None if c.mask is None else _pick(c.mask, rows, cols) for c in records],
        heads,
        q_len,
        k_len,
        False,
    )
    bias_t = _stack_terms(
        [None if c.bias is None else _pick(c.bias, rows, cols) for c in records],
        heads,
        q_len,
        k_len,
        0.0,
    )
    mask = None if mask_t is None else mask_t.numpy()
    has_sinks = any(c.sinks is not None for c in records)
    _check_rows(attention, mask, has_sinks, name)
    has_qk = all(c.query is not None and c.key is not None for c in records)
    queries = keys = scaling = softcap = sinks = None
    if has_qk:
        queries = _numpy(torch.stack([_pick_rows(c.query, rows) for c in records]))
        keys = _numpy(torch.stack([_pick_rows(c.key, cols) for c in records]))
        scaling = np.array([c.scaling for c in records], dtype=np.float32)
        if any(c.softcap for c in records):
            softcap = np.array([c.softcap for c in records], dtype=np.float32)
        if has_sinks:
            sinks = _numpy(
                torch.stack([torch.zeros(heads) if c.sinks is None else c.sinks for c in records])
            )
    return AttentionStream(
        attention=attention,
        query_side=query_side,
        key_side=key_side,
        layers=tuple(layer for layer, _ in calls),
        queries=queries,
        keys=keys,
        scaling=scaling,
        bias=None if bias_t is None else _numpy(bias_t),
        mask=mask,
        softcap=softcap,
        sinks=sinks,
        name=name,
    )


def _pick_rows(tensor: torch.Tensor | None, positions: list[int] | None) -> torch.Tensor:
    """Keep the non-padding positions of a (heads, positions, head_dim) tensor."""
    assert tensor is not None  # build_stream checked every call has q and k
    return tensor if positions is None else tensor[:, positions]
