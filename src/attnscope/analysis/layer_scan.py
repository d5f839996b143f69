"""One pass over a layer's attention for everything the widget's analysis chunks need.

The statistics (``stats:`` chunk) and the head mean (``pseudo:`` chunks, and
the rollout built from it) both read every weight of a layer; reading the
layer once for both halves the cost when the weights are recomputed from q
and k, as they are for a capture.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnscope.analysis.access import Buffers, Float64Array, layer_rows
from attnscope.analysis.aggregate import HeadMean
from attnscope.analysis.statistics import LayerStatistics, TokenSets
from attnscope.trace import AttentionStream

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class LayerScan:
    """What one pass over a layer gives: each statistic per head, and the mean over heads."""

    statistics: dict[str, Float64Array]
    """``{name: (heads,)}`` in :data:`attnscope.analysis.STATISTICS` order."""
    mean: Tensor
    """float32 ``(q_len, k_len)``: the mean over heads."""


def scan_layer(
    stream: AttentionStream, position: int, sets: TokenSets, buffers: Buffers | None = None
) -> LayerScan:
    """The statistics and the head mean of one layer, reading each weight once.

    ``buffers``: work tensors to reuse, one for every layer of a pass.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(list("ab"), np.full((1, 3, 2, 2), 0.5, np.float32))
    >>> scan = scan_layer(t.stream, 0, TokenSets.of(t, t.stream))
    >>> scan.statistics["sink"].tolist(), scan.mean.tolist()
    ([0.5, 0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]])
    """
    buffers = Buffers() if buffers is None else buffers
    statistics = LayerStatistics(stream, position, sets, buffers)
    mean = HeadMean(stream.q_len, stream.k_len, stream.num_heads)
    for rows, heads, weights in layer_rows(stream, position, buffers=buffers, narrow=True):
        statistics.add(rows, heads, weights)
        mean.add(rows, weights)
    return LayerScan(statistics.result(), mean.result())
