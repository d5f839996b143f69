"""Turn an :class:`~attnscope.AttentionTrace` into what the browser reads.

Two things cross to the front end (see ``docs/protocol.md``): a small JSON
``_meta`` dict, and binary *chunks* of attention. This module builds both
from numpy arrays and knows nothing of widgets or messages:

- :func:`build_meta` — tokens, streams and their shapes, notes;
- :func:`thumbnails` — block-max pooled, per-thumbnail scaled u8 pictures
  for the model-view grid;
- :func:`top_keys` — each query row's strongest keys, strongest first;
- :func:`quantize_rows` — one byte per weight plus a float32 row maximum;
- :func:`qk_arrays` — the float32 vectors and terms the neuron view shows.

Quantised weights decode as ``w ≈ byte / 255 * rowmax`` with rounding to
nearest, so the error of every decoded weight is at most ``rowmax / 510``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.trace import AttentionStream, AttentionTrace

PROTOCOL_VERSION = 1
THUMB_SIZE = 64
"""Largest side of a model-view thumbnail, in cells."""
TOP_K = 64
"""Keys kept per query row in a ``top:`` chunk (all keys when there are fewer)."""
U16_LIMIT = 65536
"""Key indices below this fit in u16; longer key sequences use u32."""
_BLOCK_VALUES = 1 << 22
"""Values sorted at once by :func:`top_keys`, to bound its temporary memory."""

STREAM_LABELS = {
    "self": "self-attention",
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention",
    "cross": "cross-attention",
}

NamedArray = tuple[str, npt.NDArray[Any]]
U8Array = npt.NDArray[np.uint8]
F32Array = npt.NDArray[np.float32]

_DTYPE_CODES = {
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.float32): "f32",
}


def dtype_code(dtype: np.dtype[Any]) -> str:
    """Return the protocol's name for a numpy dtype (``"u8"``, ``"u16"``, ``"u32"``, ``"f32"``).

    Examples
    --------
    >>> import numpy as np
    >>> dtype_code(np.dtype(np.uint16))
    'u16'
    """
    code = _DTYPE_CODES.get(np.dtype(dtype))
    if code is None:
        raise TypeError(f"dtype {dtype} has no protocol name; use one of {list(_DTYPE_CODES)}.")
    return code


def thumb_shape(stream: AttentionStream) -> tuple[int, int]:
    """Rows and columns of the stream's thumbnails: the lengths, capped at :data:`THUMB_SIZE`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> thumb_shape(AttentionStream(np.full((1, 1, 100, 10), 0.1, np.float32)))
    (64, 10)
    """
    return min(stream.q_len, THUMB_SIZE), min(stream.k_len, THUMB_SIZE)


def stream_top_k(stream: AttentionStream) -> int:
    """Keys per query row in the stream's ``top:`` chunks.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> stream_top_k(AttentionStream(np.full((1, 1, 3, 5), 0.2, np.float32)))
    5
    """
    return min(stream.k_len, TOP_K)


def build_meta(
    trace: AttentionTrace, *, embedded: bool = False, notes: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Build the protocol's ``_meta`` dict: everything small about ``trace``.

    Parameters
    ----------
    trace
        The trace to describe.
    embedded
        True in the exported page, where chunks are embedded rather than requested.
    notes
        Extra notes appended to the trace's own (for example, chunks left out of a page).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> meta = build_meta(AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32)))
    >>> meta["streams"]["self"]["num_heads"], meta["sides"]["source"]["labels"]
    (2, ['a', 'b'])
    """
    streams = {name: _stream_meta(name, s) for name, s in trace.streams.items()}
    first = trace.stream
    model = trace.metadata.get("model_type") or trace.metadata.get("source") or "attention"
    return {
        "protocol": PROTOCOL_VERSION,
        "title": f"{model} · {first.num_layers} layers × {first.num_heads} heads",
        "sides": {
            "source": trace.source.to_json(),
            "target": None if trace.target is None else trace.target.to_json(),
        },
        "streams": streams,
        "neuron_unavailable": _neuron_unavailable(trace),
        "notes": [*trace.notes, *notes],
        "embedded": embedded,
    }


