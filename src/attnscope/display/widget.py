"""AttentionWidget: the anywidget that shows a trace's head, model and neuron views.

Traits hold only small JSON (``docs/protocol.md``, "Synced traits"); attention
reaches the browser as binary chunks the front end asks for with custom
messages once it has rendered, so nothing binary sits in the initial state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t

from attnscope._progress import take_emptied_output
from attnscope._static import code_texts, packed_code, static_text, view_units, widget_module
from attnscope.analysis.compare import AttentionComparison
from attnscope.analysis.statistics import STATISTICS
from attnscope.display.image_rows import PAGE_SHARE, ImageRows, image_rows
from attnscope.display.lifetime import close_when_cell_reruns, forget_in_history
from attnscope.display.page import DEFAULT_MAX_BYTES, save_html
from attnscope.display.scan_ranking import RankedChunkCache, ScanRanking, scan_ranking
from attnscope.display.segmented import WidgetSegments, merged, widget_segments
from attnscope.display.snapshot import saved_chunks, snapshot_bundle
from attnscope.display.strongest import strongest_trace
from attnscope.display.where_called import display_where_called, kernel_shell, shown_this_cell
from attnscope.encode.analysis_chunks import pseudo_heads, rollout_unavailable
from attnscope.encode.arrays import NamedArray
from attnscope.encode.chunks import ChunkCache, encode_chunk
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.keys import ChunkKey
from attnscope.encode.messages import MESSAGE_BYTES, reply_messages
from attnscope.encode.meta import build_meta, generation_meta
from attnscope.encode.selection import (
    COMPARE_SIDES,
    PAIR_FILTERS,
    THEMES,
    VIEWS,
    WIDGET_OPTIONS,
    ViewName,
    check_image_view,
    check_views,
    default_selection,
    views_of,
)
from attnscope.encode.stream_change import CLAMPED, clamp_to_stream, stream_shape
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    import pandas as pd

OPTIONS = ("view", *WIDGET_OPTIONS)
"""Keyword arguments :class:`AttentionWidget` takes after the trace."""
SAVED_FOLLOWS = (
    "view", "stream", "layer", "head", "query", "pseudo_heads", "rank_by",
    "generated_only", "compare_side", "step", "segment_rows",
)  # fmt: skip
"""Selection traits that change which chunks the current view draws: ``_saved`` follows them."""


class _Heads(t.List):  # type: ignore[type-arg]
    """A list of head indices where ``None`` stands for every head."""

    def validate(self, obj: Any, value: Any) -> Any:
        return super().validate(obj, [] if value is None else value)


class AttentionWidget(anywidget.AnyWidget):  # type: ignore[misc]
    """Interactive head, model and neuron views of a trace, or of a comparison of two.

    Every trait below is synced with the browser: set it from Python to move
    the view, read it to see what the user picked. Invalid values raise
    :class:`traitlets.TraitError` and leave the widget as it was.

    Parameters
    ----------
    trace
        The attention to show (from :func:`attnscope.capture`,
        :meth:`~attnscope.AttentionTrace.from_tensors`, ...), or an
        :class:`~attnscope.AttentionComparison` (from :func:`attnscope.compare`):
        then every view shows input A, input B or ``A − B`` over the aligned
        tokens, as :attr:`compare_side` says.
    views
        The views offered, as tabs in this order: a non-empty subset of
        ``("head", "model", "neuron", "image")``; by default all of them, the
        image view only for a trace with images. With one view there
        are no tabs. Fixed for the widget's life; sent as ``_meta["views"]``.
    scan
        A table of heads over many inputs to rank the model view by: the
        DataFrame of :func:`attnscope.scan` (each head's mean over the inputs,
        with its spread across them), or one row per head
        (:func:`attnscope.retrieval_scores`, ``needle_in_a_haystack(...).heads``).
        Each numeric column ``c`` becomes the statistic ``"scan:c"`` (see
        :attr:`scan_ranking`); ``rank_by`` starts on one that finds a kind of
        head (``retrieval``, ``induction``, ``prev`` ...; else the first). Its layers and
        heads must be the trace's.
    segments
        Rows of the head view as segments: ``"sentences"``, ``"turns"`` (a chat's
        turns) or the token positions where segments start, as the ``boundaries``
        of :func:`attnscope.segments`, which is computed once here. The head view
        then draws segment x segment lines (``mass``, per head) and a toggle
        switches back to tokens; the model view offers each head's receiver score
        (Thought Anchors) as the statistic ``"scan:receiver"``. See :attr:`segments`.
    view, stream, layer, heads, head, query, key, pair_filter, theme, compare_side,
    step, generated_only, rank_by, pseudo_heads, queries, words, hide_special, log_scale,
    segment_rows, value_weighted
        Initial trait values; see the traits. ``view`` defaults to the first
        of ``views`` and must be one of them, ``stream`` to the trace's first
        stream and ``heads`` to all heads.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> trace = AttentionTrace(["a", "b"], np.full((2, 4, 2, 2), 0.5, np.float32))
    >>> w = AttentionWidget(trace, layer=1, heads=[0, 2])
    >>> w.layer, w.heads
    (1, [0, 2])
    >>> w.heads = None  # all heads
    >>> w.heads
    [0, 1, 2, 3]
    >>> AttentionWidget(trace, views=("model", "head")).view
    'model'
    >>> from attnscope import compare
    >>> AttentionWidget(compare(trace, trace)).compare_side
    'diff'
    >>> w.rank_by, w.pseudo_heads = "entropy", ["rollout", "mean"]
    >>> w.pseudo_heads
    ['mean', 'rollout']
    """

    # As text, not as paths: anywidget would watch the files for hot reload and keep
    # every widget, and its trace, alive through the watcher (anywidget issue #929).
    # The module is a small loader that imports the bundle once per page (anywidget #613).
    _esm = widget_module()
    _css = static_text("widget.css")
    _bundle = t.Dict(read_only=True).tag(sync=True)
    """The front end's modules for this widget's views, which :attr:`_esm` imports; fixed.

    ``{file: deflate-raw base64 of its text}`` from ``attnscope/static/code/``: the
    widget's entry and the views it offers, each imported once per page after its
    SHA-256 matches the loader's, a view's when it is first shown.
    Type: dict[str, str]. Default: the modules of :attr:`views`.
    """

    @t.default("_bundle")
    def _bundle_of_views(self) -> dict[str, str]:
        units = view_units(self._views, comparison=self._compared is not None)
        return packed_code(code_texts("widget", units))

    _meta = t.Dict().tag(sync=True)
    """Everything small about the trace (``docs/protocol.md``, "_meta"); set once.

    Type: dict. Default: built from the trace.
    """
    _saved = t.Dict().tag(sync=True)
    """The current view's chunks as the widget was displayed, so saved widget state draws.

    Deflate-raw base64 text in the exported page's format, capped at
    :data:`~attnscope.display.snapshot.SAVED_STATE_BYTES`; the browser reads
    them before asking the kernel (``docs/protocol.md``, "Saved widget state").
    Type: dict. Default: ``{}``, set at each display.
    """
    view = t.Enum(VIEWS, default_value="head").tag(sync=True)
    """The view shown: ``"head"``, ``"model"`` or ``"neuron"``; one of :attr:`views`.

    Type: str. Default: the first of :attr:`views`.
    """
    stream = t.Unicode("self").tag(sync=True)
    """The stream shown: ``"self"``, or ``"encoder"``, ``"decoder"``, ``"cross"``.

    Changing it clamps ``layer``, ``heads``, ``head``, ``query`` and ``key`` to the new stream.
    Type: str. Default: the trace's first stream.
    """
    layer = t.Int(0).tag(sync=True)
    """Position of the shown layer in the stream (an index into ``_meta`` ``layers``).

    Type: int. Default: 0.
    """
    heads = _Heads(t.Int()).tag(sync=True)
    """Selected heads, sorted; set ``None`` or ``[]`` to select every head.

    Type: list[int]. Default: every head.
    """
    head = t.Int(0).tag(sync=True)
    """The single head the neuron view shows and the model view opens.

    Type: int. Default: 0.
    """
    query = t.Int(None, allow_none=True).tag(sync=True)
    """Selected (locked) query token, a row index, or None.

    Type: int | None. Default: None.
    """
    key = t.Int(None, allow_none=True).tag(sync=True)
    """Selected key token (column index), or None; highlighted by the neuron view.

    Type: int | None. Default: None.
    """
    pair_filter = t.Enum(PAIR_FILTERS, default_value="all").tag(sync=True)
    """``"all"``, or ``"AA"``, ``"AB"``, ``"BA"``, ``"BB"`` for pair inputs (needs segments).

    ``"AB"`` draws lines from queries in sentence A to keys in sentence B.
    Type: str. Default: ``"all"``.
    """
    theme = t.Enum(THEMES, default_value="auto").tag(sync=True)
    """``"auto"`` follows the notebook's theme; ``"light"`` or ``"dark"`` force one.

    Type: str. Default: ``"auto"``.
    """
    compare_side = t.Enum(COMPARE_SIDES, default_value=None, allow_none=True).tag(sync=True)
    """For a comparison: ``"a"`` or ``"b"`` shows that input, ``"diff"`` shows ``A − B``.

    A single trace has nothing to compare: there it stays None. On a
    comparison, None stands for ``"diff"``.
    Type: str | None. Default: ``"diff"`` for a comparison, None otherwise.
    """
    # -- a trace of a generation (capture(..., max_new_tokens=N)) ----------------------
    step = t.Int(None, allow_none=True).tag(sync=True)
    """The generation step shown: step ``s`` generated token ``s`` (0 the first, N-1 the last).

    Setting it moves ``query`` to the token whose attention chose that token (row
    ``trace.prompt_length + step - 1``: the prompt's last token for step 0), which sees
    only the keys up to itself; selecting another such query moves the step with it, and
    any other query clears it. Only for a trace of a generation.
    Type: int | None. Default: None.
    """
    generated_only = t.Bool(False).tag(sync=True)
    """The model view shows only the generated tokens' rows in each cell.

    Only for a trace of a generation. Type: bool. Default: False.
    """
    rank_by = t.Unicode(None, allow_none=True).tag(sync=True)
    """Model view: the statistic that badges each cell and orders each layer's heads, or None.

    One of ``attnscope.analysis.STATISTICS`` (``"entropy"``, ``"sink"``, ``"prev"``,
    ``"induction"``, ...; ``_meta["statistics"]`` lists them with their formulas).
    Each layer's heads are sorted strongest first; hovering a cell shows every statistic.
    Type: str | None. Default: None.
    """
    pseudo_heads = t.List(t.Unicode()).tag(sync=True)
    """Head view: pseudo-heads drawn beside the selected heads: ``"mean"`` (mean of the
    layer's heads) and ``"rollout"`` (attention rollout up to this layer; self-attention only).

    The stream's offer is ``_meta["streams"][stream]["pseudo_heads"]``; kept in that order.
    Type: list[str]. Default: ``[]``.
    """
    queries = t.List(t.Int()).tag(sync=True)
    """Head view: query tokens (row indices) whose attention is summed; shift-click adds one.

    With two or more, lines run from each and the key bars show their sum.
    ``[]`` shows the single :attr:`query`. Type: list[int]. Default: ``[]``.
    """
    words = t.Bool(False).tag(sync=True)
    """Head view: rows are words, not subword pieces (attention to a word is the sum over
    its pieces, from a word the mean over its pieces, as ``attnscope.analysis.merge_words``).

    :attr:`query` and :attr:`queries` keep token indices (a word's first piece), so they
    survive the toggle. Type: bool. Default: False.
    """
    hide_special = t.Bool(False).tag(sync=True)
    """Head view: hide the first token and every special token, and renormalise each
    query's row over the keys left (``w / (1 - hidden mass)``). For sink-dominated layers.

    Type: bool. Default: False.
    """
    log_scale = t.Bool(False).tag(sync=True)
    """Head view: line opacity and key bars on a log scale of three decades
    (``1 + log10(w) / 3``: 0.001 is invisible, 1 is full), so weak attention shows.
    With several heads shown, each line's opacity is raised to the smallest power
    (at most 16, said in the legend) that keeps the lines' ink under 60% of the
    panel, so the strongest links stand out instead of a solid wall.

    Type: bool. Default: False.
    """
    segment_rows = t.Bool(True).tag(sync=True)
    """Head view: rows are the widget's segments (``segments=``: sentences, turns, given
    positions; on a trace with images: each image one row, every other token its own,
    the "collapse images" box), or tokens (False). The head view's checkbox sets it.

    Type: bool. Default: True with ``segments=``; False for a trace's images (its rows
    start as tokens).
    """
    value_weighted = t.Bool(False).tag(sync=True)
    """Head and model views: each weight ``α_ij`` drawn as ``α_ij ‖f_h(x_j)‖`` renormalised
    per row (Kobayashi et al. 2020: where the head's output at i actually comes from), on
    streams whose trace holds value norms (``capture(..., value_norms=True)``); the views'
    "weight by value norm" box sets it, and other streams draw raw weights.

    Type: bool. Default: False.
    """

    def __init__(
        self,
        trace: AttentionTrace | AttentionComparison,
        *,
        views: Sequence[ViewName] | None = None,
        scan: Any = None,
        segments: Any = None,
        **options: Any,
    ) -> None:
        if not isinstance(trace, AttentionTrace | AttentionComparison):
            raise AttnscopeTypeError(
                f"AttentionWidget shows an AttentionTrace or an AttentionComparison, not "
                f"{type(trace).__name__}; for a model, module or tensors use "
                "attnscope.show_head_view(source, ...)."
            )
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise AttnscopeTypeError(
                f"AttentionWidget got unknown option(s) {unknown}; valid options are "
                f"{list(OPTIONS)}."
            )
        self._comparison = trace if isinstance(trace, AttentionComparison) else None
        self._compared = None if self._comparison is None else ComparisonChunks(self._comparison)
        # A comparison's views index the aligned tokens, which both inputs' aligned traces share.
        shown = trace if self._compared is None else self._compared.a
        assert isinstance(shown, AttentionTrace)
        imaged = shown if self._compared is None else None  # a comparison has no image view
        self._views = views_of(imaged) if views is None else check_views(views)
        check_image_view(self._views, imaged)
        self._trace = shown
        trace = shown
        if scan is not None and self._compared is not None:
            raise AttnscopeTypeError(
                "scan= ranks the heads of one trace, and this widget shows a comparison; "
                "show one input with AttentionWidget(trace, scan=df)."
            )
        if segments is not None and self._compared is not None:
            raise AttnscopeTypeError(
                "segments= splits one trace, and this widget shows a comparison; show one "
                "input with AttentionWidget(trace, segments='sentences')."
            )
        self._scan = scan
        self._segments: WidgetSegments | ImageRows | None = None
        collapsed: ImageRows | str | None = None  # the images as rows, or why not
        if segments is not None:
            self._segments = widget_segments(shown, segments, stream=options.get("stream"))
        elif self._compared is None:
            collapsed = image_rows(shown, options.get("stream"))
            self._segments = collapsed if isinstance(collapsed, ImageRows) else None
        scanned = None if scan is None else scan_ranking(scan, shown)
        received = (
            self._segments.ranking(shown) if isinstance(self._segments, WidgetSegments) else None
        )
        self._ranking = merged(scanned, received)
        self._cache = self._new_cache()
        # The starting stream follows the view opened (the neuron view needs q and k).
        state = default_selection(trace, options.get("view") or self._views[0])
        if scanned is not None:
            state["rank_by"] = scanned.first_ranked
        if self._compared is not None:
            state["compare_side"] = "diff"
        if isinstance(collapsed, ImageRows):
            state["segment_rows"] = False  # the images' rows are offered, tokens shown first
        state.update({k: v for k, v in options.items() if v is not None or k in ("query", "key")})
        if state["view"] not in self._views:
            raise t.TraitError(self._not_offered(state["view"]))
        if state["stream"] not in trace.streams:
            raise t.TraitError(_unknown_stream(state["stream"], trace))
        generation = generation_meta(trace)
        step = state.get("step")
        # A valid starting step sets the query too (an invalid one is refused by its check).
        if generation and options.get("query") is None and isinstance(step, int):
            state["query"] = generation["prompt_length"] + step - 1
            if not 0 <= step < generation["generated"]:
                state["query"] = None
        if not options.get("heads"):
            # Spelled out: a value equal to the trait default would skip validation.
            state["heads"] = list(range(trace.streams[state["stream"]].num_heads))
        # A widget's own entries (a scan's statistics, segments) join the typed _meta here.
        meta: dict[str, Any] = dict(
            build_meta(trace) if self._compared is None else self._compared.meta()
        )
        if self._ranking is not None:
            meta["statistics"] = [*meta["statistics"], *self._ranking.statistics]
        if self._segments is not None:
            meta["segments"] = self._segments.meta
        if isinstance(collapsed, str):
            meta["notes"] = [*meta["notes"], collapsed]
        unranked = self._segments.note if isinstance(self._segments, WidgetSegments) else None
        if unranked is not None:
            meta["notes"] = [*meta["notes"], unranked]
        super().__init__(_meta={**meta, "views": list(self._views)}, **state)
        self.on_msg(self._on_message)

    def close(self) -> None:
        """Close the widget: its views leave the page and its encoded chunks are freed now.

        The trace stays readable (:attr:`trace`), and nothing of attnscope's keeps
        the widget, nor does IPython's output history: once the caller drops it,
        it and its trace are freed. A widget shown by a cell is closed for you
        when that cell runs again (:mod:`attnscope.display.lifetime`).

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
        >>> _ = w.answer({"type": "request", "keys": ["thumbs:self"]})
        >>> w.close()
        >>> w.chunk_cache.nbytes
        0
        """
        self._cache = self._new_cache()
        compared = getattr(self, "_compared", None)  # absent when __init__ refused its input
        if compared is not None:
            compared._cache = ChunkCache()  # its encoded A, B and A - B chunks
        super().close()
        self.layout.close()  # DOMWidget's Layout is a widget with its own comm
        forget_in_history(self, kernel_shell())

    def _ipython_display_(self) -> None:
        # show_* already displayed this widget where it was called: the same cell's last
        # line (`w`) must not show it a second time. A later cell shows it again.
        if shown_this_cell(self):
            return
        from IPython.display import display

        bundle = self._repr_mimebundle_()
        if bundle is not None:
            data, metadata = bundle
            emptied = take_emptied_output()  # a capture's closed bar: take its place
            if emptied is not None:
                emptied.update(data, metadata=metadata, raw=True)
            else:
                display(data, metadata=metadata, raw=True)  # type: ignore[no-untyped-call]
            close_when_cell_reruns(self, kernel_shell())

    def __repr__(self) -> str:
        # The text a notebook shows where widgets cannot render (GitHub, nbconvert).
        return f"<AttentionWidget {self._meta.get('title', '')}: {self.view} view>"

    @property
    def trace(self) -> AttentionTrace:
        """The trace this widget shows; for a comparison, input A over the aligned tokens."""
        return self._trace

    @property
    def comparison(self) -> AttentionComparison | None:
        """The comparison this widget shows, or None for a single trace.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget, compare
        >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
        >>> AttentionWidget(t).comparison is None, AttentionWidget(compare(t, t)).comparison.b is t
        (True, True)
        """
        return self._comparison

    @property
    def compared_chunks(self) -> ComparisonChunks | None:
        """A comparison's chunks of A, B and A − B (None for a single trace)."""
        return self._compared

    @property
    def chunk_cache(self) -> ChunkCache:
        """The chunks this widget has encoded (for the browser, or for its snapshot)."""
        return self._cache

    def _new_cache(self) -> ChunkCache:
        ranking = getattr(self, "_ranking", None)  # None too when __init__ refused its input
        found = getattr(self, "_segments", None)
        if found is None:
            return ChunkCache() if ranking is None else RankedChunkCache(ranking)
        return RankedChunkCache(ranking, served={"segments": found.arrays})

    def _page_encode(self, trace: AttentionTrace, key: ChunkKey) -> list[NamedArray]:
        # What an exported page of this widget embeds (page_html looks for this): a scan's
        # statistics join the stats: chunk, as in the live widget, and segments= serves its
        # segments: chunks; nothing else is cached.
        if isinstance(self._cache, RankedChunkCache) and key.kind in ("stats", "segments"):
            return self._cache.encode(trace, key)
        return encode_chunk(trace, key)

    def _page_keys(self, views: Sequence[str]) -> list[str]:
        # The chunks of this widget's own a page holds besides the trace's (page_html looks
        # for this): with the head or model view, every layer's segments, the current first.
        if self._segments is None or not {"head", "model"} & set(views):
            return []
        layer = self.layer if self.stream == self._segments.stream else 0
        if isinstance(self._segments, ImageRows):  # offered, not asked for: a share of the page
            return self._segments.page_keys(layer, DEFAULT_MAX_BYTES // PAGE_SHARE)
        return self._segments.keys(layer)

    @property
    def segments(self) -> WidgetSegments | ImageRows | None:
        """The ``segments=`` this widget shows (head view rows, receiver ranking); None without.

        ``.found`` is :func:`attnscope.segments` of the trace, ``.meta`` what the
        browser reads (``_meta["segments"]``). Without ``segments=``, a trace with
        images gets :class:`~attnscope.display.image_rows.ImageRows` (each image one
        row; ``meta["by"] == "images"``), computed a layer at a time.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> t = AttentionTrace([f"w{i}." for i in range(9)], np.random.default_rng(0).dirichlet(
        ...     np.ones(9), (1, 2, 9)).astype(np.float32))
        >>> w = AttentionWidget(t, segments="sentences")
        >>> w.segments.meta["labels"][:2], w.scan_ranking.names
        (['w0.', 'w1.'], ['scan:receiver'])
        """
        return self._segments

    @property
    def scan(self) -> Any:
        """The ``scan=`` table this widget ranks by, as it was given; None without one."""
        return self._scan

    @property
    def scan_ranking(self) -> ScanRanking | None:
        """The statistics of the ``scan=`` table, as the model view ranks by them; None without.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> t = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
        >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
        ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
        >>> w = AttentionWidget(t, scan=df, view="model")
        >>> w.scan_ranking.names, w.rank_by
        (['scan:prev'], 'scan:prev')
        """
        return self._ranking

    def strongest_input(self, statistic: str | None = None) -> int:
        """The input of the ``scan=`` table where the selected head scores highest.

        The head is :attr:`layer` and :attr:`head`, which a click on a model-view
        cell sets; ``statistic`` defaults to :attr:`rank_by` (a ``"scan:..."`` name).
        Open that input with :meth:`open_strongest`.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> t = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
        >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
        ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
        >>> w = AttentionWidget(t, scan=df, view="model")
        >>> w.head = 1  # as a click on the cell of head 1 does
        >>> w.strongest_input()
        0
        """
        if self._ranking is None:
            raise AttnscopeError(
                "strongest_input needs a widget made with scan= (the DataFrame of "
                "attnscope.scan); this one ranks no inputs."
            )
        name = statistic or self.rank_by
        if name is None or name not in self._ranking.names:
            raise AttnscopeError(
                f"statistic={name!r} is not a statistic of this widget's scan; pass one of "
                f"{self._ranking.names} (or set rank_by to one)."
            )
        return self._ranking.strongest_input(name, self.layer, self.head)

    def looked_at(
        self, *, needle: tuple[int, int] | None = None, start: int | None = None
    ) -> pd.DataFrame:
        """Where the selected head looked at each generation step: its strongest key per step.

        :func:`attnscope.looked_at` of this widget's trace for :attr:`layer` and
        :attr:`head` (a click on a model-view cell sets both). ``needle`` and
        ``start`` default to those of the ``scan=`` table when it is a
        :func:`attnscope.retrieval_scores` DataFrame (its ``attrs``), so copies are marked.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget, retrieval_scores
        >>> tokens = ["x", "a", "b", "c", "a", "b", "c"]
        >>> weights = np.zeros((1, 1, 7, 7), np.float32)
        >>> weights[0, 0, np.arange(7), np.maximum(np.arange(7) - 2, 0)] = 1
        >>> trace = AttentionTrace(tokens, weights)
        >>> w = AttentionWidget(trace, scan=retrieval_scores(trace, needle=(1, 4), start=4))
        >>> w.looked_at()[["token", "key", "copy"]].values.tolist()
        [['a', 1, True], ['b', 2, True], ['c', 3, True]]
        """
        from attnscope.analysis.looked_at import looked_at

        attrs = getattr(self._scan, "attrs", {}) if self._scan is not None else {}
        found = attrs.get("needle") if needle is None else needle
        first = attrs.get("start") if start is None else start
        stream = self._stream()
        return looked_at(
            self._trace,
            layer=int(stream.layers[self.layer]),
            head=self.head,
            start=first,
            needle=None if found is None else (int(found[0]), int(found[1])),
            stream=self.stream,
        )

    def open_strongest(
        self, inputs: Sequence[Any], model: Any = None, **options: Any
    ) -> AttentionWidget:
        """Capture and show the input where the selected head is strongest, on that head.

        :func:`attnscope.open_strongest` of this widget's :attr:`scan`, for the head
        a click on a model-view cell selected (:attr:`layer`, :attr:`head`) and the
        statistic of :attr:`rank_by`; ``options`` go to it (``tokenizer``, ``display``,
        capture options).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> traces = [AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), p, np.float32))
        ...           for p in (0.5, 0.5)]
        >>> df = pd.DataFrame({"input": [0, 0, 1, 1], "layer": 0, "head": [0, 1, 0, 1],
        ...                    "prev": [0.2, 0.9, 0.6, 0.1]})
        >>> w = AttentionWidget(traces[0], scan=df, view="model")
        >>> opened = w.open_strongest(traces, display=False)
        >>> opened.view, opened.head, opened.trace is traces[1]
        ('head', 0, True)
        """
        self.strongest_input()  # refuses a widget without a scan, or a ranking by no scan column
        assert self._ranking is not None
        layer = int(self._trace.streams[self._ranking.stream].layers[self.layer])
        view = options.pop("view", "head")
        display = options.pop("display", True)
        trace, selection = strongest_trace(
            self._scan,
            inputs,
            model,
            layer=layer,
            head=self.head,
            statistic=str(self.rank_by),
            **options,
        )
        widget = AttentionWidget(trace, scan=self._scan, view=view, **selection)
        if display:
            display_where_called(widget)
        return widget

    @property
    def views(self) -> tuple[ViewName, ...]:
        """The views offered, in tab order (``_meta["views"]``); fixed at construction.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
        >>> AttentionWidget(t, views=["head"]).views
        ('head',)
        """
        return self._views

    def _not_offered(self, view: object) -> str:
        return (
            f"view={view!r} is not offered by this widget, whose views are "
            f"{list(self._views)}; pick one of those, or create the widget with views= "
            f"including {view!r}."
        )

    def _stream(self) -> AttentionStream:
        return self._trace.streams[self.stream]

    # -- validation: each runs with every trait already set, so order does not matter --
    @t.validate("view")
    def _check_view(self, proposal: t.Bunch) -> str:
        value = str(proposal["value"])
        if value not in self._views:
            raise t.TraitError(self._not_offered(value))
        return value

    @t.validate("stream")
    def _check_stream(self, proposal: t.Bunch) -> str:
        value = proposal["value"]
        if value not in self._trace.streams:
            raise t.TraitError(_unknown_stream(value, self._trace))
        return str(value)

    @t.validate("layer")
    def _check_layer(self, proposal: t.Bunch) -> int:
        value = int(proposal["value"])
        stream = self._stream()
        if not 0 <= value < stream.num_layers:
            raise t.TraitError(
                f"layer={value} is out of range: stream {self.stream!r} has "
                f"{stream.num_layers} layers, positions 0..{stream.num_layers - 1} (model "
                f"layers {list(stream.layers)}; position = index in that list)."
            )
        return value

    @t.validate("heads")
    def _check_heads(self, proposal: t.Bunch) -> list[int]:
        value = proposal["value"]
        count = self._stream().num_heads
        if not value:
            return list(range(count))
        bad = [h for h in value if not 0 <= int(h) < count]
        if bad:
            raise t.TraitError(
                f"heads {bad} are out of range: stream {self.stream!r} has {count} heads "
                f"(0..{count - 1}); pass None for all heads."
            )
        return sorted({int(h) for h in value})

    @t.validate("head")
    def _check_head(self, proposal: t.Bunch) -> int:
        value = int(proposal["value"])
        count = self._stream().num_heads
        if not 0 <= value < count:
            raise t.TraitError(
                f"head={value} is out of range: stream {self.stream!r} has {count} heads "
                f"(0..{count - 1})."
            )
        return value

    @t.validate("query")
    def _check_query(self, proposal: t.Bunch) -> int | None:
        return self._check_token(proposal["value"], "query", self._stream().q_len)

    @t.validate("key")
    def _check_key(self, proposal: t.Bunch) -> int | None:
        return self._check_token(proposal["value"], "key", self._stream().k_len)

    def _check_token(self, value: int | None, name: str, length: int) -> int | None:
        if value is None:
            return None
        if not 0 <= int(value) < length:
            raise t.TraitError(
                f"{name}={value} is out of range: stream {self.stream!r} has {length} "
                f"{name} positions (0..{length - 1}); use None for no selection."
            )
        return int(value)

    @t.validate("pair_filter")
    def _check_pair_filter(self, proposal: t.Bunch) -> str:
        value = str(proposal["value"])
        sides = {self._stream().query_side, self._stream().key_side}
        segmented = any(self._trace.tokens_for(s).segments is not None for s in sides)
        if value != "all" and not segmented:
            raise t.TraitError(
                f"pair_filter={value!r} needs a sentence-pair input, and this trace has no "
                "segments; pass sentence_b_start= or text_pair=, or keep pair_filter='all'."
            )
        return value

    @t.validate("compare_side")
    def _check_compare_side(self, proposal: t.Bunch) -> str | None:
        value = proposal["value"]
        if self._compared is None:
            if value is not None:
                raise t.TraitError(
                    f"compare_side={value!r} applies to comparisons, and this widget shows one "
                    "trace; compare two with AttentionWidget(attnscope.compare(trace_a, "
                    "trace_b)) or show_head_view(model, text, compare=other_text)."
                )
            return None
        return str(value)

    @t.observe("compare_side")
    def _none_compares_both(self, change: t.Bunch) -> None:
        # traitlets lets None past validation; on a comparison it stands for A - B.
        if change["new"] is None and self._compared is not None:
            self.compare_side = "diff"

    # -- generation: the step and the query move together ------------------------------
    def _generation(self) -> tuple[int, int] | None:
        """(prompt length, generated tokens) when the shown stream is a generation's."""
        found = self._meta.get("generation") if self._meta else generation_meta(self._trace)
        if not found or found["stream"] != self.stream:
            return None
        return int(found["prompt_length"]), int(found["generated"])

    @t.validate("step")
    def _check_step(self, proposal: t.Bunch) -> int | None:
        value = proposal["value"]
        if value is None:
            return None
        generation = self._generation()
        if generation is None:
            raise t.TraitError(
                f"step={value} applies to a trace of a generation, and this one (stream "
                f"{self.stream!r}) has none; capture one with attnscope.capture(model, prompt, "
                "max_new_tokens=N), or leave step=None."
            )
        if not 0 <= int(value) < generation[1]:
            raise t.TraitError(
                f"step={value} is out of range: {generation[1]} tokens were generated "
                f"(steps 0..{generation[1] - 1}); use None for no step."
            )
        return int(value)

    @t.validate("generated_only")
    def _check_generated_only(self, proposal: t.Bunch) -> bool:
        value = bool(proposal["value"])
        if value and self._generation() is None:
            raise t.TraitError(
                "generated_only=True shows the rows of generated tokens, and this trace has "
                "none; capture one with attnscope.capture(model, prompt, max_new_tokens=N)."
            )
        return value

    # Both read the traits' current values, not the change's: notifications held while
    # the widget is built arrive after every trait is set, some of them stale.
    @t.observe("step")
    def _query_follows_step(self, _change: t.Bunch) -> None:
        generation = self._generation()
        if self.step is not None and generation is not None:
            self.query = generation[0] + self.step - 1  # the row that chose the token

    @t.observe("query")
    def _step_follows_query(self, _change: t.Bunch) -> None:
        generation = self._generation()
        if self.step is None or generation is None:
            return
        step = None if self.query is None else self.query - generation[0] + 1
        self.step = step if step is not None and 0 <= step < generation[1] else None

    @t.validate("rank_by")
    def _check_rank_by(self, proposal: t.Bunch) -> str | None:
        value = proposal["value"]
        scanned = [] if self._ranking is None else self._ranking.names
        if value is not None and value not in STATISTICS and value not in scanned:
            raise t.TraitError(
                f"rank_by={value!r} is not a statistic; use None or one of "
                f"{[*STATISTICS, *scanned]} (attnscope.analysis.STATISTICS explains each"
                f"{'; scan:<column> are the scan= table' if scanned else ''})."
            )
        return None if value is None else str(value)

    @t.validate("pseudo_heads")
    def _check_pseudo_heads(self, proposal: t.Bunch) -> list[str]:
        offered = pseudo_heads(self._stream())
        value = list(proposal["value"])
        bad = [v for v in value if v not in offered]
        if bad:
            why = rollout_unavailable(self._stream()) if "rollout" in bad else None
            raise t.TraitError(
                f"pseudo_heads {bad} are not offered by stream {self.stream!r}; it offers "
                f"{offered}{f' ({why})' if why else ''}."
            )
        return [name for name in offered if name in value]

    @t.validate("queries")
    def _check_queries(self, proposal: t.Bunch) -> list[int]:
        length = self._stream().q_len
        value = list(proposal["value"])
        bad = [q for q in value if not 0 <= int(q) < length]
        if bad:
            raise t.TraitError(
                f"queries {bad} are out of range: stream {self.stream!r} has {length} query "
                f"positions (0..{length - 1}); use [] for the single query."
            )
        return sorted({int(q) for q in value})

    @t.observe("stream")
    def _clamp_to_stream(self, change: t.Bunch) -> None:
        # The first assignment, in __init__, comes from the default name: nothing to move.
        old_name = change["old"] if change["old"] in self._trace.streams else self.stream
        # One rule with the browser's (encode/stream_change.py, js/wire/stream_change.ts).
        shapes = [stream_shape(self._trace, n) for n in (old_name, self.stream)]
        clamped = clamp_to_stream({n: getattr(self, n) for n in CLAMPED}, *shapes)
        with self.hold_trait_notifications():
            for name, value in clamped.items():
                setattr(self, name, value)
            if self._generation() is None:  # the generation is another stream's
                self.step = None
                self.generated_only = False

    # -- what a notebook saves ---------------------------------------------------------
    @t.observe(*SAVED_FOLLOWS)
    def _saved_follows_python(self, change: t.Bunch) -> None:
        # A cell that changes the selection after the display (w.layer = 3) must leave saved
        # widget state that draws what it now shows; a change the browser made is applied
        # under ipywidgets' property lock and is not the kernel's to save.
        if self._saved and change["name"] not in getattr(self, "_property_lock", {}):
            self._saved = saved_chunks(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget's mime bundle, plus a static snapshot for viewers without a kernel.

        A live notebook renders the widget view mime type; nbconvert, GitHub
        and other kernel-less viewers fall back to ``text/html`` (the current
        view as a small self-contained page) or ``text/plain``
        (:mod:`attnscope.display.snapshot`).

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
        >>> data, metadata = w._repr_mimebundle_()
        >>> sorted(data)
        ['application/vnd.jupyter.widget-view+json', 'text/html', 'text/plain']
        """
        # anywidget answers (data, metadata), or None once the widget is closed.
        bundle: tuple[dict[str, Any], dict[str, Any]] | None = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        # Before the output exists: a notebook that stores widget state keeps this update.
        self._saved = saved_chunks(self)
        return {**data, **snapshot_bundle(self)}, metadata

    # -- chunk requests ----------------------------------------------------------------
    def _on_message(self, _widget: Any, content: Any, _buffers: Sequence[Any]) -> None:
        for reply, buffers in self.answer(content):
            self.send(reply, buffers)

    def answer(
        self, content: Any, *, max_bytes: int = MESSAGE_BYTES
    ) -> list[tuple[dict[str, Any], list[bytes]]]:
        """Answer one browser message with ``(content, buffers)`` pairs.

        A ``{"type": "request", "keys": [...]}`` message is answered with
        ``"chunks"`` messages of at most ``max_bytes`` of buffers each; other
        messages get no answer.

        Examples
        --------
        >>> import numpy as np
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
        >>> [(c["chunks"][0]["key"], len(b)) for c, b in w.answer(
        ...     {"type": "request", "keys": ["attn:self:0:0"]})]
        [('attn:self:0:0', 2)]
        """
        if not isinstance(content, dict) or content.get("type") != "request":
            return []
        keys = content.get("keys", [])
        encode: Callable[[object], list[NamedArray]] | None = None
        if self._compared is not None:
            encode = self._compared.encode
        elif isinstance(self._cache, RankedChunkCache):
            encode = partial(self._cache.encode_raw, self._trace)
        return list(
            reply_messages(self._trace, keys, max_bytes=max_bytes, cache=self._cache, encode=encode)
        )

    def save_html(
        self,
        path: str | Path,
        *,
        views: Sequence[ViewName] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        qk_dtype: str = "float16",
    ) -> Path:
        """Write this widget, as it is now, to one self-contained offline HTML file.

        See :func:`attnscope.save_html`; ``views=None`` keeps this widget's views.

        Examples
        --------
        >>> import numpy as np, os, tempfile
        >>> from attnscope import AttentionTrace, AttentionWidget
        >>> w = AttentionWidget(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
        >>> w.save_html(os.path.join(tempfile.mkdtemp(), "page.html")).suffix
        '.html'
        """
        return save_html(self, path, views=views, max_bytes=max_bytes, qk_dtype=qk_dtype)


def _unknown_stream(value: object, trace: AttentionTrace) -> str:
    return f"stream {value!r} is not in this trace; choose one of {list(trace.streams)}."
