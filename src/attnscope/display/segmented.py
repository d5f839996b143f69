"""A widget's ``segments=``: the head view's segment rows and the model view's receiver scores.

``AttentionWidget(trace, segments="sentences")`` (or ``"turns"``, or token
positions: the ``boundaries`` of :func:`attnscope.segments`) computes
:func:`attnscope.segments` once, then serves it two ways: the head view's
segments mode reads ``_meta.segments`` and the ``segments:<stream>:<layer>``
chunks (:mod:`attnscope.encode.segment_chunks`), and the model view ranks
heads by Thought Anchors' receiver score, a ``scan:receiver`` statistic
(:mod:`attnscope.display.scan_ranking`, as ``scan=segments(...).heads()`` gives).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnscope.analysis.segments import (
    MIN_RECEIVING,
    PROXIMITY,
    SegmentAttention,
    check_boundaries,
    segments,
)
from attnscope.display.scan_ranking import ScanRanking, scan_ranking
from attnscope.encode.arrays import NamedArray
from attnscope.encode.keys import ChunkKey, segments_key
from attnscope.encode.segment_chunks import segment_arrays, segments_meta
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionTrace

MAX_SEGMENTS = 256
"""Most segments a widget shows as head-view rows: a layer's chunk is ``heads x S x S``
float32 (32 heads: 8 MB at 256), and more rows than this are no longer read as sentences."""


def layer_keys(stream: str, count: int, layer: int = 0) -> list[str]:
    """The ``segments:`` keys of ``count`` layers, ``layer`` (a position) first, then outward.

    Examples
    --------
    >>> layer_keys("self", 3, 1)
    ['segments:self:1', 'segments:self:0', 'segments:self:2']
    """
    order = sorted(range(count), key=lambda p: (abs(p - layer), p))
    return [segments_key(stream, p) for p in order]


@dataclass(frozen=True)
class WidgetSegments:
    """The segments a widget shows: :func:`attnscope.segments` of one stream, and its ``_meta``.

    Attributes
    ----------
    found
        The segment attention of every layer and head.
    stream
        The stream it is of.
    meta
        ``_meta.segments``: ``stream``, ``by``, ``edges``, ``labels``, ``titles``.
    """

    found: SegmentAttention
    stream: str
    meta: dict[str, Any]

    def keys(self, layer: int = 0) -> list[str]:
        """Every layer's chunk key, ``layer`` (a position) first and then outward from it.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace
        >>> t = AttentionTrace(list("abcd"), np.full((3, 1, 4, 4), 0.25, np.float32))
        >>> widget_segments(t, [2]).keys(1)
        ['segments:self:1', 'segments:self:0', 'segments:self:2']
        """
        return layer_keys(self.stream, len(self.found.layers), layer)

    def arrays(self, key: ChunkKey) -> list[NamedArray]:
        """The arrays of a ``segments:`` chunk; raise AttnscopeError for another stream's."""
        if key.stream != self.stream or key.layer is None:
            raise AttnscopeError(
                f"{key.key!r}: this widget's segments are of stream {self.stream!r}, not "
                f"{key.stream!r}; ask for that stream's layers, or make the widget with "
                f"stream={key.stream!r} and segments=."
            )
        return segment_arrays(self.found, key.layer)

    def ranking(self, trace: AttentionTrace) -> ScanRanking | None:
        """Each head's receiver score as the model view's statistic ``scan:receiver``.

        None when no head has one (too few segments: see :attr:`note`).
        """
        if self.note is not None:
            return None
        heads = self.found.heads()[["layer", "head", "receiver"]]
        return scan_ranking(heads, trace, stream=self.stream)

    @property
    def note(self) -> str | None:
        """Why the model view offers no receiver ranking, or None when it does.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace
        >>> t = AttentionTrace(["Hi", ".", "Yes", "!"], np.full((1, 2, 4, 4), 0.25, np.float32))
        >>> widget_segments(t, "sentences").note[:50]
        'No receiver scores: 2 segments leave 0 with 4 or m'
        """
        if np.isfinite(self.found.receiver).any():
            return None
        count = len(self.found.edges) - 1
        receiving = max(count - PROXIMITY, 0)
        if receiving >= MIN_RECEIVING:
            return (
                "No receiver scores: every head's vertical scores are equal (no spread); "
                "the model view does not rank by it."
            )
        return (
            f"No receiver scores: {count} segments leave {receiving} with {PROXIMITY} or more "
            f"after them, and the score needs {MIN_RECEIVING}; the model view does not rank "
            f"by it. Split a longer text ({PROXIMITY + MIN_RECEIVING} segments or more)."
        )


