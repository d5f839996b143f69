"""``show_head_view`` and friends: any source in, an :class:`AttentionWidget` out.

What the source is (a model, a model name, a module, a trace, raw tensors, a
TransformerLens cache) and which options build its trace is decided by
:mod:`attnscope.sources.resolve`, the one front door for sources; the widget's
starting selection (the neuron view's stream included) by
:func:`attnscope.encode.selection.default_selection`. This module adds
comparisons (an :class:`~attnscope.AttentionComparison`, from
:func:`attnscope.compare`, or ``compare=``) and the view each helper opens.

``compare=other_text`` (with a model) or ``compare=other_x`` (with a module)
captures a second input with the same options and shows the comparison: A, B
and ``A − B`` in every view.

In a notebook the helpers display the widget where they are called (in a
loop, a function, or followed by more lines, as bertviz's do) and return it for
reading the selection back; as the cell's last line it is still shown once.
``display=False`` only returns it (to place it in an ipywidgets layout).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from attnscope.analysis.compare import AttentionComparison
from attnscope.analysis.compare import compare as compare_traces
from attnscope.encode.selection import VIEWS, WIDGET_OPTIONS, ViewName, check_views
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.sources.resolve import resolve_trace, source_kind, split_options
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    from attnscope.display.widget import AttentionWidget


def _no_view_option(view: ViewName, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for ``show_<view>_view``, which sets ``view`` itself: refuse a second one."""
    if "view" not in options:
        return options
    value = options["view"]
    helped = [v for v in VIEWS if v != "image"]  # the views with a show_<view>_view helper
    if value in helped:
        fix = f"call show_{value}_view(...) instead"
    elif value == "image":
        fix = "open the image view with attnscope.AttentionWidget(trace, view='image')"
    else:
        fix = f"the views are {helped}, each with its show_<view>_view helper"
    raise AttnscopeTypeError(
        f"show_{view}_view() opens the {view} view and takes no view= (got view={value!r}); "
        f"{fix}, and views=(...) chooses the tabs offered."
    )


def show(
    view: ViewName, source: Any, text: Any = None, *, display: bool = True, **options: Any
) -> AttentionWidget:
    """Build the widget for ``view`` from any source (what the ``show_*`` helpers call).

    With ``display`` (and inside a Jupyter kernel) the widget is displayed here.

    Examples
    --------
    >>> import numpy as np
    >>> show("model", (np.full((1, 2, 2, 2), 0.5),), tokens=["a", "b"]).view
    'model'
    """
    from attnscope.display.where_called import display_where_called
    from attnscope.display.widget import AttentionWidget

    if view not in VIEWS:
        raise AttnscopeError(
            f"view={view!r} is not a view; use one of {list(VIEWS)} "
            "(or show_head_view / show_model_view / show_neuron_view)."
        )
    comparison = _comparison(source, text, options)
    if comparison is not None:
        _check_views_include(view, options)
        if view == "neuron":
            _check_has_qk(comparison.a)
        kind = "trace" if isinstance(source, AttentionComparison) else source_kind(source)
        _, widget_options = split_options(kind, options, WIDGET_OPTIONS)
        widget = AttentionWidget(comparison, view=view, **widget_options)
    else:
        widget = _show_trace(view, source, text, options)
    if display:
        display_where_called(widget)
    return widget


