"""Maximum flow through a layered graph, the computation behind attention flow.

The graph has node layers ``0 .. L``; edges run only from layer ``m`` down to
layer ``m - 1``, with capacity ``caps[m - 1][i, k]`` from node ``i`` of layer
``m`` to node ``k`` of layer ``m - 1``. The top layer holds the one source
node, the bottom layer the one sink. A residual path may climb back up a layer
(undoing flow), so this is a general maximum flow, solved with Dinic's
algorithm: breadth-first levels over the residual graph, then augmenting paths
along them with a current-arc pointer per node, until no path is left.

The inner loops are plain Python over lists: each step touches one edge, and
a numpy call per step would cost more than the step.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from attnscope.analysis.access import Float64Array

TOLERANCE = 1e-13
"""Residual capacity at or below this counts as none (weights are at most 1)."""


class _Graph:
    """Residual graph: edge ``e`` and its reverse ``e ^ 1`` side by side."""

    def __init__(self, caps: Sequence[Float64Array]) -> None:
        sizes = [c.shape[1] for c in caps] + [caps[-1].shape[0]]
        offsets = np.cumsum([0, *sizes]).tolist()
        self.source = offsets[-2]
        self.sink = 0
        self.out: list[list[int]] = [[] for _ in range(offsets[-1])]
        self.to: list[int] = []
        self.room: list[float] = []
        for m, cap in enumerate(caps):  # edges from layer m + 1 down to layer m
            rows, cols = np.nonzero(cap > TOLERANCE)
            values = cap[rows, cols].tolist()
            for i, k, value in zip(rows.tolist(), cols.tolist(), values, strict=True):
                self._add(offsets[m + 1] + i, offsets[m] + k, value)

    def _add(self, tail: int, head: int, capacity: float) -> None:
        self.out[tail].append(len(self.to))
        self.to.append(head)
        self.room.append(capacity)
        self.out[head].append(len(self.to))
        self.to.append(tail)
        self.room.append(0.0)

    def levels(self) -> list[int]:
        """Breadth-first distance of every node from the source over residual edges (-1: none)."""
        level = [-1] * len(self.out)
        level[self.source] = 0
        queue = deque([self.source])
        to, room = self.to, self.room
        while queue:
            u = queue.popleft()
            for e in self.out[u]:
                v = to[e]
                if level[v] < 0 and room[e] > TOLERANCE:
                    level[v] = level[u] + 1
                    queue.append(v)
        return level

    def blocking_flow(self, level: list[int]) -> float:
        """Push flow along shortest residual paths until none is left at these levels."""
        to, room, out = self.to, self.room, self.out
        arc = [0] * len(out)
        path: list[int] = []
        total = 0.0
        u = self.source
        while True:
            if u == self.sink:
                amount = min(room[e] for e in path)
                for e in path:
                    room[e] -= amount
                    room[e ^ 1] += amount
                total += amount
                cut = next(i for i, e in enumerate(path) if room[e] <= TOLERANCE)
                del path[cut:]  # retreat to the tail of the first saturated edge
                u = to[path[-1]] if path else self.source
                continue
            edges = out[u]
            while arc[u] < len(edges):
                e = edges[arc[u]]
                if room[e] > TOLERANCE and level[to[e]] == level[u] + 1:
                    break
                arc[u] += 1
            if arc[u] < len(edges):
                path.append(edges[arc[u]])
                u = to[edges[arc[u]]]
            elif u == self.source:
                return total
            else:  # a dead end: step back and skip the edge that led here
                level[u] = -1
                e = path.pop()
                u = to[e ^ 1]
                arc[u] += 1


def max_flow(caps: Sequence[Float64Array]) -> float:
    """Value of the maximum flow from the top node to the bottom node.

    Parameters
    ----------
    caps
        ``caps[m]`` is ``(size of layer m + 1, size of layer m)``: the capacities
        of the edges from layer ``m + 1`` down to layer ``m``. The first has one
        column (the sink), the last one row (the source).

    Examples
    --------
    >>> import numpy as np
    >>> # source -> two middle nodes (0.5, 0.5) -> sink (0.3, 0.9): 0.3 + 0.5
    >>> max_flow([np.array([[0.3], [0.9]]), np.array([[0.5, 0.5]])])
    0.8
    """
    graph = _Graph(caps)
    total = 0.0
    while True:
        level = graph.levels()
        if level[graph.sink] < 0:
            return total
        total += graph.blocking_flow(level)
