"""Turn an :class:`~attnscope.AttentionTrace` into what the browser reads.

Binary *chunks* of attention cross to the front end (``docs/protocol.md``);
this module builds their arrays from numpy and knows nothing of widgets or
messages (the small JSON ``_meta`` is :mod:`attnscope.encode.meta`):

- :func:`thumbnails` — block-max pooled u8 pictures for the model-view grid,
  on a log scale of each thumbnail's largest weight (:func:`scale_thumbnails`);
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

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream

U16_LIMIT = 65536
"""Key indices below this fit in u16; longer key sequences use u32."""
_BLOCK_VALUES = 1 << 22
"""Values sorted at once by :func:`top_keys`, to bound its temporary memory."""
THUMB_SAMPLE = 16
THUMB_DECADES = 6.0
"""Decades of a thumbnail's log scale: byte 1 is ``10**-6`` of the thumbnail's largest weight."""
"""Most queries pooled into one thumbnail row (evenly spaced when there are more)."""

NamedArray = tuple[str, npt.NDArray[Any]]
U8Array = npt.NDArray[np.uint8]
F32Array = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.intp]

_DTYPE_CODES = {
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.float32): "f32",
}


def dtype_code(dtype: np.dtype[Any]) -> str:
    """Return the protocol's name for a numpy dtype (``"i8"``, ``"u8"``, ``"u16"``, ``"f32"`` ...).

    The names count bits, not bytes: ``"i8"`` is a signed byte (numpy's ``int8``).

    Examples
    --------
    >>> import numpy as np
    >>> dtype_code(np.dtype(np.uint16))
    'u16'
    """
    code = _DTYPE_CODES.get(np.dtype(dtype))
    if code is None:
        raise AttnscopeTypeError(
            f"dtype {dtype} has no protocol name; use one of {list(_DTYPE_CODES)}."
        )
    return code


def thumbnails(attention: F32Array, rows: int, cols: int) -> U8Array:
    """Block-max pooled u8 thumbnails, each on :func:`scale_thumbnails`'s log scale.

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
        raise AttnscopeError(
            f"thumbnail size {rows}x{cols} must lie between 1x1 and the attention's "
            f"{q_len}x{k_len}."
        )
    row_edges = np.arange(rows) * q_len // rows
    col_edges = np.arange(cols) * k_len // cols
    # Columns first: reducing along the contiguous axis is several times faster.
    pooled = np.maximum.reduceat(attention, col_edges, axis=3)
    pooled = np.maximum.reduceat(pooled, row_edges, axis=2)
    return scale_thumbnails(pooled)


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
    weights: F32Array,
    k: int,
    *,
    index_dtype: npt.DTypeLike | None = None,
    stops: npt.NDArray[np.integer[Any]] | None = None,
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
    stops
        ``(q_len,)``: each query's weights are 0 from this key on (a causal or
        windowed mask's span), so the search stops there too; None: all keys.

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
    >>> masked = np.zeros((1, 4000), np.float32); masked[0, [7, 3000]] = 0.5
    >>> top_keys(masked, 4)[0].tolist()  # then the lowest keys of weight 0
    [[7, 3000, 0, 1]]
    """
    k_len = weights.shape[-1]
    if not 1 <= k <= k_len:
        raise AttnscopeError(f"k={k} must lie between 1 and the number of keys ({k_len}).")
    dtype = np.dtype(index_dtype or (np.uint16 if k_len < U16_LIMIT else np.uint32))
    if k_len > np.iinfo(dtype).max + 1:
        raise AttnscopeError(f"{dtype} cannot index {k_len} keys; use u32.")
    lead = weights.shape[:-1]
    flat = weights.reshape(-1, k_len)
    index = np.empty((flat.shape[0], k), dtype=dtype)
    row_stops = None if stops is None else np.broadcast_to(stops, lead).reshape(-1)
    # With stops, shorter blocks: each one's width follows its rows' stops more closely.
    block = max(1, _BLOCK_VALUES // k_len // (1 if row_stops is None else 4))
    for start in range(0, flat.shape[0], block):
        rows = flat[start : start + block]
        if row_stops is not None and k < k_len:  # every key past the block's stops weighs 0
            width = int(row_stops[start : start + block].max(initial=0))
            rows = rows[:, : min(k_len, max(k + 1, width))]
        if k < k_len:
            part = np.argpartition(-rows, k - 1, axis=-1)[:, :k]
            _lowest_of_ties(rows, part)
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


def _lowest_of_ties(rows: F32Array, part: npt.NDArray[np.intp]) -> None:
    """Keep, in ``part``, the lowest of the keys tied with each row's ``k``-th strongest.

    ``part`` holds each row's ``k`` strongest keys from ``argpartition``, which
    keeps any of the keys tied at the boundary. Only the rows with such a tie
    (a masked row's many zeros, mostly) are rewritten.
    """
    k = part.shape[-1]
    kth = np.take_along_axis(rows, part, axis=-1).min(axis=-1, keepdims=True)
    tied = np.flatnonzero((rows >= kth).sum(axis=-1) > k)
    if not len(tied):
        return
    some, threshold = rows[tied], kth[tied]
    # 0: above the k-th strongest, 1: tied with it, 2: below; a stable sort keeps key order.
    rank = (some <= threshold).astype(np.uint8) + (some < threshold)
    part[tied] = np.argsort(rank, axis=-1, kind="stable")[:, :k]


def pick_rows(q_len: int, rows: int, sample: int) -> tuple[IntArray, IntArray]:
    """Queries pooled into each thumbnail row (all, or ``sample`` evenly spaced), and their row.

    Examples
    --------
    >>> [a.tolist() for a in pick_rows(6, 2, 2)]
    [[0, 1, 3, 4], [0, 0, 1, 1]]
    """
    edges = np.append(np.arange(rows) * q_len // rows, q_len)
    picks, owners = [], []
    for i in range(rows):
        n = int(edges[i + 1] - edges[i])
        m = min(n, sample)
        picks.append(edges[i] + np.arange(m) * n // m)
        owners.append(np.full(m, i))
    return np.concatenate(picks).astype(np.intp), np.concatenate(owners).astype(np.intp)


def stream_thumbnails(
    stream: AttentionStream,
    rows: int,
    cols: int,
    *,
    sample: int = THUMB_SAMPLE,
    first_row: int = 0,
) -> U8Array:
    """:func:`thumbnails` of every layer and head of ``stream``, a block of queries at a time.

    Each thumbnail row pools its queries' weights by block maximum, as
    :func:`thumbnails` does; when a thumbnail row covers more than ``sample``
    queries it pools ``sample`` of them, evenly spaced (a 64-row thumbnail of
    8192 queries then computes an eighth of the weights). ``first_row`` > 0
    covers the queries from there on only (a generation's output).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> att = np.zeros((1, 1, 4, 4), np.float32); att[0, 0, 3, :2] = 0.5
    >>> stream_thumbnails(AttentionStream(att), 2, 2)[0, 0]
    array([[  0,   0],
           [255,   0]], dtype=uint8)
    """
    from attnscope.trace.rows import block_rows

    q_len, k_len = stream.q_len - first_row, stream.k_len
    if not (0 < rows <= q_len and 0 < cols <= k_len):
        raise AttnscopeError(
            f"thumbnail size {rows}x{cols} must lie between 1x1 and the attention's "
            f"{q_len}x{k_len}."
        )
    picks, owners = pick_rows(q_len, rows, sample)
    picks += first_row
    col_edges = np.arange(cols) * k_len // cols
    pooled = np.zeros((stream.num_layers, stream.num_heads, rows, cols), np.float32)
    step = block_rows(k_len)
    for position in range(stream.num_layers):
        for head in range(stream.num_heads):
            for start in range(0, picks.size, step):
                chosen, rows_of = picks[start : start + step], owners[start : start + step]
                block = stream.attention_rows(position, head, chosen).numpy()
                block = np.maximum.reduceat(block, col_edges, axis=1)
                firsts = np.flatnonzero(np.diff(rows_of, prepend=-1))
                part = np.maximum.reduceat(block, firsts, axis=0)
                target = pooled[position, head, rows_of[firsts]]
                pooled[position, head, rows_of[firsts]] = np.maximum(target, part)
    return scale_thumbnails(pooled)


def scale_thumbnails(pooled: F32Array) -> U8Array:
    """Pooled weights ``(..., rows, cols)`` as u8 on a log scale, each thumbnail to its maximum.

    Byte 0 is a weight of exactly 0 (a masked key); byte ``b >= 1`` is
    ``w / peak = 10 ** (-THUMB_DECADES * (255 - b) / 254)``: 255 the
    thumbnail's largest weight, 1 at most ``10 ** -THUMB_DECADES`` of it. The
    log is taken before quantisation, so the faint weights of a long causal
    row (each far below 1/255 of a first-token peak) keep their structure;
    the browser decodes the bytes for its linear and log scales.

    Examples
    --------
    >>> scale_thumbnails(np.array([[0.0, 1e-9, 0.001, 0.1, 1.0]], np.float32)).tolist()
    [[0, 1, 128, 213, 255]]
    """
    peak = pooled.max(axis=(-2, -1), keepdims=True)
    ratio = np.divide(pooled, peak, out=np.zeros_like(pooled), where=peak > 0)
    with np.errstate(divide="ignore"):
        level = 255.0 + (254.0 / THUMB_DECADES) * np.log10(ratio)
    level = np.where(ratio > 0, np.clip(np.rint(level), 1, 255), 0)
    thumbs: U8Array = level.astype(np.uint8)
    return thumbs


def stream_quantized(
    stream: AttentionStream, position: int, heads: list[int], rows: slice | None = None
) -> tuple[U8Array, F32Array]:
    """:func:`quantize_rows` of ``heads`` of one layer: u8 ``(len(heads), Q, K)`` and row maxima.

    Query ``rows`` (a slice) only, when given: ``Q`` is their number.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> s = AttentionStream(np.full((1, 2, 1, 2), 0.5, np.float32))
    >>> stream_quantized(s, 0, [1])
    (array([[[255, 255]]], dtype=uint8), array([[0.5]], dtype=float32))
    """
    from attnscope.trace.rows import row_blocks

    first, last = (0, stream.q_len) if rows is None else rows.indices(stream.q_len)[:2]
    weight = np.empty((len(heads), max(last - first, 0), stream.k_len), np.uint8)
    rowmax = np.empty(weight.shape[:2], np.float32)
    for i, head in enumerate(heads):
        for block in row_blocks(last - first, stream.k_len):
            part = slice(block.start + first, block.stop + first)
            weights = stream.attention_rows(position, head, part).numpy()
            weight[i, block], rowmax[i, block] = quantize_rows(weights)
    return weight, rowmax


def stream_top_keys(
    stream: AttentionStream, position: int, k: int, rows: slice | None = None
) -> tuple[npt.NDArray[np.unsignedinteger[Any]], U8Array, F32Array]:
    """:func:`top_keys` of every head of one layer, a block of queries at a time.

    Query ``rows`` (a slice) only, when given.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> s = AttentionStream(np.array([[[[0.1, 0.8, 0.1]]]], np.float32))
    >>> index, weight, rowmax = stream_top_keys(s, 0, 2)
    >>> index.tolist(), weight.tolist()
    ([[[1, 0]]], [[[255, 32]]])
    """
    from attnscope.trace.rows import row_blocks

    first, last = (0, stream.q_len) if rows is None else rows.indices(stream.q_len)[:2]
    shape = (stream.num_heads, max(last - first, 0), k)
    dtype = np.uint16 if stream.k_len < U16_LIMIT else np.uint32
    index = np.empty(shape, dtype)
    weight = np.empty(shape, np.uint8)
    rowmax = np.empty(shape[:2], np.float32)
    for head in range(stream.num_heads):
        for block in row_blocks(last - first, stream.k_len):
            part = slice(block.start + first, block.stop + first)
            weights = stream.attention_rows(position, head, part).numpy()
            index[head, block], weight[head, block], rowmax[head, block] = top_keys(weights, k)
    return index, weight, rowmax


def qk_arrays(stream: AttentionStream, position: int, head: int) -> list[NamedArray]:
    """Collect the neuron view's arrays for one layer position and query head.

    ``q`` ``(Q, D)`` and ``k`` ``(K, D)`` (the key head this query head uses),
    ``scaling`` and ``kv_head`` as one-element arrays; ``bias``, ``mask`` (u8,
    1 = hidden), ``spans`` (u32 ``(Q, 2)``, the keys ``[start, stop)`` each
    query may see), ``softcap`` and ``sink`` when the stream has them. The weights
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
        raise AttnscopeError(
            f"stream {stream.name!r} recorded no query/key vectors, so the neuron view "
            "cannot show it; capture with attnscope.capture(...) to record them."
        )
    kv = stream.kv_head(head)
    full = (stream.num_layers, stream.num_heads, stream.q_len, stream.k_len)
    arrays: list[NamedArray] = [
        # float32 on the wire whatever the storage (a half-precision model keeps float16)
        ("q", np.ascontiguousarray(stream.queries[position, head], dtype=np.float32)),
        ("k", np.ascontiguousarray(stream.keys[position, kv], dtype=np.float32)),
        ("scaling", stream.scaling[position : position + 1].astype(np.float32)),
        ("kv_head", np.array([kv], dtype=np.uint32)),
    ]
    if stream.bias is not None:
        bias = np.broadcast_to(stream.bias, full)[position, head]
        arrays.append(("bias", np.ascontiguousarray(bias, dtype=np.float32)))
    if stream.mask is not None:
        hidden = np.broadcast_to(stream.mask, full)[position, head]
        arrays.append(("mask", hidden.astype(np.uint8)))
    if stream.key_spans is not None:
        # The rule, not the (Q, K) array it says: 2 numbers a query (1 GB less at 32768 tokens).
        spans = stream.key_spans[position if stream.key_spans.shape[0] > 1 else 0]
        arrays.append(("spans", np.clip(spans, 0, stream.k_len).astype(np.uint32)))
    if stream.softcap is not None and stream.softcap[position] > 0:
        arrays.append(("softcap", stream.softcap[position : position + 1].astype(np.float32)))
    if stream.sinks is not None:
        arrays.append(("sink", stream.sinks[position, head : head + 1].astype(np.float32)))
    return arrays
