"""Answer the browser's chunk requests with custom messages of bounded size.

:func:`reply_messages` turns ``{"type": "request", "keys": [...]}`` into
``"chunks"`` messages whose buffers hold each array's little-endian bytes
(``docs/protocol.md``, "Messages"). No message carries more than
:data:`MESSAGE_BYTES` of buffers: VS Code's Jupyter extension relays kernel
buffers to its webview as plain JS number arrays, slow and liable to throw
when large, so a chunk larger than that travels in *parts*, slices of its
arrays' concatenated bytes, one message each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from attnscope.encode.arrays import NamedArray, dtype_code
from attnscope.encode.byte_layout import concatenated_bytes, little_endian_bytes
from attnscope.encode.chunks import ChunkCache, encode_chunk, parse_key
from attnscope.trace import AttentionTrace

MESSAGE_BYTES = 4 * 1024 * 1024
"""Most bytes of buffers in one reply message; a larger chunk is split into parts."""


def wire_arrays(arrays: Sequence[NamedArray], first_buffer: int) -> list[dict[str, Any]]:
    """Array descriptors ``{name, dtype, shape, buffer}`` for a reply message."""
    return [
        {"name": name, "dtype": dtype_code(a.dtype), "shape": list(a.shape), "buffer": i}
        for i, (name, a) in enumerate(arrays, start=first_buffer)
    ]


def part_messages(
    key: str, arrays: Sequence[NamedArray], max_bytes: int
) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
    """One chunk in ``parts`` messages of at most ``max_bytes``, in order.

    Each message holds one slice of :func:`concatenated_bytes`; the browser
    joins the slices of a key once part ``parts - 1`` has come and splits
    them by the array specs, which every part repeats.

    Examples
    --------
    >>> import numpy as np
    >>> parts = list(part_messages("attn:self:0:0", [("weight", np.zeros(10, np.uint8))], 4))
    >>> [(c["chunks"][0]["part"], c["chunks"][0]["parts"], len(b[0])) for c, b in parts]
    [(0, 3, 4), (1, 3, 4), (2, 3, 2)]
    """
    data = concatenated_bytes(arrays)
    specs = [
        {"name": name, "dtype": dtype_code(a.dtype), "shape": list(a.shape)} for name, a in arrays
    ]
    step = max(1, max_bytes)
    count = max(1, -(-len(data) // step))
    for part in range(count):
        piece = data[part * step : (part + 1) * step]
        chunk = {"key": key, "part": part, "parts": count, "buffer": 0, "arrays": specs}
        yield {"type": "chunks", "chunks": [chunk]}, [piece]


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
    ``max_bytes`` of buffers; a single larger chunk goes in parts
    (:func:`part_messages`) after whatever was batched before it. A key that
    cannot be served is answered with ``{"key", "error"}``.
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
        if nbytes > max_bytes:
            if chunks:
                yield {"type": "chunks", "chunks": chunks}, buffers
                chunks, buffers, size = [], [], 0
            yield from part_messages(str(raw), arrays, max_bytes)
            continue
        if buffers and size + nbytes > max_bytes:
            yield {"type": "chunks", "chunks": chunks}, buffers
            chunks, buffers, size = [], [], 0
        chunks.append({"key": str(raw), "arrays": wire_arrays(arrays, len(buffers))})
        buffers += data
        size += nbytes
    if chunks or not keys:
        yield {"type": "chunks", "chunks": chunks}, buffers
