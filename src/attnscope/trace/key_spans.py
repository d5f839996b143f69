"""Masks as a rule: for each query, the one contiguous run of keys it may see.

Causal masks, sliding windows, chunked attention and padding at either end
all leave every query a single contiguous run of visible keys ``[start,
stop)``. Two integers per query then say what a ``(q_len, k_len)`` boolean
array would: the mask costs O(N), not O(N²). Masks that are not of this form
(per-head masks, holes in the middle of a row) stay dense.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError

SpanArray = npt.NDArray[np.int32]


SPAN_BLOCK_VALUES = 2**24
"""Mask entries :func:`spans_from_blocked` reads at a time (128 MB of int64 positions)."""


def spans_from_blocked(blocked: Any) -> SpanArray | None:
    """``(q_len, 2)`` visible-key runs of a ``(q_len, k_len)`` mask, or None if it has none.

    Parameters
    ----------
    blocked
        bool array or tensor, ``True`` where the key is hidden from the query.

    Returns
    -------
    numpy.ndarray or None
        int32 ``[start, stop)`` per query (``[0, 0)`` for a query that sees
        no key); None when some query sees keys that are not contiguous.

    Examples
    --------
    >>> import numpy as np
    >>> causal = np.triu(np.ones((3, 3), bool), 1)
    >>> spans_from_blocked(causal).tolist()
    [[0, 1], [0, 2], [0, 3]]
    >>> print(spans_from_blocked(np.array([[False, True, False]])))
    None
    """
    import torch

    if isinstance(blocked, np.ndarray) and not blocked.flags.writeable:
        blocked = blocked.copy()
    hidden = torch.as_tensor(blocked, dtype=torch.bool)
    if hidden.ndim != 2:
        raise AttnscopeError(f"key spans come from a 2-D (q, k) mask, not {tuple(hidden.shape)}.")
    q_len, k_len = hidden.shape
    spans: SpanArray = np.zeros((q_len, 2), np.int32)
    # A block of rows at a time, as bytes: no int64 copy of a whole mask (8 bytes per weight).
    step = max(1, SPAN_BLOCK_VALUES // max(k_len, 1))
    for first in range(0, q_len, step):
        visible = (~hidden[first : first + step]).to(torch.uint8)
        count = visible.sum(dim=1, dtype=torch.int64)
        start = visible.argmax(dim=1)  # the first visible key (0 when none)
        last = k_len - 1 - visible.flip(1).argmax(dim=1)  # the last visible key
        start = torch.where(count > 0, start, torch.zeros_like(start))
        stop = start + count
        # Contiguous iff the last visible key is start + count - 1.
        if not bool(torch.all((count == 0) | (last == stop - 1))):
            return None
        spans[first : first + step] = torch.stack([start, stop], dim=1).numpy()
    return spans


def blocked_from_spans(spans: SpanArray, k_len: int) -> Any:
    """The boolean ``(q_len, k_len)`` mask (``True`` = hidden) the spans stand for, as a tensor.

    Examples
    --------
    >>> import numpy as np
    >>> blocked_from_spans(np.array([[0, 1], [0, 2]], np.int32), 3).tolist()
    [[False, True, True], [False, False, True]]
    """
    import torch

    rows = torch.from_numpy(np.ascontiguousarray(spans))
    keys = torch.arange(k_len, dtype=torch.int32)
    return (keys < rows[:, :1]) | (keys >= rows[:, 1:])


def check_spans(spans: Any, q_len: int, k_len: int, stream: str) -> SpanArray:
    """Validate ``(layers or 1, q_len, 2)`` key spans; return them as int32.

    Examples
    --------
    >>> import numpy as np
    >>> check_spans(np.array([[[0, 1]]]), 1, 1, "self").dtype
    dtype('int32')
    """
    array = np.asarray(spans)
    if array.ndim != 3 or array.shape[1:] != (q_len, 2):
        raise AttnscopeError(
            f"{stream}: key_spans has shape {array.shape}; expected (layers or 1, {q_len}, 2): "
            "[start, stop) of the keys each query sees."
        )
    if array.size and (
        array.min() < 0 or array.max() > k_len or bool(np.any(array[..., 0] > array[..., 1]))
    ):
        raise AttnscopeError(
            f"{stream}: key_spans must hold 0 <= start <= stop <= k_len ({k_len}) for every query."
        )
    return np.ascontiguousarray(array, dtype=np.int32)
