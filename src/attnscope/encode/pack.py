"""Pack a chunk as the exported page embeds it: deflate-raw, then base64.

Arrays are concatenated, each at an 8-byte aligned offset, and compressed
with settings chosen by what the bytes are (``docs/protocol.md``, "The
exported page"). The neuron view's ``q`` and ``k`` travel as float16 unless
the page asks for float32: each array's half-precision bytes *shuffled*, all
high bytes, then all low bytes. The high bytes (sign, exponent, top mantissa
bits) repeat a lot and deflate well once they stand together; the low bytes
are close to noise.

Deflate settings were chosen by measurement: every chunk of the default
page of MiniLM (6 layers x 12 heads, head dim 32) at 512 tokens, compressed
size as a share of the raw bytes and seconds for all chunks of the kind
(2026-11-23, this project's 2-core machine under a load of ~4.7, so the
seconds are relative; the chosen setting in bold):

==========  ======  =============  =============  =============  =============  =============
chunks      raw MB  Huffman only   RLE            level 1        level 5 filt.  level 6
==========  ======  =============  =============  =============  =============  =============
qk f16 sh.  4.72    **84.5% .09s** 84.5% .09s     91.1% .27s     84.7% .26s     89.5% .24s
qk f32      9.44    **92.5% .26s** 92.5% .21s     92.8% .67s     92.5% .65s     92.6% .67s
attn u8     19.02   40.5% .43s     **37.7% .41s** 40.6% .53s     36.0% 1.04s    36.3% 1.80s
thumbs u8   0.29    44.8% .005s    **42.9% .005s**  46.2% .005s  41.4% .014s    41.6% .026s
top         7.23    64.9% .15s     59.1% .14s     **55.3% .22s** 55.5% .77s     52.5% .89s
pseudo      1.20    58.1% .02s     51.8% .02s     **51.4% .03s** 50.7% .10s     48.9% .13s
==========  ======  =============  =============  =============  =============  =============

Float bytes have next to no repeats for LZ77 to find, so Huffman coding
alone is as small and several times faster; shuffled float16 halves the q/k
bytes and Huffman codes the high-byte half to about 70%. One-byte weights
are mostly runs of zeros and small values: RLE (matches at distance 1 only)
is within 2% of the best and 2.5x faster than level 5. ``top:`` indices
repeat at longer distances: level 1 of the default strategy costs 5% more
bytes than level 6 for a quarter of the time.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Collection
from typing import Any

import numpy as np

from attnscope.encode.arrays import NamedArray, dtype_code
from attnscope.encode.byte_layout import concatenated_bytes

HALF_ARRAYS = frozenset({"q", "k"})
"""Arrays a page sends as shuffled float16 by default (the neuron view's vectors)."""

F16_LIMIT = 65504.0
"""Largest float16; an array with a larger magnitude stays float32."""

SHUFFLED = "f16-shuffled"
"""The ``encoding`` of an array sent as shuffled float16 (its ``dtype`` stays ``f32``)."""


def shuffled_half(array: np.ndarray[Any, Any]) -> bytes:
    """float16 bytes of ``array``, all high bytes first, then all low bytes.

    Examples
    --------
    >>> shuffled_half(np.array([1.0, -2.0], np.float32)).hex()  # 0x3c00, 0xc000
    '3cc00000'
    """
    half = np.ascontiguousarray(array, dtype="<f2").view(np.uint8).reshape(-1, 2)
    return half[:, 1].tobytes() + half[:, 0].tobytes()


def _encoded(arrays: list[NamedArray], half: Collection[str]) -> tuple[bytes, list[dict[str, Any]]]:
    """The concatenated bytes (8-byte aligned) and the array specs of the page."""
    raw = bytearray()
    specs: list[dict[str, Any]] = []
    for name, array in arrays:
        raw += b"\0" * (-len(raw) % 8)
        spec: dict[str, Any] = {"name": name, "dtype": dtype_code(array.dtype)}
        spec["shape"] = list(array.shape)
        fits = array.size == 0 or float(np.abs(array).max()) <= F16_LIMIT
        if name in half and array.dtype == np.float32 and fits:
            spec["encoding"] = SHUFFLED
            raw += shuffled_half(array)
        else:
            raw += concatenated_bytes([(name, array)])
        specs.append(spec)
    return bytes(raw), specs


def pack_chunk(arrays: list[NamedArray], *, half: Collection[str] = HALF_ARRAYS) -> dict[str, Any]:
    """Pack a chunk as the page embeds it: array specs, base64 of deflate-raw of the bytes.

    Each array starts at an 8-byte aligned offset of the concatenated bytes.
    float32 arrays named in ``half`` travel as shuffled float16 (their spec
    says ``"encoding": "f16-shuffled"``) when every value fits float16;
    ``half=()`` keeps float32. Deflate settings follow the bytes (see the
    module's table).

    Examples
    --------
    >>> packed = pack_chunk([("a", np.zeros(3, np.uint8)), ("b", np.ones(1, np.float32))])
    >>> [a["dtype"] for a in packed["arrays"]], len(unpack_bytes(packed["data"]))
    (['u8', 'f32'], 12)
    >>> pack_chunk([("q", np.ones((2, 2), np.float32))])["arrays"]
    [{'name': 'q', 'dtype': 'f32', 'shape': [2, 2], 'encoding': 'f16-shuffled'}]
    """
    raw, specs = _encoded(arrays, half)
    deflate = zlib.compressobj(*_deflate_settings(arrays, specs, len(raw)))
    compressed = deflate.compress(raw) + deflate.flush()
    return {"arrays": specs, "data": base64.b64encode(compressed).decode("ascii")}


def _deflate_settings(
    arrays: list[NamedArray], specs: list[dict[str, Any]], total: int
) -> tuple[int, int, int, int, int]:
    # (level, method, wbits: -15 is raw deflate, memLevel, strategy); see the module's table.
    floats = sum(
        a.nbytes // (2 if "encoding" in s else 1)
        for (_, a), s in zip(arrays, specs, strict=True)
        if a.dtype.kind == "f"
    )
    if 2 * floats > total:
        return 1, zlib.DEFLATED, -15, 8, zlib.Z_HUFFMAN_ONLY
    if 2 * sum(a.nbytes for _, a in arrays if a.dtype.itemsize == 1) > total:
        return 1, zlib.DEFLATED, -15, 8, zlib.Z_RLE
    return 1, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY


def unpack_bytes(data: str) -> bytes:
    """Inverse of the page's encoding: base64, then inflate (deflate-raw)."""
    return zlib.decompress(base64.b64decode(data), -15)
