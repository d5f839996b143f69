"""What each host holds and in which order: the one planner of pages, snapshots and saved state.

The live widget answers what the browser asks for; every other host holds a
list of chunks decided before anything is drawn (``docs/protocol.md``, "The
exported page", "Pages that derive", "Saved widget state"):

- an exported page (:func:`page_keys`): every view's chunks, most needed first
  (:func:`~attnscope.encode.chunks.all_keys`, or a comparison's three sides
  interleaved), with a widget's own chunks (``segments=``) in front, and the
  streams that :func:`derived_streams` picks holding ``qk:`` in place of
  ``top:`` and ``attn:``;
- a notebook snapshot and a widget's saved state (:func:`shown_keys`): only
  what the current view draws first;
- the ``_meta`` entries that say what a page holds (:func:`page_meta`: the
  head view's offered blocks, the neuron view's heads without q/k).

:mod:`attnscope.encode.embed` packs a plan within its byte budget;
:mod:`attnscope.display.page` and :mod:`attnscope.display.snapshot` only
ask and write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from attnscope.encode.chunks import all_keys
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.image_chunks import image_stream
from attnscope.encode.keys import (
    attn_key,
    image_key,
    pixels_key,
    pseudo_key,
    qk_key,
    read_key,
    split_side,
    stats_key,
    thumbs_key,
    tile_key,
    top_key,
)
from attnscope.encode.meta import build_meta, generation_meta, stream_top_block
from attnscope.encode.meta_types import Meta
from attnscope.encode.selection import ViewName, check_views
from attnscope.trace import AttentionStream, AttentionTrace

DERIVE_SHARE = 0.5
"""Share of a page's budget the ``qk:`` chunks of streams that derive may take."""

HEAD_VIEW_PX, HEAD_ROW_PX, HEAD_OVERSCAN = 560, 18, 4
"""The head view's most height, one token row's height, and the rows it draws past each
edge (js/views/head_lines.ts: MAX_VIEW_H, OVERSCAN): its first draw reads the rows of that."""


def derived_streams(
    trace: AttentionTrace, views: Sequence[ViewName], max_bytes: float, *, half: bool = True
) -> set[str]:
    """Streams whose page computes ``top:`` and ``attn:`` from ``qk:`` (protocol.md).

    A page with the neuron view holds every head's q and k anyway; at one
    byte per weight the ``top:`` and ``attn:`` chunks repeat what they say
    (and grow as N²: at 4000 tokens one head's weights are 16 MB, its q and
    k a few hundred kB). A stream derives when it keeps q and k and its q/k
    (estimated before encoding) fit in :data:`DERIVE_SHARE` of the budget,
    whatever its length: the head view asks for blocks of rows
    (:func:`offered_block`), so the browser computes a screenful at a time.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope.encode.selection import VIEWS
    >>> q = np.ones((2, 4, 8, 16), np.float32)
    >>> sorted(derived_streams(AttentionTrace(["a"] * 8, None, queries=q, keys=q), VIEWS, 5e7))
    ['self']
    >>> derived_streams(AttentionTrace(["a"] * 8, None, queries=q, keys=q), ("head",), 5e7)
    set()
    """
    if "neuron" not in check_views(views):
        return set()
    chosen: set[str] = set()
    budget = DERIVE_SHARE * max_bytes
    for name, s in trace.streams.items():
        if not s.has_qk or s.head_dim is None:
            continue
        per_head = (2 if half else 4) * (s.q_len + s.k_len) * s.head_dim + 4 * s.q_len
        if s.bias is not None:
            per_head += 4 * s.q_len * s.k_len
        estimate = per_head * s.num_heads * s.num_layers * 4 / 3  # base64
        if estimate <= budget:
            chosen.add(name)
            budget -= estimate
    return chosen


