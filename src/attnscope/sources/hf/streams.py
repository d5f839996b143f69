"""Recorded calls to :class:`~attnscope.AttentionStream`: stack, trim padding, validate.

A stream whose calls recorded q and k keeps those (O(N) per head: float32, or
float16 for a half-precision model, :func:`qk_dtype`),
the terms around them, the mask as a rule (a run of visible keys per query,
:mod:`attnscope.trace.key_spans`) where it is one, and a few rows of the
model's own weights to check the recomputation against; never the N² weights.
Calls with no q/k (attention-only families) keep their weights as float16.

Layers are grouped by shape first (:mod:`~attnscope.sources.hf.layer_groups`).
Within a group, layers may still differ in ``head_dim`` (Gemma 4's global
layers are twice as wide as its sliding ones) or in key heads: q and k are
zero-padded to the widest layer, which leaves every ``q · k`` unchanged, and
key heads are repeated to the query heads where layers disagree.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from attnscope.errors import AttnscopeError
from attnscope.sources.hf.layer_groups import Axis, Calls, group_layers
from attnscope.sources.hf.recorder import AttentionCall, reference_rows
from attnscope.sources.hf.row_mask import RowMask
from attnscope.trace import AttentionStream, BoolArray, FloatArray, Side
from attnscope.trace.key_spans import blocked_from_spans, spans_from_blocked


def _numpy(tensor: torch.Tensor) -> FloatArray:
    return tensor.detach().to(torch.float32).cpu().numpy()


def _pick(tensor: torch.Tensor, rows: list[int] | None, cols: list[int] | None) -> torch.Tensor:
    """Keep the non-padding rows (queries) and columns (keys) of a (heads, q, k) tensor."""
    if rows is not None and tensor.shape[-2] > 1:
        tensor = tensor[..., rows, :]
    if cols is not None and tensor.shape[-1] > 1:
        tensor = tensor[..., cols]
    return tensor


def _hidden(mask: torch.Tensor | RowMask) -> torch.Tensor:
    """A call's mask as ``(1 or heads, q, k)`` booleans, True where a key is hidden.

    A :class:`RowMask` is built whole here: only when its keys are not one
    span per query (no rule fits), as the mask transformers would have made.
    """
    return ~mask.dense()[0] if isinstance(mask, RowMask) else mask


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


class NotSoftmaxError(AttnscopeError):
    """A stream's rows are not distributions over its keys (part of a larger softmax ...).

    Examples
    --------
    >>> issubclass(NotSoftmaxError, ValueError)
    True
    """


def tolerance(dtype: torch.dtype) -> float:
    """Largest recompute error taken as exact: float32 rounding, or half precision's.

    Examples
    --------
    >>> tolerance(torch.float32), tolerance(torch.bfloat16)
    (0.0001, 0.02)
    """
    return 1e-4 if dtype in (torch.float32, torch.float64) else 2e-2


def _check_rows(
    attention: Any,
    mask: BoolArray | None,
    sinks: bool,
    name: str,
    dtype: torch.dtype = torch.float32,
) -> None:
    """Rows of ``attention`` (..., q, k) must sum to 1 (at most 1 with sinks).

    A half-precision model rounds each weight, so its rows sum to 1 only
    within a few of its epsilons; a query that sees no key has an all-zero row.
    """
    slack = max(1e-3, 4 * torch.finfo(dtype).eps)
    sums = np.asarray(attention, dtype=np.float32).sum(-1)
    bad = sums > 1 + slack if sinks else np.abs(sums - 1) > slack
    bad &= sums > slack
    if mask is not None:
        bad &= ~np.broadcast_to(mask.all(-1), bad.shape)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NotSoftmaxError(
            f"its attention row (layer, head, query) = {where} sums to "
            f"{float(sums[where]):.4g}, not 1: the weights the model returns are not a softmax "
            "over these keys, so attnscope cannot show them faithfully."
        )


HALF_LARGEST = float(np.finfo(np.float16).max)
"""Largest magnitude float16 holds: a bfloat16 model's q/k beyond it are stored as float32."""


