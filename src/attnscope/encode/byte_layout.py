"""How a chunk's arrays become bytes: little-endian, C order, each at an 8-byte aligned offset.

The reply messages (:mod:`attnscope.encode.messages`) and the page's packed
chunks (:mod:`attnscope.encode.pack`) both lay arrays out this way
(``docs/protocol.md``, "Messages").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attnscope.encode.arrays import NamedArray

ALIGN = 8
"""Byte alignment of each array inside a chunk's concatenated bytes (parts, the page)."""


def little_endian_bytes(array: np.ndarray[Any, Any]) -> bytes:
    """Return the array's bytes, little-endian and in C order.

    Examples
    --------
    >>> list(little_endian_bytes(np.array([1], ">u2")))
    [1, 0]
    """
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def concatenated_bytes(arrays: Sequence[NamedArray]) -> bytes:
    """The arrays' little-endian bytes one after another, each at an 8-byte aligned offset.

    Examples
    --------
    >>> len(concatenated_bytes([("a", np.zeros(3, np.uint8)), ("b", np.ones(1, np.float32))]))
    12
    """
    raw = bytearray()
    for _, array in arrays:
        raw += b"\0" * (-len(raw) % ALIGN)
        raw += little_endian_bytes(array)
    return bytes(raw)