def offered_block(stream: AttentionStream, *, derived: bool) -> int | None:
    """Query rows per ``top:`` block a page offers the head view; None for whole layers.

    The block is :func:`~attnscope.encode.meta.stream_top_block` (the one
    rule; ``derived`` when the page computes the rows from q and k); None
    when one block would hold every row.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> long, short = np.zeros((1, 12, 512, 32), np.float32), np.zeros((1, 12, 64, 32), np.float32)
    >>> offered_block(AttentionStream(queries=long, keys=long), derived=True)
    64
    >>> print(offered_block(AttentionStream(queries=short, keys=short), derived=True))
    None
    """
    block = stream_top_block(stream, derived=derived)
    return block if block < stream.q_len else None


def page_keys(
    trace: AttentionTrace,
    *,
    stream: str,
    layer: int,
    views: Sequence[ViewName],
    derived: set[str] | frozenset[str] = frozenset(),
    first: Sequence[str] = (),
    compared: ComparisonChunks | None = None,
) -> list[str]:
    """The keys a page holds when its budget allows, most needed first.

    ``first`` are a widget's own chunks (its ``segments=``), before the
    trace's :func:`~attnscope.encode.chunks.all_keys`; a comparison's are
    its sides' (:meth:`~attnscope.encode.comparison.ComparisonChunks.all_keys`).

    Examples
    --------
    >>> import numpy as np
    >>> trace = AttentionTrace(["a"], np.ones((2, 1, 1, 1), np.float32))
    >>> page_keys(trace, stream="self", layer=1, views=("head",), first=["segments:self:1"])
    ['segments:self:1', 'top:self:1', 'top:self:0', 'pseudo:self:1', 'pseudo:self:0']
    """
    if compared is not None:
        return compared.all_keys(stream=stream, layer=layer, views=views)
    return [*first, *all_keys(trace, stream=stream, layer=layer, views=views, derived=derived)]


@dataclass(frozen=True)
class Shown:
    """What a widget shows now, as plain data: the input of :func:`shown_keys`.

    ``segment_keys`` are the widget's own head-view chunks (``segments=``),
    current layer first, when its head view shows segment rows.

    Examples
    --------
    >>> Shown("head", "self", 2, query=5).segment_keys
    ()
    """

    view: ViewName
    stream: str
    layer: int
    head: int = 0
    query: int | None = None
    pseudo_heads: bool = False
    generated_only: bool = False
    rank_by: str | None = None
    segment_keys: Sequence[str] = field(default_factory=tuple)


def shown_keys(trace: AttentionTrace, shown: Shown) -> list[str]:
    """What a snapshot and a saved state hold: the chunks the view draws first.

    Only what the current view draws as it is now: its chunk or two, and the
    ones its options add (segment rows, pseudo-heads, the ranking's
    statistics, the generated rows).

    Examples
    --------
    >>> import numpy as np
    >>> trace = AttentionTrace(["a", "b"], np.full((2, 1, 2, 2), 0.5, np.float32))
    >>> shown_keys(trace, Shown("model", "self", 1))
    ['thumbs:self', 'tile:self:1:0:0:0:0']
    >>> shown_keys(trace, Shown("neuron", "self", 1))
    ['qk:self:1:0', 'attn:self:1:0']
    """
    stream, layer, head = shown.stream, shown.layer, shown.head
    if shown.view == "head":
        pseudo = [pseudo_key(stream, layer)] if shown.pseudo_heads else []
        return [*shown.segment_keys[:1], *_head_keys(trace, shown), *pseudo]
    if shown.view == "model":
        generation = generation_meta(trace)
        rows = generation["prompt_length"] if generation and shown.generated_only else None
        # The overview under the grid opens on the whole matrix: one level-0 tile of the head.
        whole = tile_key(stream, layer, head, (0, 0, 0))
        return [thumbs_key(stream, rows), *([stats_key(stream)] if shown.rank_by else []), whole]
    if shown.view == "image":  # the pictures and the layer's weights over them
        pictured = image_stream(trace) or stream
        return [pixels_key(pictured), image_key(pictured, layer)]
    return [qk_key(stream, layer, head), attn_key(stream, layer, head)]


