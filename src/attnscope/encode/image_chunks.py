"""The image view's data: ``_meta.images`` and the ``image:`` and ``pixels:`` chunks.

A vision-language model's trace (``trace.images``) shows its attention on the
pictures. ``_meta.images`` says where each image's tokens are and the grids
they form (the whole grid, which tiles where the model tiles, and an overview
grid where the model adds one); ``pixels:<stream>`` holds the pictures, one
``(height, width, 3)`` uint8 array per image; ``image:<stream>:<layer>`` holds,
for every head and every query that is not an image token, its weights over
the image tokens, grid by grid in ``_meta.images`` order (``docs/protocol.md``,
"Images").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnscope.encode.arrays import NamedArray, quantize_rows
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace
from attnscope.trace.images import ImageRegion

IMAGE_KINDS = ("image", "pixels")
"""Chunk kinds of the image view; a trace without images has none."""
IMAGE_CHUNK_BYTES = 32 * 1024 * 1024
"""Most bytes of one ``image:`` chunk: past it, only the last text queries that fit are offered."""


def image_stream(trace: AttentionTrace) -> str | None:
    """The stream the image view shows: the first over the input's own tokens, else None.

    Examples
    --------
    >>> import numpy as np
    >>> image_stream(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
    'self'
    """
    for name, stream in trace.streams.items():
        if stream.query_side == stream.key_side == "source":
            return name
    return None


def region_grids(region: ImageRegion) -> list[dict[str, Any]]:
    """An image's grids for ``_meta.images``: the whole grid first, then each extra grid.

    Examples
    --------
    >>> region = ImageRegion((3, 4, 5, 6), (2, 2), np.zeros((8, 8, 3), np.uint8))
    >>> region_grids(region)
    [{'name': 'image', 'rows': 2, 'cols': 2, 'tiles': None, 'positions': [3, 4, 5, 6]}]
    """
    grids = [
        {
            "name": "image",
            "rows": region.grid[0],
            "cols": region.grid[1],
            "tiles": None if region.tiles is None else list(region.tiles),
            "positions": list(region.positions),
        }
    ]
    for name, (rows, cols) in region.extra_grids.items():
        positions = list(region.extra.get(name, ()))
        if len(positions) == rows * cols:
            grids.append(
                {"name": name, "rows": rows, "cols": cols, "tiles": None, "positions": positions}
            )
    return grids


def image_columns(trace: AttentionTrace) -> list[int]:
    """The token positions of an ``image:`` chunk's columns: every grid of every image, in order.

    Examples
    --------
    >>> trace = AttentionTrace(list("abcde"), np.full((1, 1, 5, 5), 0.2, np.float32))
    >>> trace.images = [ImageRegion((1, 2, 3, 4), (2, 2), np.zeros((4, 4, 3), np.uint8))]
    >>> image_columns(trace)
    [1, 2, 3, 4]
    """
    return [p for region in trace.images for g in region_grids(region) for p in g["positions"]]


def image_queries(trace: AttentionTrace) -> list[int]:
    """The query rows of an ``image:`` chunk: every token that shows no image.

    When heads × those rows × image tokens would pass :data:`IMAGE_CHUNK_BYTES`,
    only the last rows that fit (the generated tokens and the prompt's end);
    ``_meta.images["left_out"]`` counts the others.

    Examples
    --------
    >>> trace = AttentionTrace(list("abcde"), np.full((1, 1, 5, 5), 0.2, np.float32))
    >>> trace.images = [ImageRegion((1, 2, 3, 4), (2, 2), np.zeros((4, 4, 3), np.uint8))]
    >>> image_queries(trace)
    [0]
    """
    name = image_stream(trace)
    if name is None:
        return []
    stream = trace.streams[name]
    shown = {p for region in trace.images for p in region.all_positions()}
    rows = [q for q in range(stream.q_len) if q not in shown]
    fit = IMAGE_CHUNK_BYTES // max(1, stream.num_heads * len(image_columns(trace)))
    return rows[-fit:] if len(rows) > fit else rows


def images_meta(trace: AttentionTrace) -> dict[str, Any] | None:
    """``_meta.images``: the stream, query rows and each image's size and grids, or None.

    Examples
    --------
    >>> trace = AttentionTrace(list("abcde"), np.full((1, 1, 5, 5), 0.2, np.float32))
    >>> trace.images = [ImageRegion((1, 2, 3, 4), (2, 2), np.zeros((4, 6, 3), np.uint8))]
    >>> meta = images_meta(trace)
    >>> meta["stream"], meta["queries"], meta["images"][0]["height"], meta["images"][0]["width"]
    ('self', [0], 4, 6)
    """
    name = image_stream(trace)
    if not trace.images or name is None:
        return None
    queries = image_queries(trace)
    shown = {p for region in trace.images for p in region.all_positions()}
    return {
        "stream": name,
        "queries": queries,
        "left_out": trace.streams[name].q_len - len(shown) - len(queries),
        "images": [
            {
                "height": int(region.pixels.shape[0]),
                "width": int(region.pixels.shape[1]),
                "grids": region_grids(region),
            }
            for region in trace.images
        ],
    }


def check_image_chunk(trace: AttentionTrace, kind: str, stream: str, key: str) -> None:
    """Raise AttnscopeError unless ``trace`` has the image chunk ``key`` (``kind`` of ``stream``).

    Examples
    --------
    >>> check_image_chunk(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)),
    ...                   "pixels", "self", "pixels:self")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: 'pixels:self' names an image chunk, but this trace has ...
    """
    name = image_stream(trace)
    if not trace.images or name is None:
        raise AttnscopeError(
            f"{key!r} names an image chunk, but this trace has no images; capture one with "
            "attnscope.capture(model, text, images=..., processor=...)."
        )
    if stream != name:
        raise AttnscopeError(
            f"{key!r}: the images are in stream {name!r}, not {stream!r}; ask for the "
            f"{kind} chunk of stream {name!r}."
        )


def pixels_arrays(trace: AttentionTrace) -> list[NamedArray]:
    """The ``pixels:`` chunk: ``image0``, ``image1``, ... the pictures, ``(h, w, 3)`` uint8.

    Examples
    --------
    >>> trace = AttentionTrace(list("ab"), np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> trace.images = [ImageRegion((1,), (1, 1), np.zeros((4, 6, 3), np.uint8))]
    >>> [(n, a.shape) for n, a in pixels_arrays(trace)]
    [('image0', (4, 6, 3))]
    """
    return [(f"image{i}", np.ascontiguousarray(r.pixels)) for i, r in enumerate(trace.images)]


def image_arrays(trace: AttentionTrace, stream: AttentionStream, position: int) -> list[NamedArray]:
    """The ``image:`` chunk of one layer: each query's weights over the image tokens.

    ``weight`` is u8 ``(heads, queries, columns)``, ``rowmax`` f32 ``(heads, queries)``:
    ``w = byte / 255 * rowmax``, each row scaled to its largest weight on the
    images. Queries are :func:`image_queries`, columns :func:`image_columns`.

    Examples
    --------
    >>> trace = AttentionTrace(list("abc"), np.full((1, 2, 3, 3), 1 / 3, np.float32))
    >>> trace.images = [ImageRegion((1, 2), (1, 2), np.zeros((2, 4, 3), np.uint8))]
    >>> [(n, a.shape) for n, a in image_arrays(trace, trace.stream, 0)]
    [('weight', (2, 1, 2)), ('rowmax', (2, 1))]
    """
    from attnscope.trace.rows import row_blocks

    columns = np.asarray(image_columns(trace), np.int64)
    queries = np.asarray(image_queries(trace), np.int64)
    weight = np.zeros((stream.num_heads, len(queries), len(columns)), np.uint8)
    rowmax = np.zeros(weight.shape[:2], np.float32)
    for head in range(stream.num_heads):
        for block in row_blocks(len(queries), stream.k_len):
            rows = stream.attention_rows(position, head, queries[block]).numpy()
            weight[head, block], rowmax[head, block] = quantize_rows(rows[:, columns])
    return [("weight", weight), ("rowmax", rowmax)]
