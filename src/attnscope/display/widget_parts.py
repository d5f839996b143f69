"""The parts a widget shows besides its trace's own views: a comparison, a scan, segments, images.

:class:`~attnscope.AttentionWidget` keeps its traits, their checks and the
messages; what each feature adds is assembled here, once, from the trace and
its options: the ``_meta`` entries (a scan's and the segments' statistics, the
segments the head view draws, notes), the chunk kinds each part serves (through
one :class:`~attnscope.encode.dispatch.ChunkDispatcher`), the traits each
starts on, and the chunks an exported page must hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from attnscope.analysis.compare import AttentionComparison
from attnscope.display.image_rows import PAGE_SHARE, ImageRows, image_rows
from attnscope.display.page import DEFAULT_MAX_BYTES
from attnscope.display.scan_ranking import RankedChunkCache, ScanRanking, scan_ranking
from attnscope.display.segmented import WidgetSegments, merged, widget_segments
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.dispatch import ChunkDispatcher
from attnscope.encode.meta import build_meta
from attnscope.encode.selection import ViewName, check_image_view, check_views, views_of
from attnscope.errors import AttnscopeTypeError
from attnscope.trace import AttentionTrace


@dataclass
class WidgetParts:
    """A widget's parts, assembled from its trace and options by :func:`widget_parts`.

    Attributes
    ----------
    trace
        The trace the views index (for a comparison, input A over the aligned tokens).
    views
        The views offered, in tab order.
    comparison, compared
        The comparison shown and its chunks of A, B and A − B; None for one trace.
    segments
        ``segments=`` (rows of the head view, a receiver ranking), or a trace's
        images as rows; None without either.
    ranking
        The statistics the model view ranks by from ``scan=`` and the segments.
    start
        Traits the parts start on (``rank_by``, ``compare_side``, ``segment_rows``).
    notes
        What the parts say in ``_meta["notes"]`` (why images are not rows ...).
    """

    trace: AttentionTrace
    views: tuple[ViewName, ...]
    comparison: AttentionComparison | None = None
    compared: ComparisonChunks | None = None
    segments: WidgetSegments | ImageRows | None = None
    ranking: ScanRanking | None = None
    start: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        """The widget's ``_meta``: the trace's (or the comparison's) with each part's entries."""
        compared = self.compared
        meta: dict[str, Any] = dict(build_meta(self.trace) if compared is None else compared.meta())
        if self.ranking is not None:
            meta["statistics"] = [*meta["statistics"], *self.ranking.statistics]
        if self.segments is not None:
            meta["segments"] = self.segments.meta
        if self.notes:
            meta["notes"] = [*meta["notes"], *self.notes]
        return {**meta, "views": list(self.views)}

    def dispatcher(self) -> ChunkDispatcher:
        """A new chunk dispatcher serving the trace's chunks and every part's."""
        served = {} if self.segments is None else {"segments": self.segments.arrays}
        if self.ranking is not None:
            return RankedChunkCache(self.ranking, served=served)
        return ChunkDispatcher(served=served, compared=self.compared)

    def page_keys(self, views: Sequence[str], stream: str, layer: int) -> list[str]:
        """The parts' chunks a page of ``views`` holds besides the trace's, the current first.

        With the head or model view, every layer's segments (collapsed images:
        as many as a share of the page allows); nothing else.
        """
        found = self.segments
        if found is None or not {"head", "model"} & set(views):
            return []
        at = layer if stream == found.stream else 0
        if isinstance(found, ImageRows):  # offered, not asked for: a share of the page
            return found.page_keys(at, DEFAULT_MAX_BYTES // PAGE_SHARE)
        return found.keys(at)


def widget_parts(
    shown: AttentionTrace | AttentionComparison,
    *,
    views: Sequence[ViewName] | None = None,
    scan: Any = None,
    segments: Any = None,
    stream: str | None = None,
) -> WidgetParts:
    """Check a widget's trace, ``views``, ``scan=`` and ``segments=`` and assemble its parts.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from attnscope import AttentionTrace, compare
    >>> t = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    >>> parts = widget_parts(t, scan=pd.DataFrame({"layer": 0, "head": [0, 1], "sink": [1, 0]}))
    >>> parts.views, parts.ranking.names, parts.start
    (('head', 'model', 'neuron'), ['scan:sink'], {'rank_by': 'scan:sink'})
    >>> widget_parts(compare(t, t)).start
    {'compare_side': 'diff'}
    >>> widget_parts(compare(t, t), segments="sentences")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: segments= splits one trace, and this widget shows ...
    """
    check_shown(shown)
    if isinstance(shown, AttentionComparison):
        return _compared_parts(shown, views, scan, segments)
    offered = views_of(shown) if views is None else check_views(views)
    check_image_view(offered, shown)
    parts = WidgetParts(shown, offered)
    collapsed: ImageRows | str | None = None  # the images as rows, or why not
    if segments is not None:
        parts.segments = widget_segments(shown, segments, stream=stream)
    else:
        collapsed = image_rows(shown, stream)
        parts.segments = collapsed if isinstance(collapsed, ImageRows) else None
    scanned = None if scan is None else scan_ranking(scan, shown)
    split = parts.segments if isinstance(parts.segments, WidgetSegments) else None
    parts.ranking = merged(scanned, None if split is None else split.ranking(shown))
    if scanned is not None:
        parts.start["rank_by"] = scanned.first_ranked
    if isinstance(collapsed, ImageRows):
        parts.start["segment_rows"] = False  # the images' rows are offered, tokens shown first
    if isinstance(collapsed, str):
        parts.notes.append(collapsed)
    if split is not None and split.note is not None:
        parts.notes.append(split.note)
    return parts


def check_shown(value: object) -> None:
    """Refuse anything but a trace or a comparison, saying what shows the others.

    Examples
    --------
    >>> check_shown("bert-base-uncased")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: AttentionWidget shows an AttentionTrace or an ...
    """
    if not isinstance(value, AttentionTrace | AttentionComparison):
        raise AttnscopeTypeError(
            f"AttentionWidget shows an AttentionTrace or an AttentionComparison, not "
            f"{type(value).__name__}; for a model, module or tensors use "
            "attnscope.show_head_view(source, ...)."
        )


def _compared_parts(
    comparison: AttentionComparison, views: Sequence[ViewName] | None, scan: Any, segments: Any
) -> WidgetParts:
    compared = ComparisonChunks(comparison)
    # A comparison's views index the aligned tokens, which both inputs' aligned traces share.
    offered = views_of(None) if views is None else check_views(views)
    check_image_view(offered, None)  # a comparison has no image view
    if scan is not None:
        raise AttnscopeTypeError(
            "scan= ranks the heads of one trace, and this widget shows a comparison; "
            "show one input with AttentionWidget(trace, scan=df)."
        )
    if segments is not None:
        raise AttnscopeTypeError(
            "segments= splits one trace, and this widget shows a comparison; show one "
            "input with AttentionWidget(trace, segments='sentences')."
        )
    parts = WidgetParts(compared.a, offered, comparison, compared)
    parts.start["compare_side"] = "diff"
    return parts
