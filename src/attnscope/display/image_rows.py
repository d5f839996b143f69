"""The head view's "collapse images" rows: each image one row, every other token its own.

A widget on a trace with images (and no ``segments=``) offers them through the
head view's segments mode: ``_meta.segments`` with ``by="images"`` and the
``segments:<stream>:<layer>`` chunks, whose segments are
:func:`attnscope.image_boundaries`. Unlike ``segments=``, nothing is computed
up front: each layer's ``(heads, S, S)`` mass is computed when the browser
asks for it (:func:`attnscope.analysis.segments.layer_mass`), and there is no
receiver ranking (an image row among token rows is not a sentence).

Every text token stays a row, so ``S`` grows with the text: the rows are
offered while ``S <= MAX_IMAGE_ROWS`` and a layer's chunk (``heads x S x S``
float32) stays under ``MAX_IMAGE_ROW_BYTES``; past that the widget says why
in ``_meta.notes`` and the head view keeps its token rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnscope.analysis.images import image_boundaries
from attnscope.analysis.segments import check_boundaries, layer_mass
from attnscope.display.segmented import layer_keys
from attnscope.encode.arrays import NamedArray
from attnscope.encode.image_chunks import image_stream
from attnscope.encode.keys import ChunkKey, segments_key
from attnscope.encode.segment_chunks import segments_meta
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionTrace

MAX_IMAGE_ROWS = 512
"""Most rows the collapsed head view draws: 512 rows of 26 CSS pixels at a pixel ratio
of 2 are a 26,624-pixel canvas, under chromium's 32,767."""
MAX_IMAGE_ROW_BYTES = 16 * 1024 * 1024
"""Largest ``segments:`` chunk of one layer (``heads x S x S`` float32): 362 rows at 32
heads, 1,024 at 4 (then :data:`MAX_IMAGE_ROWS` bounds)."""
PAGE_SHARE = 4
"""A saved page gives the image rows' chunks at most 1/PAGE_SHARE of its budget."""


def most_image_rows(num_heads: int) -> int:
    """How many rows the collapsed view offers for a stream of ``num_heads`` heads.

    Examples
    --------
    >>> most_image_rows(4), most_image_rows(32)
    (512, 362)
    """
    return min(MAX_IMAGE_ROWS, math.isqrt(MAX_IMAGE_ROW_BYTES // (4 * max(1, num_heads))))


@dataclass(frozen=True)
class ImageRows:
    """A trace's images as one head-view row each; served a layer at a time.

    Attributes
    ----------
    stream
        The stream the rows are of (the first over the input's own tokens).
    edges
        ``[0, s1, ..., n]``: row ``s`` is tokens ``edges[s] .. edges[s + 1] - 1``.
    meta
        ``_meta.segments``: ``stream``, ``by`` (``"images"``), ``edges``, ``labels``
        (``"img0 (4×4 patches)"`` for an image, the token's label otherwise), ``titles``.
    """

    trace: AttentionTrace
    stream: str
    edges: list[int]
    meta: dict[str, Any]

    def keys(self, layer: int = 0) -> list[str]:
        """Every layer's chunk key, ``layer`` (a position) first and then outward from it."""
        return layer_keys(self.stream, self.trace.streams[self.stream].num_layers, layer)

    def page_keys(self, layer: int, budget: int) -> list[str]:
        """The keys a saved page holds: ``layer``'s, then its neighbours' while they fit ``budget``.

        ``budget`` is in bytes of base64 text; the rest of the page's budget stays
        for the trace's own chunks (the token rows are what a page opens on).
        """
        shape = self.trace.streams[self.stream].num_heads * (len(self.edges) - 1) ** 2
        each = 4 * shape * 4 // 3  # float32, as base64
        keys = self.keys(layer)
        return keys[: max(1, budget // max(1, each))]

    def arrays(self, key: ChunkKey) -> list[NamedArray]:
        """The ``segments:`` chunk of a layer: ``mass`` f32 ``(heads, S, S)``, computed now."""
        if key.stream != self.stream or key.layer is None:
            raise AttnscopeError(
                f"{key.key!r}: this widget's image rows are of stream {self.stream!r}, not "
                f"{key.stream!r}; ask for {segments_key(self.stream, 0)!r} and its other layers."
            )
        mass = layer_mass(self.trace, self.edges, key.layer, stream=self.stream)
        return [("mass", np.ascontiguousarray(mass, dtype=np.float32))]


def image_rows(trace: AttentionTrace, stream: str | None = None) -> ImageRows | str | None:
    """The collapsed image rows of ``trace``; None without images, a note when too many.

    ``stream`` is the widget's (None: the first over the input's own tokens);
    rows are only of a stream over the input's own tokens.

    Examples
    --------
    >>> from attnscope.trace.images import ImageRegion
    >>> t = AttentionTrace(list("abcde"), np.full((1, 1, 5, 5), 0.2, np.float32))
    >>> t.images = [ImageRegion((1, 2, 3), (1, 3), np.zeros((2, 6, 3), np.uint8))]
    >>> rows = image_rows(t)
    >>> rows.meta["labels"], rows.edges
    (['a', 'img0 (1×3 patches)', 'e'], [0, 1, 4, 5])
    """
    if not trace.images:
        return None
    name = stream if stream is not None else image_stream(trace)
    chosen = None if name is None else trace.streams.get(name)
    if name is None or chosen is None or chosen.query_side != "source":
        return None
    if chosen.key_side != "source":
        return None
    edges = check_boundaries(image_boundaries(trace), trace, chosen.q_len).tolist()
    count, most = len(edges) - 1, most_image_rows(chosen.num_heads)
    if count > most:
        return (
            f"The head view cannot collapse the images to rows here: with every other token "
            f"its own row there are {count} rows, more than the {most} it draws for "
            f"{chosen.num_heads} heads (a layer's chunk holds heads x rows^2 numbers). The "
            "image view shows attention over each picture; or show a shorter text."
        )
    meta = segments_meta(edges, trace.source, name, "images", trace.images)
    return ImageRows(trace, name, edges, meta)
