"""Key spans of transformers' own mask functions, in closed form: O(N), not N² evaluations.

A :class:`~attnscope.sources.hf.row_mask.RowMask` keeps the mask function
transformers built (causal, sliding window, chunked, bidirectional, each with
or without a padding mask) and its arguments. Evaluated over every (query,
key) pair, a block of rows at a time, finding each query's visible keys costs
N² evaluations (97 s at 32768 tokens). Each of these functions says, per
query, "keys from here to there" in a formula, so the spans follow from the
formula and one pass over the padding mask.

A function is recognised by its code object: the closures transformers'
factories return (``and_masks``, ``sliding_window_overlay``, ...) share one
code object per factory, and their captured values (window, chunk size, left
padding, padding mask) are read from the closure. Anything else (a user's
function, ``or_masks``, packed sequences, a new family's overlay) is not
recognised and returns None: the caller evaluates the function instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import CodeType
from typing import Any

import numpy as np
import torch


class _UnknownMaskError(Exception):
    """A mask function (or argument) this module does not know for certain."""


@dataclass
class _Bounds:
    """Per-query ``[lo, hi)`` of absolute key positions, and the padding masks that cut them."""

    lo: np.ndarray[Any, Any]
    hi: np.ndarray[Any, Any]
    keys: list[np.ndarray[Any, Any]] = field(default_factory=list)
    """Boolean rows (absolute key positions) a key must be True in: padding masks."""


@cache
def _codes() -> dict[str, CodeType]:
    """The code objects of transformers' mask functions, one per factory that exists."""
    from transformers import masking_utils as mu

    left = torch.zeros(1, dtype=torch.long)
    makers: dict[str, Callable[[], Any]] = {
        "and": lambda: mu.and_masks(mu.causal_mask_function),
        "causal": lambda: mu.causal_mask_function,
        "bidirectional": lambda: mu.bidirectional_mask_function,
        "window": lambda: mu.sliding_window_overlay(1),
        "window_both_ways": lambda: mu.sliding_window_bidirectional_overlay(1),
        "chunk": lambda: mu.chunked_overlay(1, left),
        "padding": lambda: mu.padding_mask_function(left.bool()[None]),
    }
    found = {}
    for name, make in makers.items():
        try:
            found[name] = make().__code__
        except (AttributeError, TypeError):  # a transformers without it, or with another form
            continue
    return found


def _closure(function: Any) -> dict[str, Any]:
    code = function.__code__
    cells = function.__closure__ or ()
    return {name: cell.cell_contents for name, cell in zip(code.co_freevars, cells, strict=True)}


def _integer(value: Any) -> int:
    """A Python or 0-d tensor integer as int; anything else is not known."""
    if isinstance(value, bool):
        raise _UnknownMaskError
    if isinstance(value, int):
        return value
    if isinstance(value, torch.Tensor) and value.ndim == 0 and not value.dtype.is_floating_point:
        return int(value)
    raise _UnknownMaskError


def _apply(function: Any, q: np.ndarray[Any, Any], bounds: _Bounds) -> None:
    """Cut ``bounds`` to the keys ``function`` lets each query (absolute position ``q``) see."""
    code = getattr(function, "__code__", None)
    kind = next((name for name, known in _codes().items() if code is known), None)
    if kind is None:
        raise _UnknownMaskError
    values = _closure(function)
    if kind == "and":
        for part in values["mask_functions"]:
            _apply(part, q, bounds)
    elif kind == "causal":
        np.minimum(bounds.hi, q + 1, out=bounds.hi)
    elif kind == "bidirectional":  # q_idx >= 0
        bounds.hi[q < 0] = bounds.lo[q < 0]
    elif kind == "window":  # kv_idx > q_idx - sliding_window
        np.maximum(bounds.lo, q - _integer(values["sliding_window"]) + 1, out=bounds.lo)
    elif kind == "window_both_ways":  # |q_idx - kv_idx| <= sliding_window
        window = _integer(values["sliding_window"])
        np.maximum(bounds.lo, q - window, out=bounds.lo)
        np.minimum(bounds.hi, q + window + 1, out=bounds.hi)
    elif kind == "chunk":  # (kv - pad) // size == (q - pad) // size
        size, left = _integer(values["chunk_size"]), values["left_padding"]
        if size <= 0 or not isinstance(left, torch.Tensor) or left.ndim != 1:
            raise _UnknownMaskError
        pad = _integer(left[0].cpu())
        chunk = np.floor_divide(q - pad, size) * size + pad
        np.maximum(bounds.lo, chunk, out=bounds.lo)
        np.minimum(bounds.hi, chunk + size, out=bounds.hi)
    else:  # padding: padding_mask[batch, kv_idx]
        bounds.keys.append(_padding_row(values["padding_mask"], None))