def qk_dtype(records: Sequence[AttentionCall]) -> type[np.floating[Any]]:
    """The numpy dtype a stream keeps its recorded q and k in: the model's precision.

    float16 q/k stay float16. bfloat16 (which numpy has no type for) is kept
    as float16 too, whose 11-bit significand holds every bfloat16 value of
    magnitude 6e-5 .. 65504 exactly (smaller ones to float16's subnormal
    steps, 6e-8, far below any q·k they join); a layer with a value past
    65504 keeps float32. Everything else is float32. The check reads each
    layer where it lies, one reduction per tensor.

    Examples
    --------
    >>> import torch
    >>> call = AttentionCall(query=torch.ones(1, 2, 2, dtype=torch.bfloat16))
    >>> call.key = call.query
    >>> qk_dtype([call]).__name__
    'float16'
    >>> call.key = call.query * 1e5
    >>> qk_dtype([call]).__name__
    'float32'
    """
    tensors = [t for c in records for t in (c.query, c.key) if t is not None]
    kinds = {t.dtype for t in tensors}
    if not kinds or not kinds <= {torch.float16, torch.bfloat16}:
        return np.float32
    if torch.bfloat16 in kinds:
        for t in tensors:
            low, high = torch.aminmax(t.detach())
            if max(-float(low), float(high)) > HALF_LARGEST:
                return np.float32
    return np.float16


def _vectors(
    records: Sequence[AttentionCall], rows: list[int] | None, cols: list[int] | None
) -> tuple[FloatArray, FloatArray]:
    """Stacked q and k, zero-padded to the widest head_dim, key heads made alike.

    Each layer is copied straight into the result, in :func:`qk_dtype`, so
    each layer leaves the model's device once, and capture holds the recorded
    vectors and one stacked copy, never a float32 or padded list besides.
    """
    width = max(int(_pick_rows(c.query, None).shape[-1]) for c in records)
    heads = int(_pick_rows(records[0].query, None).shape[0])
    key_heads = {int(_pick_rows(c.key, None).shape[0]) for c in records}
    repeat = len(key_heads) > 1  # key heads differ: one per query head
    dtype = qk_dtype(records)
    return (
        _into_one([_pick_rows(c.query, rows) for c in records], width, None, dtype),
        _into_one(
            [_pick_rows(c.key, cols) for c in records], width, heads if repeat else None, dtype
        ),
    )


