"""Recorded calls to :class:`~attnscope.AttentionStream`: stack, trim padding, validate.

A stream whose calls recorded q and k keeps those (float32, O(N) per head),
the terms around them, the mask as a rule (a run of visible keys per query,
:mod:`attnscope.trace.key_spans`) where it is one, and a few rows of the
model's own weights to check the recomputation against; never the N² weights.
Calls with no q/k (attention-only families) keep their weights as float16.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from attnscope.sources.hf.recorder import AttentionCall, reference_rows
from attnscope.trace import AttentionStream, BoolArray, FloatArray, Side
from attnscope.trace.key_spans import spans_from_blocked


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


def _check_rows(attention: Any, mask: BoolArray | None, sinks: bool, name: str) -> None:
    """Rows of ``attention`` (..., q, k) must sum to 1 (at most 1 with sinks)."""
    sums = np.asarray(attention, dtype=np.float32).sum(-1)
    bad = sums > 1 + 1e-3 if sinks else np.abs(sums - 1) > 1e-3
    if mask is not None:  # a query that sees no key at all has no distribution
        bad &= ~np.broadcast_to(mask.all(-1), bad.shape)
    else:
        bad &= sums != 0
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise RuntimeError(
            f"{name}: captured attention row (layer, head, query) = {where} sums to "
            f"{float(sums[where]):.4g}, not 1; the model's attention is not a softmax over "
            "keys, so attnscope cannot show it faithfully."
        )


def _spans(
    masks: Sequence[torch.Tensor | None],
    rows: list[int] | None,
    cols: list[int] | None,
    q_len: int,
    k_len: int,
) -> np.ndarray[Any, Any] | None:
    """Per-layer key spans ``(layers or 1, q, 2)`` of shared masks; None if one is no rule."""
    found: dict[int, np.ndarray[Any, Any] | None] = {}
    spans = []
    for mask in masks:
        if mask is None:
            spans.append(np.tile(np.array([[0, k_len]], np.int32), (q_len, 1)))
            continue
        if mask.shape[0] != 1:
            return None  # a mask per head: kept dense
        if id(mask) not in found:  # layers share one mask tensor: one pass over it
            picked = torch.broadcast_to(_pick(mask, rows, cols)[0], (q_len, k_len))
            found[id(mask)] = spans_from_blocked(picked.cpu())
        span = found[id(mask)]
        if span is None:
            return None
        spans.append(span)
    if all(np.array_equal(s, spans[0]) for s in spans[1:]):
        return spans[0][None]
    return np.stack(spans)


def _reference(
    calls: Sequence[AttentionCall], rows: list[int] | None, cols: list[int] | None
) -> tuple[FloatArray, np.ndarray[Any, Any]] | None:
    """The model's own weights of a few query rows, trimmed like the stream, per layer."""
    kept = None if rows is None else {r: i for i, r in enumerate(rows)}
    tables = []
    positions: list[int] = []
    for call in calls:
        if call.reference is not None and call.reference_rows is not None:
            listed, table = call.reference_rows, call.reference
        elif call.weights is not None:  # per-family routes keep the full weights
            listed = reference_rows(call.weights.shape[-2])
            table = call.weights[:, listed]
        else:
            return None
        chosen = [j for j, r in enumerate(listed) if kept is None or r in kept]
        positions = [r if kept is None else kept[r] for r in (listed[j] for j in chosen)]
        tables.append(_pick(table[:, chosen], None, cols))
    if not positions:
        return None
    return _numpy(torch.stack(tables)), np.array(positions, np.int64)


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
    >>> stream = build_stream("self", [(0, call)])
    >>> stream.attention.shape, stream.weights.dtype
    ((1, 1, 2, 2), dtype('float16'))
    """
    calls = sorted(calls, key=lambda item: item[0])
    records = [c for _, c in calls]
    layers = tuple(layer for layer, _ in calls)
    has_sinks = any(c.sinks is not None for c in records)
    if not all(c.query is not None and c.key is not None for c in records):
        sides = (query_side, key_side)
        return _weights_stream(name, records, layers, (rows, cols), sides)
    queries = _numpy(torch.stack([_pick_rows(c.query, rows) for c in records]))
    keys = _numpy(torch.stack([_pick_rows(c.key, cols) for c in records]))
    heads, q_len = queries.shape[1:3]
    k_len = keys.shape[2]
    masks = [c.mask for c in records]
    key_spans = _spans(masks, rows, cols, q_len, k_len)
    mask = None
    if key_spans is None:
        picked = [None if m is None else _pick(m, rows, cols) for m in masks]
        stacked = _stack_terms(picked, heads, q_len, k_len, False)
        mask = None if stacked is None else stacked.numpy()
    elif np.all(key_spans == np.array([0, k_len])):
        key_spans = None  # every query sees every key: no mask at all
    bias_t = _stack_terms(
        [None if c.bias is None else _pick(c.bias, rows, cols) for c in records],
        heads,
        q_len,
        k_len,
        0.0,
    )
    softcap = sinks = None
    if any(c.softcap for c in records):
        softcap = np.array([c.softcap for c in records], dtype=np.float32)
    if has_sinks:
        sinks = _numpy(
            torch.stack([torch.zeros(heads) if c.sinks is None else c.sinks for c in records])
        )
    reference = _reference(records, rows, cols)
    if reference is not None:
        _check_rows(reference[0], None, has_sinks, name)
    return AttentionStream(
        query_side=query_side,
        key_side=key_side,
        layers=layers,
        queries=queries,
        keys=keys,
        scaling=np.array([c.scaling for c in records], dtype=np.float32),
        bias=None if bias_t is None else _numpy(bias_t),
        mask=mask,
        key_spans=key_spans,
        softcap=softcap,
        sinks=sinks,
        reference=None if reference is None else reference[0],
        reference_rows=None if reference is None else reference[1],
        name=name,
    )


def _weights_stream(
    name: str,
    records: Sequence[AttentionCall],
    layers: tuple[int, ...],
    trim: tuple[list[int] | None, list[int] | None],
    sides: tuple[Side, Side],
) -> AttentionStream:
    """A stream of the weights themselves, as float16 (attention-only families)."""
    rows, cols = trim
    weights = []
    for call in records:
        if call.weights is None:
            raise RuntimeError(f"{name}: a captured layer recorded no attention weights.")
        layer = _pick(call.weights, rows, cols).to(torch.float32)
        _check_rows(layer.cpu().numpy(), None, False, name)
        weights.append(layer.to(torch.float16))
    return AttentionStream(
        torch.stack(weights).cpu().numpy(),
        query_side=sides[0],
        key_side=sides[1],
        layers=layers,
        name=name,
    )


def _pick_rows(tensor: torch.Tensor | None, positions: list[int] | None) -> torch.Tensor:
    """Keep the non-padding positions of a (heads, positions, head_dim) tensor."""
    assert tensor is not None  # build_stream checked every call has q and k
    return tensor if positions is None else tensor[:, positions]