def _padding_row(mask: Any, length: int | None) -> np.ndarray[Any, Any]:
    """Batch item 0 of a boolean ``(batch, keys)`` padding mask, padded False to ``length``."""
    if not isinstance(mask, torch.Tensor) or mask.ndim != 2 or mask.dtype != torch.bool:
        raise _UnknownMaskError
    row = mask[0].cpu().numpy()
    if length is not None and row.shape[0] < length:  # as prepare_padding_mask pads it
        row = np.concatenate([row, np.zeros(length - row.shape[0], bool)])
    return row


def _query_positions(arguments: Mapping[str, Any], q_len: int) -> np.ndarray[Any, Any]:
    """Absolute query positions: ``q_offset + range(q_length)``, or ``cache_position``."""
    if arguments.get("q_length") is not None:
        offset = _integer(arguments.get("q_offset") or 0)
        return np.arange(q_len, dtype=np.int64) + offset
    position = arguments.get("cache_position")
    if not isinstance(position, torch.Tensor) or position.ndim != 1 or len(position) != q_len:
        raise _UnknownMaskError
    if position.dtype.is_floating_point:
        raise _UnknownMaskError
    return position.cpu().numpy().astype(np.int64)


def _is_sdpa_mask(build: Any) -> bool:
    """Whether ``build`` is transformers' sdpa_mask as this module reads it."""
    from transformers import masking_utils as mu

    older = getattr(mu, "sdpa_mask_older_torch", None)  # it shows fully hidden rows everything
    if build is not getattr(mu, "sdpa_mask", None) or build is older:
        return False
    return getattr(mu, "_is_torch_greater_or_equal_than_2_5", True) is not False  # same fix


def closed_form_spans(
    arguments: Mapping[str, Any], build: Any, q_len: int, k_len: int
) -> np.ndarray[Any, Any] | None:
    """``(q_len, 2)`` visible-key spans of batch item 0, or None where the mask is not known.

    ``arguments`` are those transformers gave ``build`` (its ``sdpa_mask``):
    the mask function, offsets, padding mask. The spans are what evaluating
    the function over every (query, key) pair finds, from the function's
    formula: int32 ``[start, stop)`` per query, ``[0, 0)`` where a query sees
    no key. None when ``build`` is not transformers' sdpa_mask, the function
    is not one transformers' factories built, or a padding mask with gaps
    could leave a query keys that are not one run.

    Examples
    --------
    >>> from transformers.masking_utils import sdpa_mask, sliding_window_causal_mask_function
    >>> args = dict(batch_size=1, q_length=4, kv_length=4,
    ...             mask_function=sliding_window_causal_mask_function(2))
    >>> closed_form_spans(args, sdpa_mask, 4, 4).tolist()
    [[0, 1], [0, 2], [1, 3], [2, 4]]
    >>> closed_form_spans({**args, "mask_function": lambda b, h, q, k: k <= q}, sdpa_mask, 4, 4)
    """
    if not _is_sdpa_mask(build):
        return None
    try:
        return _spans(arguments, q_len, k_len)
    except _UnknownMaskError:
        return None


def _spans(arguments: Mapping[str, Any], q_len: int, k_len: int) -> np.ndarray[Any, Any]:
    offset = _integer(arguments.get("kv_offset") or 0)
    if offset < 0:  # a negative key position indexes a padding mask from its end
        raise _UnknownMaskError
    q = _query_positions(arguments, q_len)
    bounds = _Bounds(np.full(q_len, offset, np.int64), np.full(q_len, offset + k_len, np.int64))
    _apply(arguments.get("mask_function"), q, bounds)
    if arguments.get("attention_mask") is not None:  # sdpa_mask adds padding_mask_function
        bounds.keys.append(_padding_row(arguments["attention_mask"], offset + k_len))
    if bounds.keys:
        first, stop = _one_run(bounds.keys, offset, offset + k_len)
        np.maximum(bounds.lo, first, out=bounds.lo)
        np.minimum(bounds.hi, stop, out=bounds.hi)
    spans = np.stack([bounds.lo - offset, bounds.hi - offset], axis=-1)
    spans[bounds.hi <= bounds.lo] = 0
    return spans.astype(np.int32)


def _one_run(rows: list[np.ndarray[Any, Any]], start: int, stop: int) -> tuple[int, int]:
    """``[first, stop)`` of the keys in ``[start, stop)`` every row allows, if they are one run."""
    for row in rows:
        if row.shape[0] < stop:  # the function would index past the mask
            raise _UnknownMaskError
    allowed = np.logical_and.reduce([row[start:stop] for row in rows])
    where = np.flatnonzero(allowed)
    if not len(where):
        return start, start
    if where[-1] - where[0] + 1 != len(where):  # a gap: a query's keys may be two runs
        raise _UnknownMaskError
    return start + int(where[0]), start + int(where[-1]) + 1
