"""Checks shared by the trace builders: each error names the value and the fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError, AttnscopeTypeError

FloatArray = npt.NDArray[np.float32]

ROW_SUM_TOLERANCE = {"float32": 1e-3, "float16": 5e-3, "bfloat16": 1e-2}
"""How far an attention row's sum may stray from 1, by the precision its weights carry.

float32 (and float64) weights sum to 1 within rounding of a long sum; weights
whose values are all exact float16 or bfloat16 numbers came from a
half-precision model (converted to float32 on the way, as capture does) and
carry that precision's rounding: bfloat16 rows sum to 1 only within ~4e-3.
"""


def as_float32(value: Any, what: str, *, allow_inf: bool = False) -> FloatArray:
    """Convert ``value`` (array, tensor, list) to a float32 numpy array, checking it is finite."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().float().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise AttnscopeTypeError(f"{what} must be a numeric array or tensor: {err}") from None
    bad = np.isnan(array) if allow_inf else ~np.isfinite(array)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        kind = "NaN" if np.isnan(array[where]) else "inf"
        raise AttnscopeError(
            f"{what} contains {int(bad.sum())} non-finite value(s) ({kind} first at index "
            f"{where}); check the model ran in float32 and that no row is fully masked "
            "before softmax."
        )
    return np.ascontiguousarray(array)


def check_rank(array: FloatArray, rank: int, what: str, stream: str) -> FloatArray:
    """Raise unless ``array`` has exactly ``rank`` dimensions."""
    if array.ndim != rank:
        raise AttnscopeError(
            f"{stream}: {what} must be {rank}-D (layers, heads, positions, ...); "
            f"got shape {array.shape}."
        )
    return array


def check_attention(array: FloatArray, stream: str) -> FloatArray:
    """Attention must be 4-D, non-empty, and hold weights in [0, 1]."""
    if array.ndim != 4:
        hint = (
            " A single layer's (heads, q, k) array needs a leading layer axis: use attention[None]."
            if array.ndim == 3
            else ""
        )
        raise AttnscopeError(
            f"{stream}: attention must be 4-D (layers, heads, q_len, k_len); got shape "
            f"{array.shape}.{hint}"
        )
    if 0 in array.shape:
        raise AttnscopeError(
            f"{stream}: attention is empty (shape {array.shape}): a trace needs at least one "
            "layer, head, query and key. Pass the weights of a non-empty input, one row and "
            "one column per token."
        )
    low = float(array.min())
    if low < -1e-6:
        where = tuple(int(i) for i in np.unravel_index(int(array.argmin()), array.shape))
        raise AttnscopeError(
            f"{stream}: attention has negative weight {low:.4g} at (layer, head, q, k) = "
            f"{where}; pass softmax probabilities, not raw scores or logits."
        )
    high = float(array.max())
    if high > 1 + 1e-4:
        where = tuple(int(i) for i in np.unravel_index(int(array.argmax()), array.shape))
        raise AttnscopeError(
            f"{stream}: attention has weight {high:.4g} > 1 at (layer, head, q, k) = "
            f"{where}; pass softmax probabilities, not raw scores or logits."
        )
    return array


def weight_precision(array: FloatArray) -> str:
    """The narrowest float type that holds every value of ``array`` exactly.

    Examples
    --------
    >>> weight_precision(np.array([0.5, 0.25], np.float32))
    'bfloat16'
    >>> weight_precision(np.array([1 / 3], np.float32))
    'float32'
    """
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    if not np.any(bits & 0xFFFF):
        return "bfloat16"  # bfloat16 is the top half of a float32
    if np.array_equal(array.astype(np.float16).astype(np.float32), array):
        return "float16"
    return "float32"


def check_rows(array: FloatArray, stream: str, *, sinks: bool = False) -> None:
    """Each query's row of weights sums to 1 (``<= 1`` with sinks), or is all zero.

    An all-zero row is a query that saw no key (fully masked); with attention
    sinks part of each row's weight went to the sink, so rows may sum to less
    than 1. The tolerance is :data:`ROW_SUM_TOLERANCE` for the precision the
    weights carry.

    Examples
    --------
    >>> check_rows(np.full((1, 1, 3, 3), 0.2, np.float32), "self")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: self: attention row (layer, head, query) = (0, 0, 0) sums...
    """
    sums = array.sum(-1, dtype=np.float64)
    bad = _rows_off(sums, ROW_SUM_TOLERANCE["float32"], sinks)
    if not bad.any():
        return
    tolerance = ROW_SUM_TOLERANCE[weight_precision(array)]
    bad = _rows_off(sums, tolerance, sinks)
    if not bad.any():
        return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    expected = "at most 1" if sinks else "1"
    raise AttnscopeError(
        f"{stream}: attention row (layer, head, query) = {where} sums to "
        f"{float(sums[where]):.4g}, not {expected} ({int(bad.sum())} of {bad.size} rows are "
        f"off by more than {tolerance:g}). Pass softmax probabilities: each query's weights "
        "over the keys sum to 1 (softmax over the last axis); an all-zero row marks a fully "
        "masked query, and sinks= lets rows give part of their weight to attention sinks."
    )


def _rows_off(
    sums: npt.NDArray[np.float64], tolerance: float, sinks: bool
) -> npt.NDArray[np.bool_]:
    over = np.greater(sums, 1 + tolerance)
    if sinks:
        return over
    return over | (np.less(sums, 1 - tolerance) & np.not_equal(sums, 0))


def check_bool_mask(value: Any, stream: str) -> npt.NDArray[np.bool_]:
    """A mask is boolean, True where a key is hidden from a query."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype != np.bool_:
        raise AttnscopeTypeError(
            f"{stream}: mask must be boolean (True = key hidden from the query); got "
            f"dtype {array.dtype}. Convert an additive mask with `mask < 0` or `mask == -inf`."
        )
    return np.ascontiguousarray(array)
