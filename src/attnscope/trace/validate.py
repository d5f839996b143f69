"""Checks shared by the trace builders: each error names the value and the fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


def as_float32(value: Any, what: str, *, allow_inf: bool = False) -> FloatArray:
    """Convert ``value`` (array, tensor, list) to a float32 numpy array, checking it is finite."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().float().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be a numeric array or tensor: {err}") from None
    bad = np.isnan(array) if allow_inf else ~np.isfinite(array)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        kind = "NaN" if np.isnan(array[where]) else "inf"
        raise ValueError(
            f"{what} contains {int(bad.sum())} non-finite value(s) ({kind} first at index "
            f"{where}); check the model ran in float32 and that no row is fully masked "
            "before softmax."
        )
    return np.ascontiguousarray(array)


def check_rank(array: FloatArray, rank: int, what: str, stream: str) -> FloatArray:
    """Raise unless ``array`` has exactly ``rank`` dimensions."""
    if array.ndim != rank:
        raise ValueError(
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
        raise ValueError(
            f"{stream}: attention must be 4-D (layers, heads, q_len, k_len); got shape "
            f"{array.shape}.{hint}"
        )
    if 0 in array.shape:
        raise ValueError(f"{stream}: attention is empty (shape {array.shape}).")
    low = float(array.min())
    if low < -1e-6:
        where = tuple(int(i) for i in np.unravel_index(int(array.argmin()), array.shape))
        raise ValueError(
            f"{stream}: attention has negative weight {low:.4g} at (layer, head, q, k) = "
            f"{where}; pass softmax probabilities, not raw scores or logits."
        )
    high = float(array.max())
    if high > 1 + 1e-4:
        where = tuple(int(i) for i in np.unravel_index(int(array.argmax()), array.shape))
        raise ValueError(
            f"{stream}: attention has weight {high:.4g} > 1 at (layer, head, q, k) = "
            f"{where}; pass softmax probabilities, not raw scores or logits."
        )
    return array


def check_bool_mask(value: Any, stream: str) -> npt.NDArray[np.bool_]:
    """A mask is boolean, True where a key is hidden from a query."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype != np.bool_:
        raise TypeError(
            f"{stream}: mask must be boolean (True = key hidden from the query); got "
            f"dtype {array.dtype}. Convert an additive mask with `mask < 0` or `mask == -inf`."
        )
    return np.ascontiguousarray(array)
