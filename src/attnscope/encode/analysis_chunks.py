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
from itertools import pairwise
from typing import Any

import numpy as np

from attnscope.analysis.access import layer_block
from attnscope.analysis.rollout import residual_attention
from attnscope.analysis.statistics import STATISTICS, statistic_table
from attnscope.analysis.words import word_ids
from attnscope.encode.arrays import F32Array, NamedArray, quantize_rows, top_keys
from attnscope.trace import AttentionStream, AttentionTrace
from attnscope.trace import stream as stream_module

ROLLOUT_MAX_TOKENS = 1024
"""Longest input the ``rollout`` pseudo-head is offered for: layer ``l`` costs ``l``
products of ``n x n`` matrices."""


def analysable(stream: AttentionStream) -> bool:
    """Whether one layer of ``stream`` fits in memory, as its statistics and pseudo-heads need.

    They read a whole layer at a time (``stream.layer_attention``), which a long
    input computed on demand may not allow (``attnscope.trace.stream.MAX_ATTENTION_BYTES``);
    such a stream offers no ``stats:`` or ``pseudo:`` chunk.

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
        f"stream {stream.name!r} is too long for head statistics and pseudo-heads: they "
        f"read a whole layer ({stream.num_heads} heads x {stream.q_len} x {stream.k_len}), "
        "more than attnscope.trace.stream.MAX_ATTENTION_BYTES allows; use "
        "attnscope.head_stats on a shorter input."
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
    square = stream.query_side == stream.key_side and stream.q_len == stream.k_len
    consecutive = all(b == a + 1 for a, b in pairwise(stream.layers))
    if square and consecutive and stream.q_len <= ROLLOUT_MAX_TOKENS:
        return ["mean", "rollout"]
    return ["mean"]


def statistics_meta() -> list[dict[str, str]]:
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
    """The word id of every token on each side (:func:`attnscope.analysis.word_ids`).

    Examples
    --------
    >>> import numpy as np
    >>> t = AttentionTrace(["[CLS]", "play", "##ing"], np.full((1, 1, 3, 3), 1 / 3, np.float32),
    ...                    token_kinds=["special", "token", "token"])
    >>> sides_words(t)
    {'source': [0, 1, 1], 'target': None}
    """
    return {
        "source": word_ids(trace.source),
        "target": None if trace.target is None else word_ids(trace.target),
    }


def stats_arrays(trace: AttentionTrace, stream: str) -> list[NamedArray]:
    """The ``stats:<stream>`` chunk: one f32 ``(layers, heads)`` array per statistic.

    Examples
    --------
    >>> import numpy as np
    >>> t = AttentionTrace(list("abc"), np.full((2, 4, 3, 3), 1 / 3, np.float32))
    >>> arrays = stats_arrays(t, "self")
    >>> arrays[0][0], arrays[0][1].shape, arrays[0][1].dtype.name
    ('cls', (2, 4), 'float32')
    """
    table = statistic_table(trace, stream=stream)
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
    out = [layer_block(stream, position).mean(axis=0)]
    if "rollout" in pseudo_heads(stream):
        out.append(_rollout_through(stream, position))
    weights: F32Array = np.stack(out).astype(np.float32)
    return weights


_LAST_ROLLOUT: weakref.WeakKeyDictionary[AttentionStream, tuple[int, Any]] = (
    weakref.WeakKeyDictionary()
)
"""Per stream, the last rollout product made: a page asks for layers 0, 1, 2, ... in turn,
and each extends the one before by one layer instead of starting again from layer 0."""


def _rollout_through(stream: AttentionStream, position: int) -> Any:
    """Rollout up to and including ``position``: residual attention products, newest on the left."""
    start, product = _LAST_ROLLOUT.get(stream, (-1, None))
    if product is None or start > position:
        start, product = -1, np.eye(stream.q_len)
    for p in range(start + 1, position + 1):
        product = residual_attention(stream, p) @ product
    _LAST_ROLLOUT[stream] = (position, product)
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
    weights = pseudo_weights(stream, position)
    if top_k >= stream.k_len:
        weight, rowmax = quantize_rows(weights)
        return [("weight", weight), ("rowmax", rowmax)]
    index, weight, rowmax = top_keys(weights, top_k)
    return [("index", index), ("weight", weight), ("rowmax", rowmax)]
