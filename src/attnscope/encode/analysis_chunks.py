"""The analysis chunks: per-head statistics for the model view, pseudo-heads for the head view.

``stats:<stream>`` holds one f32 ``(layers, heads)`` array per statistic of
:data:`attnscope.analysis.STATISTICS` (NaN where a statistic does not apply);
``pseudo:<stream>:<layer>`` holds the layer's "mean of heads" and, for
self-attention over consecutive layers of at most :data:`ROLLOUT_MAX_TOKENS`
tokens, its attention rollout, in the ``top:`` chunk's format with one "head"
per pseudo-head (``docs/protocol.md``, "Chunks").
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from attnscope.analysis.access import Buffers
from attnscope.analysis.aggregate import layer_mean
from attnscope.analysis.layer_scan import scan_layer
from attnscope.analysis.rollout import rollout_step, stream_rollout_rows
from attnscope.analysis.statistics import STATISTICS, TokenSets, stack_layers
from attnscope.encode.arrays import F32Array, IntArray, NamedArray, quantize_rows, top_keys
from attnscope.encode.meta_types import StatisticMeta
from attnscope.trace import AttentionStream, AttentionTrace
from attnscope.trace import stream as stream_module

if TYPE_CHECKING:
    from torch import Tensor

ROLLOUT_MAX_TOKENS = 1024
"""Longest input the ``rollout`` pseudo-head is offered for: each layer costs a product
of two ``n x n`` matrices, and the products kept take ``4 n^2`` bytes each."""


def analysable(stream: AttentionStream) -> bool:
    """Whether ``stream`` offers ``stats:`` and ``pseudo:`` chunks: one layer within the size limit.

    They read every weight of every layer (a block at a time) and keep a
    ``(q_len, k_len)`` head mean per layer; for a stream whose layer is over
    ``attnscope.trace.stream.MAX_ATTENTION_BYTES`` that is too slow and too
    large for a page, so such a stream offers neither
    (:func:`attnscope.head_stats` still computes its statistics).

    Examples
    --------
    >>> import numpy as np
    >>> analysable(AttentionStream(np.full((1, 2, 3, 3), 1 / 3, np.float32)))
    True
    """
    layer_bytes = 4 * stream.num_heads * stream.q_len * stream.k_len
    return layer_bytes <= stream_module.MAX_ATTENTION_BYTES


def unanalysable_reason(stream: AttentionStream) -> str:
    """Why ``stream`` has no statistics or pseudo-heads (for the chunk's error message)."""
    return (
        f"stream {stream.name!r} is too long for head statistics and pseudo-heads in "
        f"the widget: one layer ({stream.num_heads} heads x {stream.q_len} x "
        f"{stream.k_len}) is more than attnscope.trace.stream.MAX_ATTENTION_BYTES "
        "allows; attnscope.head_stats(trace) computes the statistics a block at a time."
    )


def pseudo_heads(stream: AttentionStream) -> list[str]:
    """The pseudo-heads a stream offers, in chunk order: ``"mean"``, then ``"rollout"``.

    Rollout needs self-attention (queries and keys the same tokens) over
    consecutive layers, and at most :data:`ROLLOUT_MAX_TOKENS` tokens; a stream
    whose layers do not fit in memory (:func:`analysable`) offers none.

    Examples
    --------
    >>> import numpy as np
    >>> pseudo_heads(AttentionStream(np.full((2, 1, 3, 3), 1 / 3, np.float32)))
    ['mean', 'rollout']
    >>> pseudo_heads(AttentionStream(np.full((2, 1, 3, 3), 1 / 3, np.float32), layers=(0, 4)))
    ['mean']
    """
    if not analysable(stream):
        return []
    return ["mean"] if rollout_unavailable(stream) else ["mean", "rollout"]


def rollout_unavailable(stream: AttentionStream) -> str | None:
    """Why the head view offers no ``rollout`` pseudo-head for ``stream``; None when it does.

    Examples
    --------
    >>> import numpy as np
    >>> print(rollout_unavailable(AttentionStream(np.full((2, 1, 3, 3), 1 / 3, np.float32))))
    None
    >>> long = AttentionStream(np.full((1, 1, 1100, 1100), 1 / 1100, np.float32))
    >>> print(rollout_unavailable(long))  # doctest: +ELLIPSIS
    the head view offers rollout up to 1024 tokens ... attnscope.rollout_row(trace, query) ...
    """
    if not analysable(stream):
        return unanalysable_reason(stream)
    if stream.query_side != stream.key_side or stream.q_len != stream.k_len:
        return (
            f"rollout needs self-attention; stream {stream.name!r} has {stream.query_side} "
            f"queries over {stream.key_side} keys"
        )
    if any(b != a + 1 for a, b in pairwise(stream.layers)):
        return (
            f"rollout multiplies consecutive layers; stream {stream.name!r} holds layers "
            f"{list(stream.layers)} (capture every layer up to the last you read)"
        )
    if stream.q_len > ROLLOUT_MAX_TOKENS:
        n = stream.q_len
        return (
            f"the head view offers rollout up to {ROLLOUT_MAX_TOKENS} tokens (every query's "
            f"row: a product of two {n} x {n} matrices per layer); at {n} tokens, "
            "attnscope.rollout_row(trace, query) gives the rollout of the queries you read, "
            "streamed a block of rows at a time"
        )
    return None


def offers_query_rollout(stream: AttentionStream) -> bool:
    """Whether the live head view offers the rollout of its locked query alone (past 1024 tokens).

    A self-attention stream over consecutive layers too long for the rollout of
    every query (:data:`ROLLOUT_MAX_TOKENS`) still has each query's rollout
    (``pseudo:<stream>:<layer>:<query>``, :func:`query_rollout_arrays`).

    Examples
    --------
    >>> import numpy as np
    >>> offers_query_rollout(AttentionStream(np.full((1, 1, 1100, 1100), 1 / 1100, np.float32)))
    True
    """
    square = stream.query_side == stream.key_side and stream.q_len == stream.k_len
    consecutive = all(b == a + 1 for a, b in pairwise(stream.layers))
    return square and consecutive and stream.q_len > ROLLOUT_MAX_TOKENS


def query_rollout_arrays(
    stream: AttentionStream, position: int, query: int, top_k: int
) -> list[NamedArray]:
    """The ``pseudo:<stream>:<layer>:<query>`` chunk: one query's rollout, ``top:`` format.

    One "head" and one row: ``(1, 1, top_k)`` keys and weights, ``(1, 1)`` row maximum,
    from :func:`attnscope.analysis.rollout.stream_rollout_rows` (a block of rows at a time).

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((2, 1, 3, 3), 1 / 3, np.float32))
    >>> [(n, a.shape) for n, a in query_rollout_arrays(s, 1, 0, top_k=2)]
    [('index', (1, 1, 2)), ('weight', (1, 1, 2)), ('rowmax', (1, 1))]
    """
    row = stream_rollout_rows(stream, [query], position).astype(np.float32)[None]
    if top_k >= stream.k_len:
        weight, rowmax = quantize_rows(row)
        return [("weight", weight), ("rowmax", rowmax)]
    index, weight, rowmax = top_keys(row, top_k)
    return [("index", index), ("weight", weight), ("rowmax", rowmax)]


def statistics_meta() -> list[StatisticMeta]:
    """Each statistic's name, label, formula and source, in ``stats:`` chunk order (for ``_meta``).

    Examples
    --------
    >>> statistics_meta()[0]["name"], len(statistics_meta()) == len(STATISTICS)
    ('cls', True)
    """
    return [
        {"name": s.name, "label": s.label, "formula": s.formula, "source": s.source}
        for s in STATISTICS.values()
    ]


def sides_words(trace: AttentionTrace) -> dict[str, list[int] | None]:
    """The word id of every token on each side (:attr:`attnscope.Tokens.word_ids`).

    Examples
    --------
    >>> import numpy as np
    >>> t = AttentionTrace(["[CLS]", "play", "##ing"], np.full((1, 1, 3, 3), 1 / 3, np.float32),
    ...                    token_kinds=["special", "token", "token"])
    >>> sides_words(t)
    {'source': [0, 1, 1], 'target': None}
    """
    return {
        "source": list(trace.source.word_ids),
        "target": None if trace.target is None else list(trace.target.word_ids),
    }


MEANS_KEPT_BYTES = 64 << 20
"""Most bytes of head means the ``stats:`` chunk keeps for the ``pseudo:`` chunks to come
(they need the same weights: kept, the layer is not read a second time)."""

ROLLOUT_KEPT_BYTES = 64 << 20
"""Most bytes of rollout products kept per stream: each ``pseudo:`` chunk extends the
nearest one below its layer instead of starting again from the first layer."""


@dataclass
class _Kept:
    """What one stream's analysis chunks keep for the chunks after them."""

    means: dict[int, Tensor] = field(default_factory=dict)
    """Head mean by layer position, from the ``stats:`` chunk; a ``pseudo:`` chunk takes its own."""
    products: dict[int, Tensor] = field(default_factory=dict)
    """Rollout product through each layer position, oldest first, within ROLLOUT_KEPT_BYTES."""
    pseudo: dict[tuple[int, int], list[NamedArray]] = field(default_factory=dict)
    """The ``pseudo:`` chunk by (layer position, keys per row), encoded by the ``stats:``
    chunk from its head mean when the means are too large to keep (a few MB, not 0.8 GB)."""

    def keep_product(self, position: int, product: Tensor) -> None:
        self.products[position] = product
        held = sum(_nbytes(p) for p in self.products.values())
        while held > ROLLOUT_KEPT_BYTES and len(self.products) > 1:
            oldest = next(iter(self.products))
            held -= _nbytes(self.products.pop(oldest))


_KEPT: weakref.WeakKeyDictionary[AttentionStream, _Kept] = weakref.WeakKeyDictionary()


def _kept(stream: AttentionStream) -> _Kept:
    kept = _KEPT.get(stream)
    if kept is None:
        kept = _KEPT[stream] = _Kept()
    return kept


def _nbytes(tensor: Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def stats_arrays(trace: AttentionTrace, stream: str, top_k: int | None = None) -> list[NamedArray]:
    """The ``stats:<stream>`` chunk: one f32 ``(layers, heads)`` array per statistic.

    Each layer is read once (:func:`attnscope.analysis.layer_scan.scan_layer`);
    its head mean is kept for the ``pseudo:`` chunks when every layer's fits
    in :data:`MEANS_KEPT_BYTES`. Otherwise, given the ``pseudo:`` chunks'
    ``top_k`` and no rollout pseudo-head (which needs the means), each layer's
    ``pseudo:`` chunk is encoded now from the mean in hand and kept: a long
    page's mean chunks then cost no second reading of every weight.

    Examples
    --------
    >>> import numpy as np
    >>> t = AttentionTrace(list("abc"), np.full((2, 4, 3, 3), 1 / 3, np.float32))
    >>> arrays = stats_arrays(t, "self")
    >>> arrays[0][0], arrays[0][1].shape, arrays[0][1].dtype.name
    ('cls', (2, 4), 'float32')
    """
    chosen = trace.streams[stream]
    sets = TokenSets.of(trace, chosen)
    keep = 4 * chosen.num_layers * chosen.q_len * chosen.k_len <= MEANS_KEPT_BYTES
    kept = _kept(chosen)
    per_layer = []
    buffers = Buffers()
    for position in range(chosen.num_layers):
        scan = scan_layer(chosen, position, sets, buffers)
        per_layer.append(scan.statistics)
        if keep:
            kept.means[position] = scan.mean
        elif top_k is not None and "rollout" not in pseudo_heads(chosen):
            stops = _key_stops(chosen, position)
            kept.pseudo[(position, top_k)] = _mean_chunk(scan.mean.numpy()[None], top_k, stops)
    table = stack_layers(per_layer)
    return [(name, table[name].astype(np.float32)) for name in STATISTICS]


def pseudo_weights(stream: AttentionStream, position: int) -> F32Array:
    """The pseudo-heads of one layer as f32 ``(len(pseudo_heads(stream)), q_len, k_len)``.

    ``mean`` is the mean over the layer's heads; ``rollout`` is the rollout up to
    and including this layer (``attnscope.rollout(trace)[position]``).

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((2, 2, 2, 2), 0.5, np.float32))
    >>> pseudo_weights(s, 1)[1].tolist()  # uniform layers: (1 - 2^-l) U + 2^-l I
    [[0.625, 0.375], [0.375, 0.625]]
    """
    import torch

    mean = _kept(stream).means.pop(position, None)
    if mean is None:
        mean = layer_mean(stream, position)
    out = [mean]
    if "rollout" in pseudo_heads(stream):
        out.append(_rollout_through(stream, position, mean))
    weights: F32Array = torch.stack(out).numpy()
    return weights


def _rollout_through(stream: AttentionStream, position: int, mean: Tensor) -> Tensor:
    """Rollout through ``position``, whose head mean is ``mean``, from the nearest kept product."""
    kept = _kept(stream)
    if position in kept.products:
        return kept.products[position]
    start = max((p for p in kept.products if p < position), default=-1)
    product = kept.products.get(start)
    for p in range(start + 1, position + 1):
        layer = mean if p == position else kept.means.get(p)
        product = rollout_step(product, layer_mean(stream, p) if layer is None else layer)
        kept.keep_product(p, product)
    assert product is not None
    return product


def pseudo_arrays(stream: AttentionStream, position: int, top_k: int) -> list[NamedArray]:
    """The ``pseudo:<stream>:<layer>`` chunk, in the ``top:`` chunk's format with ``top_k`` keys.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 3, 2, 2), 0.5, np.float32))
    >>> [(n, a.shape) for n, a in pseudo_arrays(s, 0, top_k=2)]
    [('weight', (2, 2, 2)), ('rowmax', (2, 2))]
    """
    encoded = _kept(stream).pseudo.pop((position, top_k), None)
    if encoded is not None:
        return encoded
    return _mean_chunk(pseudo_weights(stream, position), top_k)


def _key_stops(stream: AttentionStream, position: int) -> IntArray | None:
    """Each query's first key hidden from there on by the layer's mask rule, or None."""
    if stream.key_spans is None:
        return None
    spans = stream.key_spans[min(position, stream.key_spans.shape[0] - 1)]
    stops: IntArray = spans[:, 1].astype(np.intp)
    return stops


def _mean_chunk(weights: F32Array, top_k: int, stops: IntArray | None = None) -> list[NamedArray]:
    """Pseudo-heads' ``(p, q_len, k_len)`` weights as a ``pseudo:`` chunk, ``top_k`` keys a row.

    ``stops``: where each query's weights end (:func:`~attnscope.encode.arrays.top_keys`).
    """
    if top_k >= weights.shape[-1]:
        weight, rowmax = quantize_rows(weights)
        return [("weight", weight), ("rowmax", rowmax)]
    index, weight, rowmax = top_keys(weights, top_k, stops=stops)
    return [("index", index), ("weight", weight), ("rowmax", rowmax)]
