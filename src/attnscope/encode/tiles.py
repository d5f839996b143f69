"""Overview tiles: one head's (or the layer mean's) N × N at several resolutions.

A ``tile:<stream>:<layer>:<head|mean>:<level>:<row>:<col>`` chunk is a
:data:`TILE` × :data:`TILE` picture of part of the attention matrix
(``docs/protocol.md``, "Overview tiles"). Level 0 shows the whole matrix in one
tile; each level halves the tokens a cell covers (its *span*) until a cell is
one weight. A cell is the largest weight in its block (of up to
:data:`TILE_SAMPLE` evenly spaced queries of its rows, every key of its
columns), as a byte on one absolute log scale shared by every tile and level
(byte ``b >= 1`` is ``w = 10 ** (-THUMB_DECADES * (255 - b) / 254)``, 0 a weight
of exactly 0), so neighbouring tiles and zoom levels agree. Rows come a block at
a time from the trace (:func:`~attnscope.trace.rows.compute_rows`): a tile never
holds more than a block of rows of weights, whatever N.
"""

from __future__ import annotations

import numpy as np

from attnscope.encode.arrays import THUMB_DECADES, F32Array, NamedArray, U8Array
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream
from attnscope.trace.rows import block_rows, compute_rows

TILE = 256
"""Cells on a side of a tile (HiGlass's tile size)."""

TILE_SAMPLE = 16
"""Most queries of a cell row that a tile pools (evenly spaced); all when a cell has fewer."""

TILE_SCORES = 1 << 25
"""Most weights one tile computes: fewer queries are sampled per cell row past it."""


def tile_top_span(q_len: int, k_len: int) -> int:
    """Tokens a cell covers at level 0: the least power of two that fits the matrix in one tile.

    Examples
    --------
    >>> tile_top_span(200, 200), tile_top_span(32768, 32768), tile_top_span(257, 3)
    (1, 128, 2)
    """
    span = 1
    while span * TILE < max(q_len, k_len):
        span *= 2
    return span


def tile_levels(q_len: int, k_len: int) -> int:
    """Zoom levels: level ``levels - 1`` has one weight per cell.

    Examples
    --------
    >>> tile_levels(200, 200), tile_levels(32768, 32768)
    (1, 8)
    """
    return tile_top_span(q_len, k_len).bit_length()


def tile_span(q_len: int, k_len: int, level: int) -> int:
    """Tokens a cell covers (on both axes) at ``level``.

    Examples
    --------
    >>> [tile_span(1000, 1000, z) for z in range(3)]
    [4, 2, 1]
    """
    return tile_top_span(q_len, k_len) >> level


def tile_grid(q_len: int, k_len: int, level: int) -> tuple[int, int]:
    """Tile rows and columns at ``level``.

    Examples
    --------
    >>> tile_grid(1000, 300, 2)
    (4, 2)
    """
    cover = TILE * tile_span(q_len, k_len, level)
    return -(-q_len // cover), -(-k_len // cover)


def check_tile(stream: AttentionStream, level: int, row: int, col: int, key: str) -> None:
    """Raise ValueError unless ``level``, ``row`` and ``col`` name a tile of ``stream``.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> check_tile(s, 1, 0, 0, "tile:self:0:0:1:0:0")
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: level 1 in 'tile:self:0:0:1:0:0' is out of range: a 2 x 2 ...
    """
    levels = tile_levels(stream.q_len, stream.k_len)
    if not level < levels:
        raise AttnscopeError(
            f"level {level} in {key!r} is out of range: a {stream.q_len} x {stream.k_len} "
            f"matrix has {levels} level{'s' * (levels > 1)} (0..{levels - 1})."
        )
    rows, cols = tile_grid(stream.q_len, stream.k_len, level)
    if not (row < rows and col < cols):
        raise AttnscopeError(
            f"tile ({row}, {col}) in {key!r} is out of range: level {level} has "
            f"{rows} x {cols} tiles (rows 0..{rows - 1}, columns 0..{cols - 1})."
        )


def encode_tile(pooled: F32Array) -> U8Array:
    """Weights as tile bytes: 0 for exactly 0, else ``255 + 254 / THUMB_DECADES * log10(w)``.

    Examples
    --------
    >>> encode_tile(np.array([0.0, 1e-9, 1e-3, 1.0], np.float32)).tolist()
    [0, 1, 128, 255]
    """
    with np.errstate(divide="ignore"):
        level = 255.0 + (254.0 / THUMB_DECADES) * np.log10(np.minimum(pooled, 1.0))
    level = np.where(pooled > 0, np.clip(np.rint(level), 1, 255), 0)
    out: U8Array = level.astype(np.uint8)
    return out


def tile_arrays(
    stream: AttentionStream, position: int, head: int | None, place: tuple[int, int, int]
) -> list[NamedArray]:
    """A ``tile:`` chunk's arrays: ``tile`` u8 ``(TILE, TILE)``; ``head`` None for the layer mean.

    ``place`` is the tile's (level, row, col).

    Examples
    --------
    >>> w = np.array([[[[1.0, 0.0], [0.25, 0.75]]]], np.float32)
    >>> tile = dict(tile_arrays(AttentionStream(w), 0, 0, (0, 0, 0)))["tile"]
    >>> tile.shape, tile[:2, :2].tolist(), int(tile[2:].max())
    ((256, 256), [[255, 0], [230, 250]], 0)
    """
    q_len, k_len = stream.q_len, stream.k_len
    level, row, col = place
    span = tile_span(q_len, k_len, level)
    cover = TILE * span
    q0, k0 = row * cover, col * cover
    q1, k1 = min(q_len, q0 + cover), min(k_len, k0 + cover)
    heads = list(range(stream.num_heads)) if head is None else [head]
    sample = max(1, min(span, TILE_SAMPLE, TILE_SCORES // (TILE * k_len * len(heads))))
    edges = np.minimum(q0 + np.arange(TILE + 1) * span, q1)
    picks: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    for i in range(TILE):
        n = int(edges[i + 1] - edges[i])
        if n <= 0:
            break
        m = min(n, sample)
        picks.append(edges[i] + np.arange(m) * n // m)
        owners.append(np.full(m, i))
    pooled = np.zeros((TILE, TILE), np.float32)
    all_picks, all_owners = np.concatenate(picks), np.concatenate(owners)
    cells = -(-(k1 - k0) // span)
    step = block_rows(k_len)
    for start in range(0, all_picks.size, step):
        chosen, rows_of = all_picks[start : start + step], all_owners[start : start + step]
        total = np.zeros((chosen.size, cells * span), np.float32)
        for h in heads:
            total[:, : k1 - k0] += compute_rows(stream, position, h, chosen)[:, k0:k1].numpy()
        total /= len(heads)
        block = total.reshape(chosen.size, cells, span).max(axis=2)
        firsts = np.flatnonzero(np.diff(rows_of, prepend=-1))
        part = np.maximum.reduceat(block, firsts, axis=0)
        target = rows_of[firsts]
        pooled[target, :cells] = np.maximum(pooled[target, :cells], part)
    return [("tile", encode_tile(pooled))]