def _stream_meta(name: str, stream: AttentionStream) -> dict[str, Any]:
    rows, cols = thumb_shape(stream)
    return {
        "label": STREAM_LABELS.get(name, name),
        "query_side": stream.query_side,
        "key_side": stream.key_side,
        "layers": list(stream.layers),
        "num_heads": stream.num_heads,
        "num_kv_heads": stream.num_kv_heads,
        "q_len": stream.q_len,
        "k_len": stream.k_len,
        "head_dim": stream.head_dim,
        "has_bias": stream.bias is not None,
        "has_mask": stream.mask is not None,
        "has_softcap": stream.softcap is not None and bool(np.any(stream.softcap > 0)),
        "has_sinks": stream.sinks is not None,
        "thumb_rows": rows,
        "thumb_cols": cols,
        "top_k": stream_top_k(stream),
    }


def _neuron_unavailable(trace: AttentionTrace) -> str | None:
    if any(s.has_qk for s in trace.streams.values()):
        return None
    reason = trace.metadata.get("neuron_unavailable")
    if isinstance(reason, str) and reason:
        return reason
    return (
        "This trace holds attention weights only: no query and key vectors were "
        "recorded. Capture it with attnscope.capture(model, text) or "
        "attnscope.MultiHeadAttention to see the neuron view."
    )


def thumbnails(attention: F32Array, rows: int, cols: int) -> U8Array:
    """Block-max pooled u8 thumbnails, each ``(layer, head)`` scaled so its maximum is 255.

    Parameters
    ----------
    attention
        ``(layers, heads, q_len, k_len)`` weights.
    rows, cols
        Thumbnail size; at most ``q_len`` and ``k_len``. Block ``i`` of the rows
        covers queries ``i*q_len//rows`` up to ``(i+1)*q_len//rows``.

    Returns
    -------
    numpy.ndarray
        u8 ``(layers, heads, rows, cols)``; an all-zero head stays all zero.

    Examples
    --------
    >>> import numpy as np
    >>> att = np.zeros((1, 1, 4, 4), np.float32); att[0, 0, 3, 0] = 0.5
    >>> thumbnails(att, 2, 2)[0, 0]
    array([[  0,   0],
           [255,   0]], dtype=uint8)
    """
    q_len, k_len = attention.shape[2], attention.shape[3]
    if not (0 < rows <= q_len and 0 < cols <= k_len):
        raise ValueError(
            f"thumbnail size {rows}x{cols} must lie between 1x1 and the attention's "
            f"{q_len}x{k_len}."
        )
    row_edges = np.arange(rows) * q_len // rows
    col_edges = np.arange(cols) * k_len // cols
    # Columns first: reducing along the contiguous axis is several times faster.
    pooled = np.maximum.reduceat(attention, col_edges, axis=3)
    pooled = np.maximum.reduceat(pooled, row_edges, axis=2)
    peak = pooled.max(axis=(2, 3), keepdims=True)
    scale = np.divide(255.0, peak, out=np.zeros_like(peak), where=peak > 0)
    thumbs: U8Array = np.rint(pooled * scale).astype(np.uint8)
    return thumbs


def quantize_rows(weights: F32Array) -> tuple[U8Array, F32Array]:
    """One byte per weight and each row's maximum: ``w ≈ byte / 255 * rowmax``.

    Examples
    --------
    >>> import numpy as np
    >>> q, m = quantize_rows(np.array([[0.5, 0.25, 0.25]], np.float32))
    >>> q, m
    (array([[255, 128, 128]], dtype=uint8), array([0.5], dtype=float32))
    """
    rowmax = weights.max(axis=-1).astype(np.float32)
    scale = np.divide(255.0, rowmax, out=np.zeros_like(rowmax), where=rowmax > 0)
    quantized = np.rint(weights * scale[..., None]).astype(np.uint8)
    return quantized, rowmax