def _head_keys(trace: AttentionTrace, shown: Shown) -> list[str]:
    """The ``top:`` keys of the rows the head view draws first, and of the selected query.

    The blocks of those rows (``top:<stream>:<layer>:<first row>``), or the
    whole layer when one block holds it. A whole layer of a long input is
    the dearest chunk there is (3.3 s at 8192 tokens, at every display) and
    larger than a snapshot holds.
    """
    stream, layer = shown.stream, shown.layer
    block = stream_top_block(trace.streams[stream])
    q_len = trace.streams[stream].q_len
    if block >= q_len:
        return [top_key(stream, layer)]
    drawn = -(-HEAD_VIEW_PX // HEAD_ROW_PX) + HEAD_OVERSCAN + 1  # rows a first draw reads
    rows = set(range(min(drawn, q_len)))
    if shown.query is not None and 0 <= shown.query < q_len:
        rows.add(shown.query)
    firsts = sorted({row - row % block for row in rows})
    return [top_key(stream, layer, first) for first in firsts]


def offered_blocks(trace: AttentionTrace, chunks: Mapping[str, Any]) -> dict[str, int | None]:
    """``top_block`` of each stream whose ``top:`` the page offers in blocks of rows.

    A stream whose ``qk:`` chunks carry row maxima is computed in the page
    (derived blocks); one whose ``top:`` chunks the page holds as blocks (a
    snapshot's first rows of a long layer) has Python's.

    Examples
    --------
    >>> import numpy as np
    >>> q = np.ones((1, 1, 600, 4), np.float32)
    >>> trace = AttentionTrace(["a"] * 600, None, queries=q, keys=q)
    >>> offered_blocks(trace, {"top:self:0:0": {}, "thumbs:self": {}})
    {'self': 256}
    """
    offered: dict[str, int | None] = {}
    for key, chunk in chunks.items():
        if split_side(key) is not None:
            continue  # a comparison's sides hold whole layers
        parsed = read_key(key)
        kind, name = parsed.kind, parsed.stream
        if kind == "qk" and any(a["name"] == "rowmax" for a in chunk.get("arrays", ())):
            offered[name] = offered_block(trace.streams[name], derived=True)
        elif kind == "top" and parsed.first_row is not None:
            offered[name] = stream_top_block(trace.streams[name])
    return offered


def qk_missing(trace: AttentionTrace, chunks: Mapping[str, Any]) -> dict[str, list[list[int]]]:
    """Per stream that keeps q/k and left some out: for each layer position, the heads without them.

    The neuron view's head picker marks those heads (``_meta.streams[s].qk_missing``).

    Examples
    --------
    >>> import numpy as np
    >>> q = np.ones((2, 2, 3, 4), np.float32)
    >>> trace = AttentionTrace(["a"] * 3, None, queries=q, keys=q)
    >>> qk_missing(trace, {"qk:self:0:0": {}, "qk:self:0:1": {}, "qk:self:1:1": {}})
    {'self': [[], [0]]}
    """
    out: dict[str, list[list[int]]] = {}
    for name, s in trace.streams.items():
        if not s.has_qk:
            continue
        heads = [
            [h for h in range(s.num_heads) if qk_key(name, p, h) not in chunks]
            for p in range(s.num_layers)
        ]
        if any(heads):
            out[name] = heads
    return out


def page_meta(
    trace: AttentionTrace,
    chunks: Mapping[str, Any],
    views: Sequence[ViewName],
    *,
    notes: Sequence[str] = (),
    compared: ComparisonChunks | None = None,
) -> Meta:
    """``_meta`` of a page that holds ``chunks``: what it offers, and what it left out.

    Examples
    --------
    >>> import numpy as np
    >>> trace = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
    >>> meta = page_meta(trace, {}, ("head",))
    >>> meta["embedded"], meta["views"], meta["streams"]["self"]["top_block"]
    (True, ['head'], None)
    """
    if compared is not None:
        meta = compared.meta(embedded=True, notes=tuple(notes))
    else:
        meta = build_meta(trace, embedded=True, notes=tuple(notes))
        for name, block in offered_blocks(trace, chunks).items():
            meta["streams"][name]["top_block"] = block
        if "neuron" in views:
            for name, missing in qk_missing(trace, chunks).items():
                meta["streams"][name]["qk_missing"] = missing
    meta["views"] = list(views)
    return meta