def _comparison(source: Any, text: Any, options: dict[str, Any]) -> AttentionComparison | None:
    """The comparison ``source`` is or ``compare=`` asks for (popped from ``options``), or None."""
    other = options.pop("compare", None)
    other_tokens = options.pop("compare_tokens", None)
    alignment = options.pop("alignment", None)
    if isinstance(source, AttentionComparison):
        if any(v is not None for v in (other, other_tokens, alignment, text)):
            raise AttnscopeTypeError(
                "an AttentionComparison is shown as it is: pass it alone "
                "(show_head_view(comparison, layer=...)), without text, compare=, "
                "compare_tokens= or alignment=."
            )
        return source
    if other is None:
        if other_tokens is not None or alignment is not None:
            raise AttnscopeTypeError(
                "compare_tokens= and alignment= apply to a comparison: pass compare= the "
                "second input too, e.g. show_head_view(model, text, compare=other_text)."
            )
        return None
    kind = source_kind(source)
    if kind not in ("model", "name", "module"):
        raise AttnscopeTypeError(
            f"compare= runs the source on a second input, so it needs a model (with text) or "
            f"a MultiHeadAttention (with x), not a {kind} source; to compare two traces, "
            "pass attnscope.compare(trace_a, trace_b)."
        )
    if other_tokens is not None and kind != "module":
        raise AttnscopeTypeError(
            "compare_tokens= labels a module's second input; a model's second text brings "
            "its own tokens: drop compare_tokens=."
        )
    trace_a, _ = resolve_trace(source, text, passed_on=WIDGET_OPTIONS, **options)
    options_b = dict(options)
    if other_tokens is not None:
        options_b["tokens"] = other_tokens
    trace_b, _ = resolve_trace(source, other, passed_on=WIDGET_OPTIONS, **options_b)
    return compare_traces(trace_a, trace_b, alignment=alignment)


def _check_views_include(view: ViewName, options: dict[str, Any]) -> None:
    if "views" in options:
        views = check_views(options["views"])
        if view not in views:
            raise AttnscopeError(
                f"views={options['views']!r} leaves out {view!r}, the view show_{view}_view "
                f"opens on; add {view!r} to views, or use show_{views[0]}_view."
            )


def _show_trace(view: ViewName, source: Any, text: Any, options: dict[str, Any]) -> AttentionWidget:
    from attnscope.display.widget import AttentionWidget

    _check_views_include(view, options)
    if view == "neuron" and source_kind(source) == "tensors":
        raise AttnscopeError(
            "raw attention tensors hold no query/key vectors, which the neuron view "
            "needs; pass the model itself (show_neuron_view(model, text)) or a "
            "MultiHeadAttention."
        )
    if view == "neuron" and isinstance(source, AttentionTrace):
        _check_has_qk(source)
    trace, widget_options = resolve_trace(source, text, passed_on=WIDGET_OPTIONS, **options)
    widget = AttentionWidget(trace, view=view, **widget_options)
    if source_kind(source) == "model" and set(trace.streams) == {"self"}:
        # The neuron view's why panel splits scores with the model the user holds anyway
        # (a wrapper that is not a torch module, nnsight's, is not split: no panel work).
        with contextlib.suppress(AttnscopeTypeError):
            widget.explain(source, tokenizer=options.get("tokenizer"))
    return widget


def _check_has_qk(trace: AttentionTrace) -> None:
    if not any(s.has_qk for s in trace.streams.values()):
        raise AttnscopeError(
            "this trace holds attention weights only (no query/key vectors), so the "
            "neuron view has nothing to show; capture it with attnscope.capture(model, "
            "text) or record it from a MultiHeadAttention."
        )


