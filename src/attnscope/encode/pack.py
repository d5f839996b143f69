"""Pack a chunk as the exported page embeds it: deflate-raw, then base64.

Arrays are concatenated, each at an 8-byte aligned offset, and compressed
with settings chosen by what the bytes are (``docs/protocol.md``, "The
exported page").
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

from attnscope.encode.arrays import NamedArray, dtype_code
from attnscope.encode.messages import concatenated_bytes


def pack_chunk(arrays: list[NamedArray]) -> dict[str, Any]:
    """Pack a chunk as the page embeds it: array specs, base64 of deflate-raw of the bytes.

    Each array starts at an 8-byte aligned offset of the concatenated bytes.
    The deflate settings follow the bytes (measured on MiniLM at 512 tokens):
    mostly float32 (q/k vectors) is Huffman-coded only, as LZ77 finds next to
    no repeats in float bytes and would take three times as long for the same
    size; mostly u8 (weights, thumbnails) uses the filtered strategy at level
    5, smaller than the default at level 6 and about 30% faster; the rest
    (top keys with their u16 indices) the default at level 6.

    Examples
    --------
    >>> import numpy as np
    >>> packed = pack_chunk([("a", np.zeros(3, np.uint8)), ("b", np.ones(1, np.float32))])
    >>> [a["dtype"] for a in packed["arrays"]], len(unpack_bytes(packed["data"]))
    (['u8', 'f32'], 12)
    """
    raw = concatenated_bytes(arrays)
    deflate = zlib.compressobj(*_deflate_settings(arrays, len(raw)))
    compressed = deflate.compress(raw) + deflate.flush()
    return {
        "arrays": [
            {"name": name, "dtype": dtype_code(a.dtype), "shape": list(a.shape)}
            for name, a in arrays
        ],
        "data": base64.b64encode(compressed).decode("ascii"),
    }


def _deflate_settings(arrays: list[NamedArray], total: int) -> tuple[int, int, int, int, int]:
    # (level, method, wbits: -15 is raw deflate, memLevel, strategy)
    floats = sum(a.nbytes for _, a in arrays if a.dtype.kind == "f")
    if 2 * floats > total:
        return 1, zlib.DEFLATED, -15, 8, zlib.Z_HUFFMAN_ONLY
    if 2 * sum(a.nbytes for _, a in arrays if a.dtype.itemsize == 1) > total:
        return 5, zlib.DEFLATED, -15, 8, zlib.Z_FILTERED
    return 6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY


def unpack_bytes(data: str) -> bytes:
    """Inverse of the page's encoding: base64, then inflate (deflate-raw)."""
    return zlib.decompress(base64.b64decode(data), -15)