def top_keys(
    weights: F32Array, k: int, *, index_dtype: npt.DTypeLike | None = None
) -> tuple[npt.NDArray[np.unsignedinteger[Any]], U8Array, F32Array]:
    """Each row's ``k`` strongest keys, strongest first, with quantised weights.

    Parameters
    ----------
    weights
        ``(..., q_len, k_len)`` attention weights.
    k
        Keys to keep per row, ``1 <= k <= k_len``.
    index_dtype
        u16 when ``k_len < 65536`` and u32 otherwise, unless given here.

    Returns
    -------
    tuple
        ``index`` ``(..., q_len, k)``, ``weight`` u8 ``(..., q_len, k)`` with
        ``w ≈ weight / 255 * rowmax``, and ``rowmax`` f32 ``(..., q_len)``.
        Equal weights keep the lower key index first.

    Examples
    --------
    >>> import numpy as np
    >>> index, weight, rowmax = top_keys(np.array([[0.1, 0.8, 0.1]], np.float32), 2)
    >>> index, weight, rowmax
    (array([[1, 0]], dtype=uint16), array([[255,  32]], dtype=uint8), array([0.8], dtype=float32))
    """
    k_len = weights.shape[-1]
    if not 1 <= k <= k_len:
        raise ValueError(f"k={k} must lie between 1 and the number of keys ({k_len}).")
    dtype = np.dtype(index_dtype or (np.uint16 if k_len < U16_LIMIT else np.uint32))
    if k_len > np.iinfo(dtype).max + 1:
        raise ValueError(f"{dtype} cannot index {k_len} keys; use u32.")
    lead = weights.shape[:-1]
    flat = weights.reshape(-1, k_len)
    index = np.empty((flat.shape[0], k), dtype=dtype)
    block = max(1, _BLOCK_VALUES // k_len)
    for start in range(0, flat.shape[0], block):
        rows = flat[start : start + block]
        if k < k_len:
            part = np.argpartition(-rows, k - 1, axis=-1)[:, :k]
            # A stable sort of the candidates by (weight desc, index asc).
            part.sort(axis=-1)
            order = np.argsort(-np.take_along_axis(rows, part, axis=-1), axis=-1, kind="stable")
            chosen = np.take_along_axis(part, order, axis=-1)
        else:
            chosen = np.argsort(-rows, axis=-1, kind="stable")
        index[start : start + block] = chosen
    index = index.reshape(*lead, k)
    top = np.take_along_axis(weights, index.astype(np.intp), axis=-1)
    rowmax = weights.max(axis=-1).astype(np.float32)
    scale = np.divide(255.0, rowmax, out=np.zeros_like(rowmax), where=rowmax > 0)
    weight = np.rint(top * scale[..., None]).astype(np.uint8)
    return index, weight, rowmax


def qk_arrays(stream: AttentionStream, position: int, head: int) -> list[NamedArray]:
    """Collect the neuron view's arrays for one layer position and query head.

    ``q`` ``(Q, D)`` and ``k`` ``(K, D)`` (the key head this query head uses),
    ``scaling`` and ``kv_head`` as one-element arrays; ``bias``, ``mask`` (u8,
    1 = hidden), ``softcap`` and ``sink`` when the stream has them. The weights
    themselves are not repeated here: the browser recomputes them from these
    arrays and checks them against the one-byte ``attn:`` chunk.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.zeros((1, 1, 2, 4), np.float32)
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32), queries=q, keys=q)
    >>> [name for name, _ in qk_arrays(s, 0, 0)]
    ['q', 'k', 'scaling', 'kv_head']
    """
    if stream.queries is None or stream.keys is None or stream.scaling is None:
        raise ValueError(
            f"stream {stream.name!r} recorded no query/key vectors, so the neuron view "
            "cannot show it; capture with attnscope.capture(...) to record them."
        )
    kv = stream.kv_head(head)
    full = (stream.num_layers, stream.num_heads, stream.q_len, stream.k_len)
    arrays: list[NamedArray] = [
        ("q", np.ascontiguousarray(stream.queries[position, head])),
        ("k", np.ascontiguousarray(stream.keys[position, kv])),
        ("scaling", stream.scaling[position : position + 1].astype(np.float32)),
        ("kv_head", np.array([kv], dtype=np.uint32)),
    ]
    if stream.bias is not None:
        bias = np.broadcast_to(stream.bias, full)[position, head]
        arrays.append(("bias", np.ascontiguousarray(bias, dtype=np.float32)))
    if stream.mask is not None:
        mask = np.broadcast_to(stream.mask, full)[position, head]
        arrays.append(("mask", mask.astype(np.uint8)))
    if stream.softcap is not None and stream.softcap[position] > 0:
        arrays.append(("softcap", stream.softcap[position : position + 1].astype(np.float32)))
    if stream.sinks is not None:
        arrays.append(("sink", stream.sinks[position, head : head + 1].astype(np.float32)))
    return arrays
