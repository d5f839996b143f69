"""Answer the browser's chunk requests with custom messages of bounded size.

:func:`reply_messages` turns ``{"type": "request", "keys": [...]}`` into
``"chunks"`` messages whose buffers hold each array's little-endian bytes
(``docs/protocol.md``, "Messages").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from attnscope.encode.arrays import NamedArray, dtype_code
from attnscope.encode.chunks import ChunkCache, encode_chunk, parse_key
from attnscope.trace import AttentionTrace

MESSAGE_BYTES = 64 * 1024 * 1024
"""Most bytes of buffers in one reply message (one larger chunk still goes, alone)."""


def wire_arrays(arrays: Sequence[NamedArray], first_buffer: int) -> list[dict[str, Any]]:
    """Array descriptors ``{name, dtype, shape, buffer}`` for a reply message."""
    return [
        {"name": name, "dtype": dtype_code(a.dtype), "shape": list(a.shape), "buffer": i}
        for i, (name, a) in enumerate(arrays, start=first_buffer)
    ]


def little_endian_bytes(array: np.ndarray[Any, Any]) -> bytes:
    """Return the array's bytes, little-endian and in C order."""
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def reply_messages(
    trace: AttentionTrace,
    keys: object,
    *,
    max_bytes: int = MESSAGE_BYTES,
    cache: ChunkCache | None = None,
    encode: Callable[[object], list[NamedArray]] | None = None,
) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
    """Answer a request for ``keys`` with ``(content, buffers)`` messages.

    Chunks go in the order asked, batched so no message carries more than
    ``max_bytes`` of buffers (a single larger chunk goes in a message of its
    own). A key that cannot be served is answered with ``{"key", "error"}``.
    Chunks come from ``cache`` when one is given. ``encode``, when given,
    serves keys instead of ``trace`` (a comparison's side chunks); it raises
    ValueError for a key it cannot serve.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
    >>> [c["chunks"][0]["error"][:25] for c, _ in reply_messages(t, ["nope:self"])]
    ["unknown chunk kind 'nope'"]
    """
    if not isinstance(keys, list | tuple):
        keys = [keys]
    chunks: list[dict[str, Any]] = []
    buffers: list[bytes] = []
    size = 0
    for raw in keys:
        try:
            if encode is not None:
                arrays = encode(raw)
            else:
                key = parse_key(raw, trace)
                arrays = cache.encode(trace, key) if cache else encode_chunk(trace, key)
        except ValueError as err:
            chunks.append({"key": str(raw), "error": str(err)})
            continue
        data = [little_endian_bytes(a) for _, a in arrays]
        nbytes = sum(len(d) for d in data)
        if buffers and size + nbytes > max_bytes:
            yield {"type": "chunks", "chunks": chunks}, buffers
            chunks, buffers, size = [], [], 0
        chunks.append({"key": str(raw), "arrays": wire_arrays(arrays, len(buffers))})
        buffers += data
        size += nbytes
    if chunks or not keys:
        yield {"type": "chunks", "chunks": chunks}, buffers