def show_head_view(
    source: Any, text: Any = None, *, display: bool = True, **options: Any
) -> AttentionWidget:
    """Show the head view: lines from each query token to the keys it attends to.

    Parameters
    ----------
    source
        A Hugging Face model, a model name or path, a
        :class:`~attnscope.MultiHeadAttention` (or a list of them), an
        :class:`~attnscope.AttentionTrace`, or raw per-layer attention tensors.
    text
        The text to run a model on, or its token ids (a tensor, list of ints or
        ``BatchEncoding``, as :func:`attnscope.capture` takes them); for a
        module, its input tensor ``(1, seq, d_model)``. Leave out for traces
        and raw tensors.
    **options
        Building the trace (the keywords of each source's builder, see
        :func:`attnscope.sources.resolve.source_options`) — for models:
        ``tokenizer``, ``text_pair``, ``target``, ``layers``, ``max_tokens``,
        ``images``, ``processor``, and to capture a generation
        ``max_new_tokens``, ``seed`` and any setting of ``model.generate``
        (``do_sample``, ``temperature`` ...; see :func:`attnscope.capture`);
        for modules: ``tokens``, ``attn_mask``, ``key_padding_mask``; for raw
        tensors: ``tokens``, ``sentence_b_start``, ``prettify_tokens``,
        ``batch_index``; for a TransformerLens cache: ``tokens``,
        ``batch_index``, ``prettify_tokens``. To compare two inputs:
        ``compare`` (the second text, or a module's second input tensor),
        ``compare_tokens`` (that tensor's tokens; default ``tokens``) and
        ``alignment`` (pairs ``(position in A, position in B)``; default
        position by position, or over the raw tokens when the lengths differ,
        see :func:`attnscope.compare`). For the widget:
        ``views`` (the views offered as tabs, default all three; must include
        this helper's view), ``stream``, ``layer``, ``heads``, ``head``,
        ``query``, ``key``, ``pair_filter``, ``theme``, ``compare_side`` (see
        :class:`~attnscope.AttentionWidget`). Anything else raises TypeError.
    display
        In a notebook, show the widget where this is called (the default; a
        last-line ``w`` in the same cell does not show it a second time).
        False only returns it, e.g. to place it in an ipywidgets layout.

    Returns
    -------
    AttentionWidget
        The widget, for reading and setting the selection.

    Examples
    --------
    >>> import torch
    >>> from attnscope import MultiHeadAttention, show_head_view
    >>> mha = MultiHeadAttention(16, 4, causal=True)
    >>> w = show_head_view(mha, torch.randn(1, 3, 16), tokens=["The", "cat", "sat"])
    >>> w.view, w.heads
    ('head', [0, 1, 2, 3])
    >>> show_head_view(mha, torch.randn(1, 3, 16), tokens=["a", "b", "c"], views=("head",)).views
    ('head',)
    >>> x = torch.randn(1, 3, 16)
    >>> y = x.clone(); y[0, 2] = torch.randn(16)
    >>> w = show_head_view(mha, x, tokens=["The", "cat", "sat"], compare=y,
    ...                    compare_tokens=["The", "cat", "ran"])
    >>> w.compare_side, w.comparison.labels()
    ('diff', ['The', 'cat', 'sat | ran'])
    """
    return show("head", source, text, display=display, **_no_view_option("head", options))


def show_model_view(
    source: Any, text: Any = None, *, display: bool = True, **options: Any
) -> AttentionWidget:
    """Show the model view: a grid of every layer's and head's attention.

    Takes the same arguments as :func:`show_head_view`.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import show_model_view
    >>> attention = (np.full((1, 2, 3, 3), 1 / 3),) * 4  # 4 layers of (batch, heads, q, k)
    >>> show_model_view(attention, tokens=["a", "b", "c"]).trace.attention.shape
    (4, 2, 3, 3)
    """
    return show("model", source, text, display=display, **_no_view_option("model", options))


def show_neuron_view(
    source: Any, text: Any = None, *, display: bool = True, **options: Any
) -> AttentionWidget:
    """Show the neuron view: how q, k, the scale and any bias give one attention row.

    Takes the same arguments as :func:`show_head_view`; the source must record
    query and key vectors (a model, a module, or a trace that has them), so
    raw attention tensors are refused.

    Examples
    --------
    >>> import torch
    >>> from attnscope import MultiHeadAttention, show_neuron_view
    >>> mha = MultiHeadAttention(16, 4)
    >>> w = show_neuron_view(mha, torch.randn(1, 3, 16), tokens=["a", "b", "c"], query=2)
    >>> w.view, w.query, w.trace.stream.head_dim
    ('neuron', 2, 4)
    """
    return show("neuron", source, text, display=display, **_no_view_option("neuron", options))