def _into_one(
    layers: list[torch.Tensor],
    width: int,
    heads: int | None,
    dtype: type[np.floating[Any]] = np.float32,
) -> FloatArray:
    """``dtype`` ``(layers, heads, positions, width)`` of per-layer ``(heads, positions, d)``."""
    first = layers[0]
    count = heads if heads is not None else int(first.shape[0])
    out = np.zeros((len(layers), count, int(first.shape[1]), width), dtype)
    target = torch.from_numpy(out)
    for i, layer in enumerate(layers):
        alike = layer if heads is None else layer.repeat_interleave(heads // layer.shape[0], dim=0)
        # One copy per layer: to the host and into the stored dtype together.
        target[i, :, :, : alike.shape[-1]].copy_(alike.detach())
    return out  # type: ignore[return-value]


def _spans(
    masks: Sequence[torch.Tensor | RowMask | None],
    trim: tuple[list[int] | None, list[int] | None],
    q_len: int,
    k_len: int,
    causal: Sequence[bool],
) -> np.ndarray[Any, Any] | None:
    """Per-layer key spans ``(layers or 1, q, 2)`` of shared masks; None if one is no rule.

    A layer the recorder found plainly causal (``causal``, its mask not kept)
    gets its spans from the rule: kept query ``r`` sees the kept keys up to
    position ``r`` (a pass over an N² mask is seconds at 8192 tokens).
    """
    rows, cols = trim
    found: dict[int, np.ndarray[Any, Any] | None] = {}
    spans = []
    for mask, rule in zip(masks, causal, strict=True):
        if rule:
            spans.append(causal_spans(trim, q_len, k_len))
            continue
        if mask is None:
            spans.append(np.tile(np.array([[0, k_len]], np.int32), (q_len, 1)))
            continue
        if isinstance(mask, RowMask):  # a block of rows at a time, never N² at once
            if id(mask) not in found:
                found[id(mask)] = mask.spans(rows, cols)
        elif mask.shape[0] != 1:
            return None  # a mask per head: kept dense
        elif id(mask) not in found:  # layers share one mask tensor: one pass over it
            picked = torch.broadcast_to(_pick(mask, rows, cols)[0], (q_len, k_len))
            found[id(mask)] = spans_from_blocked(picked.cpu())
        span = found[id(mask)]
        if span is None:
            return None
        spans.append(span)
    if all(np.array_equal(s, spans[0]) for s in spans[1:]):
        return spans[0][None]
    return np.stack(spans)


def causal_spans(
    trim: tuple[list[int] | None, list[int] | None], q_len: int, k_len: int
) -> np.ndarray[Any, Any]:
    """``(q_len, 2)`` spans of a causal mask over the kept query and key positions.

    Examples
    --------
    >>> causal_spans((None, None), 3, 3).tolist()
    [[0, 1], [0, 2], [0, 3]]
    >>> causal_spans(([1, 2], [1, 2]), 2, 2).tolist()  # position 0 dropped
    [[0, 1], [0, 2]]
    """
    rows, cols = trim
    queries = np.arange(q_len) if rows is None else np.asarray(rows)
    keys = np.arange(k_len) if cols is None else np.asarray(cols)
    stops = np.searchsorted(keys, queries, side="right").astype(np.int32)
    return np.stack([np.zeros_like(stops), stops], axis=-1)


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
    dtype: torch.dtype = torch.float32,
    sinks: bool = True,
) -> AttentionStream:
    """One :class:`AttentionStream` from ``(model layer, call)`` pairs of one shape.

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
    dtype
        The dtype the model computed in (sets how far rows may be from summing to 1).
    sinks
        Keep the sink logits the calls recorded (False: leave them out).

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
    has_sinks = sinks and any(c.sinks is not None for c in records)
    if not all(c.query is not None and c.key is not None for c in records):
        sides = (query_side, key_side)
        return _weights_stream(name, records, layers, (rows, cols), sides, dtype=dtype)
    queries, keys = _vectors(records, rows, cols)
    heads, q_len = queries.shape[1:3]
    k_len = keys.shape[2]
    masks = [c.mask for c in records]
    key_spans = _spans(masks, (rows, cols), q_len, k_len, [c.causal for c in records])
    mask = None
    if key_spans is None:
        picked = [
            blocked_from_spans(causal_spans((rows, cols), q_len, k_len), k_len)[None]
            if c.causal
            else None
            if m is None
            else _pick(_hidden(m), rows, cols)
            for c, m in zip(records, masks, strict=True)
        ]
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
    softcap = logits = None
    if any(c.softcap for c in records):
        softcap = np.array([c.softcap for c in records], dtype=np.float32)
    if has_sinks:
        logits = _numpy(
            torch.stack(
                [
                    torch.full((heads,), -torch.inf) if c.sinks is None else c.sinks.float()
                    for c in records
                ]
            )
        )
    reference = _reference(records, rows, cols)
    if reference is not None:
        _check_rows(reference[0], None, has_sinks, name, dtype)
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
        sinks=logits,
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
    *,
    dtype: torch.dtype,
) -> AttentionStream:
    """A stream of the weights themselves, as float16 (attention-only families).

    A mask is kept where the calls carry one (the keys outside a Longformer window).
    """
    rows, cols = trim
    weights = []
    for call in records:
        if call.weights is None:
            raise RuntimeError(f"{name}: a captured layer recorded no attention weights.")
        layer = _pick(call.weights, rows, cols).to(torch.float32)
        _check_rows(layer.cpu().numpy(), None, False, name, dtype)
        weights.append(layer.to(torch.float16))
    heads, q_len, k_len = weights[0].shape
    masks = [None if c.mask is None else _pick(_hidden(c.mask), rows, cols) for c in records]
    mask = _stack_terms(masks, heads, q_len, k_len, False)
    return AttentionStream(
        torch.stack(weights).cpu().numpy(),
        query_side=sides[0],
        key_side=sides[1],
        layers=layers,
        mask=None if mask is None else mask.numpy(),
        name=name,
    )


def _pick_rows(tensor: torch.Tensor | None, positions: list[int] | None) -> torch.Tensor:
    """Keep the non-padding positions of a (heads, positions, head_dim) tensor."""
    assert tensor is not None  # build_stream checked every call has q and k
    return tensor if positions is None else tensor[:, positions]


def _width_note(name: str, calls: Calls) -> str | None:
    """Say which layers' q and k were zero-padded, when head_dim differs between layers."""
    dims = {layer: int(c.query.shape[-1]) for layer, c in calls if c.query is not None}
    if len(set(dims.values())) < 2:
        return None
    widest = max(dims.values())
    narrow = sorted({d for d in dims.values() if d != widest})
    which = [str(layer) for layer, d in sorted(dims.items()) if d == widest]
    verb = f"layer {which[0]} has" if len(which) == 1 else f"layers {', '.join(which)} have"
    return (
        f"{name}: {verb} head_dim {widest}, the others {' or '.join(map(str, narrow))}; "
        f"their q and k are zero-padded to {widest} in the trace (every q·k is unchanged)."
    )


