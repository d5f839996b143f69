"""Chunk keys checked against a trace, the chunk each names, and the keys a page holds.

A key names one chunk of a trace (``docs/protocol.md``, "Chunks"):
``thumbs:<stream>`` (or ``thumbs:<stream>:<first row>``, the rows from there on,
for the generated tokens), ``top:<stream>:<layer>`` (or
``top:<stream>:<layer>:<first row>``, one block of query rows),
``attn:<stream>:<layer>:<head>``,
``qk:<stream>:<layer>:<head>``, and the analysis chunks ``stats:<stream>`` and
``pseudo:<stream>:<layer>`` (:mod:`attnscope.encode.analysis_chunks`), the overview's
``tile:<stream>:<layer>:<head|mean>:<level>:<row>:<col>`` (:mod:`attnscope.encode.tiles`), where
``<layer>`` is the layer's position in the stream. Keys are written and read by
:mod:`attnscope.encode.keys` alone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence

import numpy as np

from attnscope.encode.analysis_chunks import (
    ROLLOUT_MAX_TOKENS,
    analysable,
    offers_query_rollout,
    pseudo_arrays,
    pseudo_heads,
    query_rollout_arrays,
    stats_arrays,
    unanalysable_reason,
)
from attnscope.encode.arrays import (
    NamedArray,
    qk_arrays,
    stream_quantized,
)
from attnscope.encode.from_logits import any_thumbnails, layer_top_keys
from attnscope.encode.image_chunks import (
    IMAGE_KINDS,
    check_image_chunk,
    image_arrays,
    image_stream,
    pixels_arrays,
)
from attnscope.encode.keys import (
    ANALYSIS_KINDS,
    ChunkKey,
    attn_key,
    image_key,
    pixels_key,
    pseudo_key,
    qk_key,
    read_key,
    stats_key,
    thumbs_key,
    top_key,
)
from attnscope.encode.meta import generation_meta, stream_top_block, stream_top_k, thumb_shape
from attnscope.encode.selection import VIEWS, ViewName, check_views
from attnscope.encode.tiles import check_tile, tile_arrays
from attnscope.encode.value_chunks import value_norm_arrays
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionStream, AttentionTrace


def parse_key(key: object, trace: AttentionTrace) -> ChunkKey:
    """Parse ``key`` and check it names a chunk ``trace`` has; raise AttnscopeError otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a", "b"], np.full((2, 3, 2, 2), 0.5, np.float32))
    >>> parse_key("top:self:1", t)
    ChunkKey(kind='top', stream='self', layer=1, head=None)
    >>> parse_key("top:self:7", t)
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: layer position 7 is out of range: stream 'self' has 2 ...
    """
    parsed = read_key(key)
    name = parsed.stream
    stream = _stream(name, trace)
    if parsed.kind in IMAGE_KINDS:
        check_image_chunk(trace, parsed.kind, name, parsed.key)
    if parsed.layer is not None:
        _check_layer(parsed.layer, name, stream.num_layers)
    if parsed.kind == "tile":
        return _check_tile(parsed, stream)
    if parsed.head is not None and not parsed.head < stream.num_heads:
        raise AttnscopeError(
            f"head {parsed.head} is out of range: stream {name!r} has "
            f"{stream.num_heads} heads (0..{stream.num_heads - 1})."
        )
    if parsed.first_row is not None:
        _check_first_row(parsed.first_row, name, stream.q_len)
    if parsed.kind == "top" and parsed.first_row is not None:
        _check_block(parsed, stream)
    if parsed.kind == "pseudo" and parsed.first_row is not None:
        _check_query_rollout(parsed, stream)
    if parsed.kind in ANALYSIS_KINDS and parsed.first_row is None and not analysable(stream):
        raise AttnscopeError(unanalysable_reason(stream))
    if parsed.kind == "vnorm" and stream.value_norms is None:
        raise AttnscopeError(
            f"stream {name!r} holds no value norms, so it has no vnorm chunks; capture with "
            "attnscope.capture(model, text, value_norms=True)."
        )
    if parsed.kind == "qk" and not stream.has_qk:
        raise AttnscopeError(
            f"stream {name!r} recorded no query/key vectors, so it has no qk chunks."
        )
    return parsed


def _check_block(parsed: ChunkKey, stream: AttentionStream) -> None:
    first_row, name = parsed.first_row or 0, parsed.stream
    block = stream_top_block(stream)
    if first_row % block:
        raise AttnscopeError(
            f"first row {first_row} in {parsed.key!r} does not start a block: stream {name!r} "
            f"has blocks of {block} query rows (_meta.streams[{name!r}].top_block); "
            f"use a multiple of {block}, e.g. {first_row - first_row % block}."
        )


def _check_query_rollout(parsed: ChunkKey, stream: AttentionStream) -> None:
    if not offers_query_rollout(stream):
        whole = pseudo_key(parsed.stream, parsed.layer or 0)
        raise AttnscopeError(
            f"{parsed.key!r}: stream {parsed.stream!r} offers no rollout of one query "
            f"(self-attention over consecutive layers, past {ROLLOUT_MAX_TOKENS} tokens); its "
            f"{whole} chunk holds {pseudo_heads(stream)}."
        )


def _check_tile(parsed: ChunkKey, stream: AttentionStream) -> ChunkKey:
    head, key = parsed.head, parsed.key
    if head is not None and not head < stream.num_heads:
        raise AttnscopeError(
            f"head {head} in {key!r} is out of range: stream {parsed.stream!r} has "
            f"{stream.num_heads} heads (0..{stream.num_heads - 1}, or 'mean')."
        )
    assert parsed.tile is not None  # read_key gives every tile key its place
    check_tile(stream, *parsed.tile, key)
    return parsed


def _stream(name: str, trace: AttentionTrace) -> AttentionStream:
    stream = trace.streams.get(name)
    if stream is None:
        raise AttnscopeError(f"unknown stream {name!r}; this trace has {list(trace.streams)}.")
    return stream


def _check_layer(layer: int, name: str, num_layers: int) -> None:
    if not layer < num_layers:
        raise AttnscopeError(
            f"layer position {layer} is out of range: stream {name!r} has "
            f"{num_layers} layers (0..{num_layers - 1})."
        )


def _check_first_row(first_row: int, name: str, q_len: int) -> None:
    if not first_row < q_len:
        raise AttnscopeError(
            f"first row {first_row} is out of range: stream {name!r} has {q_len} "
            f"query rows (0..{q_len - 1})."
        )


def encode_chunk(
    trace: AttentionTrace, key: ChunkKey, *, top_k: int | None = None
) -> list[NamedArray]:
    """Encode the chunk ``key`` names as named arrays (see ``docs/protocol.md``).

    ``top_k``: keys per query of a ``top:`` chunk when fewer than the stream's
    (:func:`top_arrays`; a page that keeps fewer asks for them); other kinds ignore it.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> [(n, a.dtype.name, a.shape) for n, a in encode_chunk(t, parse_key("attn:self:0:0", t))]
    [('weight', 'uint8', (2, 2)), ('rowmax', 'float32', (2,))]
    """
    stream = trace.streams[key.stream]
    if key.kind == "segments":  # a widget's segments= serves these (display/segmented.py)
        raise AttnscopeError(
            f"{key.key!r}: segment chunks come from a widget made with segments=, e.g. "
            "AttentionWidget(trace, segments='sentences') (or 'turns', or token positions)."
        )
    if key.kind == "thumbs":
        first = key.first_row or 0
        shape = thumb_shape(stream, first)
        return [("thumbs", any_thumbnails(stream, *shape, first_row=first))]
    if key.kind == "stats":
        return stats_arrays(trace, key.stream, stream_top_k(stream))
    if key.kind == "pixels":
        return pixels_arrays(trace)
    assert key.layer is not None
    if key.tile is not None:
        return tile_arrays(stream, key.layer, key.head, key.tile)
    if key.kind == "pseudo" and key.first_row is not None:
        return query_rollout_arrays(stream, key.layer, key.first_row, stream_top_k(stream))
    if key.kind == "pseudo":
        return pseudo_arrays(stream, key.layer, stream_top_k(stream))
    if key.kind == "top":
        return top_arrays(stream, key.layer, key.first_row, top_k)
    if key.kind == "image":
        return image_arrays(trace, stream, key.layer)
    if key.kind == "vnorm":
        return value_norm_arrays(stream, key.layer)
    assert key.head is not None
    if key.kind == "attn":
        weight, rowmax = stream_quantized(stream, key.layer, [key.head])
        return [("weight", weight[0]), ("rowmax", rowmax[0])]
    return qk_arrays(stream, key.layer, key.head)


def top_arrays(
    stream: AttentionStream, position: int, first_row: int | None, top_k: int | None = None
) -> list[NamedArray]:
    """A ``top:`` chunk's arrays: one block of query rows from ``first_row``, or every row.

    ``top_k`` keys per query (default :func:`~attnscope.encode.meta.stream_top_k`):
    a page that keeps fewer asks for them, which is faster than cutting the
    default's (the strongest keys come first either way).

    Every row is computed as part of its block (:func:`~attnscope.encode.meta.stream_top_block`
    rows from a multiple of that size), so a whole-layer chunk holds exactly
    the bytes of its blocks' chunks, stacked: the scores of a block come from
    one product of the same shape either way.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.random.default_rng(0).normal(size=(1, 2, 70, 4)).astype(np.float32)
    >>> s = AttentionStream(queries=q, keys=q)
    >>> whole, block = top_arrays(s, 0, None), top_arrays(s, 0, 64)
    >>> [(name, a.shape) for name, a in block]
    [('index', (2, 6, 64)), ('weight', (2, 6, 64)), ('rowmax', (2, 6))]
    >>> all(np.array_equal(w[1][:, 64:], b[1]) for w, b in zip(whole, block))
    True
    """
    size = stream_top_block(stream)
    top_k = stream_top_k(stream) if top_k is None else min(top_k, stream_top_k(stream))
    if first_row is None and top_k < stream.k_len:
        # One call for every block: the layer's arrays are made before any block's scores.
        index, weight, rowmax = layer_top_keys(stream, position, top_k, block=size)
        return [("index", index), ("weight", weight), ("rowmax", rowmax)]
    if first_row is None:
        blocks = [
            top_arrays(stream, position, start, top_k) for start in range(0, stream.q_len, size)
        ]
        return [
            (name, np.concatenate([b[i][1] for b in blocks], axis=1))
            for i, (name, _) in enumerate(blocks[0])
        ]
    rows = slice(first_row, min(first_row + size, stream.q_len))
    if top_k >= stream.k_len:
        # Every key is kept: the keys in their own order need no index (1 byte a value).
        heads = list(range(stream.num_heads))
        weight, rowmax = stream_quantized(stream, position, heads, rows)
        return [("weight", weight), ("rowmax", rowmax)]
    index, weight, rowmax = layer_top_keys(stream, position, top_k, rows)
    return [("index", index), ("weight", weight), ("rowmax", rowmax)]


class ChunkCache:
    """Encoded chunks by key; the least recently used go once ``max_bytes`` is passed.

    A widget keeps one so that a second view of it, or a re-rendered one, does
    not encode the same chunks again.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
    >>> cache = ChunkCache(max_bytes=1024)
    >>> first = cache.encode(t, parse_key("thumbs:self", t))
    >>> cache.encode(t, parse_key("thumbs:self", t)) is first, cache.nbytes
    (True, 1)
    """

    def __init__(self, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[str, list[NamedArray]] = OrderedDict()

    def encode(
        self, trace: AttentionTrace, key: ChunkKey, *, top_k: int | None = None
    ) -> list[NamedArray]:
        """Return the chunk's arrays, from the cache when it holds them.

        With ``top_k`` a ``top:`` chunk the cache does not hold is made with
        that many keys a row and not kept (the cache holds what the widget sends);
        one it holds is returned whole, its first ``top_k`` keys being the same.
        """
        if top_k is not None and key.kind == "top" and key.key not in self._items:
            return encode_chunk(trace, key, top_k=top_k)
        return self.get(key.key, lambda: encode_chunk(trace, key))

    def get(self, key: str, make: Callable[[], list[NamedArray]]) -> list[NamedArray]:
        """Return the arrays cached under ``key``, or ``make()`` them and cache them."""
        arrays = self._items.get(key)
        if arrays is not None:
            self._items.move_to_end(key)
            return arrays
        arrays = make()
        self._items[key] = arrays
        self.nbytes += sum(a.nbytes for _, a in arrays)
        while self.nbytes > self.max_bytes and len(self._items) > 1:
            _, dropped = self._items.popitem(last=False)
            self.nbytes -= sum(a.nbytes for _, a in dropped)
        return arrays


def all_keys(
    trace: AttentionTrace,
    *,
    stream: str | None = None,
    layer: int = 0,
    views: Sequence[ViewName] = VIEWS,
    derived: Collection[str] = (),
) -> list[str]:
    """The chunk keys that ``views`` need from ``trace``, most needed first.

    The order is what a page should hold when it cannot hold everything.
    Thumbnails and statistics of every stream (model view) come first; then
    a trace with images has the image view's pictures and its ``image:`` chunk of
    the first layer (its other layers come after the head view's chunks); then
    the top keys (head view) of every layer, the given stream and layer position first and
    the other layers outward from it, so the head view can switch to any
    layer, and after them the pseudo-heads (mean, rollout) in the same order;
    then, in the same layer order, every head's q/k (neuron view; O(N·d)
    each), and only after all of them each head's full-resolution weights
    (which the neuron view checks its softmax against): these grow with N²
    per head, so on long inputs they are the part a budget cuts, never a
    head's q/k. Full-resolution weights the model view only previews on
    hover come last.

    ``derived`` names streams whose ``top:`` and ``attn:`` chunks the page
    leaves out because the browser computes them from the ``qk:`` chunks
    (docs/protocol.md, "Pages that derive"): their ``qk:`` chunks take the
    ``top:`` chunks' place, every head of a layer together.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> trace = AttentionTrace(["a"], np.ones((2, 1, 1, 1), np.float32))
    >>> all_keys(trace, layer=1)  # doctest: +NORMALIZE_WHITESPACE
    ['thumbs:self', 'stats:self', 'top:self:1', 'top:self:0', 'pseudo:self:1', 'pseudo:self:0',
     'attn:self:1:0', 'attn:self:0:0']
    >>> all_keys(trace, layer=1, views=("head",))
    ['top:self:1', 'top:self:0', 'pseudo:self:1', 'pseudo:self:0']
    >>> q = np.ones((2, 1, 1, 4), np.float32)
    >>> with_qk = AttentionTrace(["a"], None, queries=q, keys=q)
    >>> all_keys(with_qk, views=("head", "neuron"), derived={"self"})
    ['qk:self:0:0', 'qk:self:1:0', 'pseudo:self:0', 'pseudo:self:1']
    """
    views = check_views(views)
    first = stream if stream is not None else next(iter(trace.streams))
    names = [first, *(n for n in trace.streams if n != first)]
    fits = {n: analysable(trace.streams[n]) for n in names}
    keys: list[str] = []
    if "model" in views:  # statistics only where a layer fits in memory
        keys = [k for n in names for k in (thumbs_key(n), stats_key(n))[: 1 + fits[n]]]
    generation = generation_meta(trace)
    if generation is not None and "model" in views:  # the model view's generated rows
        keys.append(thumbs_key(generation["stream"], generation["prompt_length"]))
    layer_order: list[tuple[str, int]] = []
    for name in names:
        s = trace.streams[name]
        start = min(layer, s.num_layers - 1) if name == first else 0
        order = sorted(range(s.num_layers), key=lambda p: (abs(p - start), p))
        layer_order += [(name, position) for position in order]

    def qk_keys(name: str, position: int) -> list[str]:
        return [qk_key(name, position, h) for h in range(trace.streams[name].num_heads)]

    pictured = image_stream(trace) if "image" in views and trace.images else None
    # The image view: its pictures and its first layer up front, the other layers after the
    # head view's (a layer is heads x text queries x image tokens: 1.8 MB for LLaVA-1.5).
    pictures = [image_key(n, p) for n, p in layer_order if n == pictured]
    keys += [pixels_key(pictured), *pictures[:1]] if pictured is not None else []
    if "head" in views:
        for name, position in layer_order:
            keys += qk_keys(name, position) if name in derived else [top_key(name, position)]
        keys += [pseudo_key(name, position) for name, position in layer_order if fits[name]]
    keys += pictures[1:]
    checks: list[str] = []  # the neuron view's N² weights, after every head's q/k
    preview: list[str] = []
    for name, position in layer_order:
        s = trace.streams[name]
        full = [attn_key(name, position, h) for h in range(s.num_heads)]
        if name in derived:
            keys += [] if "head" in views else qk_keys(name, position)
        elif "neuron" in views and s.has_qk:
            keys += qk_keys(name, position)
            checks += full
        elif "model" in views:
            preview += full
    return keys + checks + preview
