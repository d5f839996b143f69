"""Signed arrays for a comparison's ``A − B`` chunks: one signed byte per value.

A difference of two weights lies in ``[-1, 1]`` and is mostly near 0, so each
row (or thumbnail) is scaled by its own largest magnitude, as the weights are
by their row maximum (``docs/protocol.md``, "Comparisons"):
``d ≈ byte / 127 * absmax`` with ``byte`` an ``i8`` in ``-127 .. 127``, rounded
to nearest, so the error of every decoded value is at most ``absmax / 254``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.encode.arrays import F32Array, top_keys

I8Array = npt.NDArray[np.int8]

SIGNED_FULL = 127
"""The byte a row's largest magnitude is written as (``-127`` when negative)."""


def signed_rows(values: F32Array) -> tuple[I8Array, F32Array]:
    """One signed byte per value and each row's largest magnitude.

    Examples
    --------
    >>> import numpy as np
    >>> signed_rows(np.array([[0.5, -0.25, 0.0]], np.float32))
    (array([[127, -64,   0]], dtype=int8), array([0.5], dtype=float32))
    """
    absmax = np.abs(values).max(axis=-1).astype(np.float32)
    return _quantize(values, absmax[..., None]), absmax


def _quantize(values: F32Array, absmax: F32Array) -> I8Array:
    scale = np.divide(SIGNED_FULL, absmax, out=np.zeros_like(absmax), where=absmax > 0)
    return np.clip(np.rint(values * scale), -SIGNED_FULL, SIGNED_FULL).astype(np.int8)


def signed_thumbnails(values: F32Array, rows: int, cols: int) -> tuple[I8Array, F32Array]:
    """Block-pooled signed thumbnails: each block keeps its value of largest magnitude.

    Parameters
    ----------
    values
        ``(layers, heads, q_len, k_len)`` differences.
    rows, cols
        Thumbnail size, blocks as in :func:`~attnscope.encode.arrays.thumbnails`.

    Returns
    -------
    tuple
        ``thumbs`` i8 ``(layers, heads, rows, cols)``, each thumbnail scaled so
        its largest magnitude is 127, and that magnitude, f32 ``(layers, heads)``.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.zeros((1, 1, 2, 4), np.float32); d[0, 0, 0, 1] = -0.4; d[0, 0, 1, 3] = 0.2
    >>> thumbs, absmax = signed_thumbnails(d, 2, 2)
    >>> thumbs[0, 0].tolist(), absmax.tolist()
    ([[-127, 0], [0, 64]], [[0.4000000059604645]])
    """
    q_len, k_len = values.shape[2], values.shape[3]
    row_edges = np.arange(rows) * q_len // rows
    col_edges = np.arange(cols) * k_len // cols
    high = np.maximum.reduceat(np.maximum.reduceat(values, col_edges, axis=3), row_edges, axis=2)
    low = np.minimum.reduceat(np.minimum.reduceat(values, col_edges, axis=3), row_edges, axis=2)
    pooled = np.where(-low > high, low, high)
    absmax = np.abs(pooled).max(axis=(2, 3)).astype(np.float32)
    return _quantize(pooled, absmax[..., None, None]), absmax


def signed_top_keys(
    values: F32Array, k: int
) -> tuple[npt.NDArray[np.unsignedinteger[Any]], I8Array, F32Array]:
    """Each row's ``k`` keys of largest magnitude, largest first, as signed bytes.

    Examples
    --------
    >>> import numpy as np
    >>> index, weight, absmax = signed_top_keys(np.array([[0.1, -0.3, 0.2]], np.float32), 2)
    >>> index.tolist(), weight.tolist(), absmax.tolist()
    ([[1, 2]], [[-127, 85]], [0.30000001192092896])
    """
    index, _, _ = top_keys(np.abs(values), k)
    chosen = np.take_along_axis(values, index.astype(np.intp), axis=-1)
    absmax = np.abs(values).max(axis=-1).astype(np.float32)
    return index, _quantize(chosen, absmax[..., None]), absmax