def _by(boundaries: object) -> str:
    return boundaries if isinstance(boundaries, str) else "positions"


def widget_segments(
    trace: AttentionTrace, boundaries: Any, *, stream: str | None = None
) -> WidgetSegments:
    """Compute the segments a widget shows; errors are :func:`attnscope.segments`'s.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace(["Hi", ".", "Yes", "!"], np.full((1, 2, 4, 4), 0.25, np.float32))
    >>> w = widget_segments(t, "sentences")
    >>> w.meta["labels"], w.ranking(t)  # two sentences: no receiver scores (w.note)
    (['Hi.', 'Yes!'], None)
    >>> t = AttentionTrace([f"w{i}." for i in range(9)], np.random.default_rng(0).dirichlet(
    ...     np.ones(9), (1, 2, 9)).astype(np.float32))
    >>> widget_segments(t, "sentences").ranking(t).names
    ['scan:receiver']
    """
    name = stream if stream is not None else next(iter(trace.streams))
    chosen = trace.streams.get(name)
    if chosen is not None:  # else segments() names the stream; count before any work
        tokens = trace.tokens_for(chosen.query_side)
        count = len(check_boundaries(boundaries, trace, chosen.q_len, tokens)) - 1
        if count > MAX_SEGMENTS:
            raise AttnscopeError(
                f"segments={boundaries!r} splits stream {name!r} into {count} segments; the "
                f"head view shows at most {MAX_SEGMENTS} as rows (each layer's chunk holds "
                "heads x segments^2 numbers). Pass fewer start positions, or rank by "
                "scan=attnscope.segments(trace, ...).heads() and read the matrices there."
            )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # too few segments: the widget's note says so
        found = segments(trace, boundaries, stream=name)
    chosen = trace.streams[name]
    tokens = trace.tokens_for(chosen.query_side)
    images = trace.images if chosen.query_side == "source" else ()
    meta = segments_meta(found, tokens, name, _by(boundaries), images)
    return WidgetSegments(found, name, meta)


def merged(first: ScanRanking | None, second: ScanRanking | None) -> ScanRanking | None:
    """One ranking of both tables' statistics (a ``scan=`` and the receiver scores).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from attnscope import AttentionTrace
    >>> t = AttentionTrace([f"w{i}." for i in range(9)], np.random.default_rng(0).dirichlet(
    ...     np.ones(9), (1, 2, 9)).astype(np.float32))
    >>> df = pd.DataFrame({"layer": 0, "head": [0, 1], "retrieval": [0.5, 0.0]})
    >>> merged(scan_ranking(df, t), widget_segments(t, "sentences").ranking(t)).names
    ['scan:retrieval', 'scan:receiver']
    """
    if first is None or second is None:
        return first or second
    if first.stream != second.stream:
        raise AttnscopeError(
            f"scan= ranks stream {first.stream!r} and segments= stream {second.stream!r}; "
            "rank one stream: set the scan table's attrs['stream'] or the widget's stream=."
        )
    clash = sorted(set(first.names) & set(second.names))
    if clash:
        raise AttnscopeError(
            f"scan= already has {clash} and segments= adds them again; pass scan= without "
            "its receiver column, or leave segments= out."
        )
    return ScanRanking(
        first.stream,
        first.inputs,
        [*first.statistics, *second.statistics],
        [*first.arrays, *second.arrays],
        {**first.strongest, **second.strongest},
    )