_ERRORS: weakref.WeakKeyDictionary[AttentionStream, float | None] = weakref.WeakKeyDictionary()


def check_error(stream: AttentionStream) -> float | None:
    """``stream.check_error()``, computed once for a stream capture built (it is read twice).

    Examples
    --------
    >>> import numpy as np
    >>> q = np.zeros((1, 1, 2, 4), np.float32)
    >>> check_error(AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32), queries=q, keys=q))
    0.0
    """
    if stream not in _ERRORS:
        _ERRORS[stream] = stream.check_error()
    return _ERRORS[stream]


def _checked(stream: AttentionStream, limit: float, again: Any) -> tuple[AttentionStream, str]:
    """``stream``, or the one ``again()`` builds without sink logits if only that one fits.

    GraniteSWA's sinks scale each head's output after softmax: the weights it
    returns are a plain softmax, which the sink logits would not reproduce.
    """
    error = check_error(stream)
    if stream.sinks is None or error is None or error <= limit:
        return stream, ""
    try:
        plain: AttentionStream = again()
    except NotSoftmaxError:  # without the sinks the rows do not sum to 1: keep them
        return stream, ""
    fixed = check_error(plain)
    if fixed is None or fixed > limit:
        return stream, ""
    return plain, (
        f"{stream.name}: the model's attention sinks scale each head's output after softmax "
        "rather than joining it as a logit; the weights shown are the softmax before that "
        "scaling, as the model returns them."
    )


def build_streams(
    name: str,
    calls: Calls,
    *,
    rows: Axis,
    cols: Axis,
    query_side: Side = "source",
    key_side: Side = "source",
    dtype: torch.dtype = torch.float32,
) -> tuple[list[AttentionStream], list[str]]:
    """Streams for one kind of attention: one per layer shape, with notes on what is left out.

    Parameters are those of :func:`build_stream`, with ``rows`` and ``cols``
    saying how many positions the model saw; ``calls`` may mix shapes.

    Examples
    --------
    >>> calls = [(0, AttentionCall(weights=torch.full((1, 2, 2), 0.5))),
    ...          (1, AttentionCall(weights=torch.full((2, 2, 2), 0.5)))]
    >>> streams, notes = build_streams("self", calls, rows=Axis(2), cols=Axis(2))
    >>> [(s.name, s.num_heads) for s in streams]
    [('self', 1), ('self-2heads', 2)]
    """
    groups, notes = group_layers(name, calls, rows, cols)
    streams: list[AttentionStream] = []
    keep_rows = None if rows.keep is None else list(rows.keep)
    keep_cols = None if cols.keep is None else list(cols.keep)
    for group in groups:

        def build(group: Any = group, sinks: bool = True) -> AttentionStream:
            return build_stream(
                group.name,
                group.calls,
                rows=keep_rows,
                cols=keep_cols,
                query_side=query_side,
                key_side=key_side,
                dtype=dtype,
                sinks=sinks,
            )

        try:
            stream = build()
        except NotSoftmaxError as err:  # this stream only: the others may still be shown
            notes.append(f"{group.name} not shown: {err}")
            continue
        stream, said = _checked(stream, tolerance(dtype), lambda build=build: build(sinks=False))
        streams.append(stream)
        notes += [n for n in (_width_note(group.name, group.calls), said) if n]
    eager = sorted({c.eager_why for _, c in calls if c.eager_why})
    notes += [f"{name}: {why}" for why in eager]
    return streams, notes
