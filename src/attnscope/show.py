"""``show_head_view`` and friends: any source in, an :class:`AttentionWidget` out.

A *source* is one of:

- a Hugging Face model with ``text`` (captured with :func:`attnscope.capture`);
- a model name or local path (loaded, then captured);
- an :class:`~attnscope.MultiHeadAttention` (or a list of them, run as layers)
  with the input tensor ``x`` as second argument and ``tokens=``;
- an :class:`~attnscope.AttentionTrace`;
- raw attention: a tuple of per-layer ``(batch, heads, n, n)`` tensors (what
  ``output_attentions=True`` returns) or one ``(layers, heads, n, n)`` array,
  with ``tokens=``;
- a TransformerLens ``ActivationCache`` with ``tokens=`` (read by
  :meth:`~attnscope.AttentionTrace.from_transformer_lens`);
- an :class:`~attnscope.AttentionComparison` (from :func:`attnscope.compare`).

``compare=other_text`` (with a model) or ``compare=other_x`` (with a module)
captures a second input with the same options and shows the comparison: A, B
and ``A − B`` in every view.

In a notebook the helpers display the widget where they are called (in a
loop, a function, or followed by more lines, as bertviz's do) and return it for
reading the selection back; as the cell's last line it is still shown once.
``display=False`` only returns it (to place it in an ipywidgets layout).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from attnscope.analysis.aligned import comparable_streams
from attnscope.analysis.compare import AttentionComparison
from attnscope.analysis.compare import compare as compare_traces
from attnscope.encode.selection import VIEWS, WIDGET_OPTIONS, ViewName, check_views
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionTrace
from attnscope.trace.from_transformer_lens import is_activation_cache

if TYPE_CHECKING:
    from attnscope.display.widget import AttentionWidget

SourceKind = Literal["trace", "module", "model", "name", "tensors", "cache"]

SOURCE_OPTIONS: Mapping[SourceKind, tuple[str, ...]] = {
    "trace": (),
    "module": ("tokens", "attn_mask", "key_padding_mask"),
    "model": ("tokenizer", "text_pair", "target", "layers", "max_tokens", "max_new_tokens", "seed"),
    "name": ("tokenizer", "text_pair", "target", "layers", "max_tokens", "max_new_tokens", "seed"),
    "tensors": ("tokens", "sentence_b_start", "prettify_tokens"),
    "cache": ("tokens", "prettify_tokens"),
}
"""Keywords that build the trace, by kind of source."""

_SOURCES_HELP = (
    "a Hugging Face model with text, a model name or path with text, a "
    "MultiHeadAttention with an input tensor and tokens=, an AttentionTrace, a "
    "tuple of per-layer attention tensors with tokens=, or a TransformerLens "
    "ActivationCache with tokens="
)


def source_kind(source: object) -> SourceKind:
    """Say which kind of source ``source`` is, or raise AttnscopeTypeError listing the kinds.

    Examples
    --------
    >>> import numpy as np
    >>> source_kind((np.full((1, 1, 2, 2), 0.5),)), source_kind("bert-base-uncased")
    ('tensors', 'name')
    """
    if isinstance(source, AttentionTrace):
        return "trace"
    if isinstance(source, str | os.PathLike):
        return "name"
    if is_activation_cache(source):
        return "cache"
    if _is_mha(source) or (
        isinstance(source, list | tuple) and source and all(_is_mha(m) for m in source)
    ):
        return "module"
    if hasattr(source, "config") and hasattr(source, "forward"):
        return "model"
    if isinstance(source, list | tuple) or hasattr(source, "shape"):
        return "tensors"
    raise AttnscopeTypeError(
        f"cannot show attention from a {type(source).__name__}; pass {_SOURCES_HELP}."
    )


def _is_mha(value: object) -> bool:
    mha = _loaded_mha_class()
    return mha is not None and isinstance(value, mha)


def _loaded_mha_class() -> type | None:
    # Only a module that has been imported can have produced an instance.
    import sys

    module = sys.modules.get("attnscope.nn.attention")
    return getattr(module, "MultiHeadAttention", None) if module else None


def split_options(
    kind: SourceKind, options: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split keyword options into (trace-building, widget) options; reject the rest.

    Examples
    --------
    >>> split_options("tensors", {"tokens": ["a"], "layer": 2})
    ({'tokens': ['a']}, {'layer': 2})
    >>> split_options("trace", {"tokenizer": None})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: unknown or inapplicable option(s) ['tokenizer'] for a ...
    """
    allowed = SOURCE_OPTIONS[kind]
    if kind in ("model", "name") and "max_new_tokens" in options:
        allowed = (*allowed, *_generate_options(options))  # generation (issue 15)
    bad = sorted(k for k in options if k not in allowed and k not in WIDGET_OPTIONS)
    if bad:
        valid = [*sorted(allowed), *WIDGET_OPTIONS]
        raise AttnscopeTypeError(
            f"unknown or inapplicable option(s) {bad} for a {kind} source; valid options "
            f"are {valid}."
        )
    build = {k: v for k, v in options.items() if k in allowed}
    widget = {k: v for k, v in options.items() if k in WIDGET_OPTIONS}
    return build, widget


def _generate_options(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The options that are settings of ``model.generate`` (do_sample, temperature ...)."""
    from attnscope.sources.hf.generate import generate_option_names

    names = generate_option_names()
    return tuple(k for k in options if k in names and k not in WIDGET_OPTIONS)


def resolve_trace(
    source: Any, text: Any = None, **options: Any
) -> tuple[AttentionTrace, dict[str, Any]]:
    """Turn any source into a trace; return it with the options meant for the widget.

    Every option is checked before any model runs.

    Examples
    --------
    >>> import numpy as np
    >>> trace, rest = resolve_trace((np.full((1, 2, 2, 2), 0.5),), tokens=["a", "b"], layer=0)
    >>> trace.attention.shape, rest
    ((1, 2, 2, 2), {'layer': 0})
    """
    kind = source_kind(source)
    build, widget = split_options(kind, options)
    if kind in ("model", "name"):
        if text is None:
            raise AttnscopeTypeError(
                "a model needs the text to run on: show_head_view(model, 'The cat sat', ...)."
            )
        _check_against_config(source, build, widget)
        return _capture(source, text, build), widget
    if kind == "module":
        if text is None or "tokens" not in build:
            raise AttnscopeTypeError(
                "a MultiHeadAttention needs its input and tokens: "
                "show_head_view(mha, x, tokens=[...]) with x of shape (1, seq, d_model)."
            )
        tokens = build.pop("tokens")
        return AttentionTrace.from_module(source, text, tokens, **build), widget
    if text is not None:
        raise AttnscopeTypeError(
            f"the second argument (text) only applies to models and modules, not to a "
            f"{kind} source; pass tokens= for raw attention."
        )
    if kind == "trace":
        return source, widget
    if kind == "cache":
        if "tokens" not in build:
            raise AttnscopeTypeError(
                "an ActivationCache needs its tokens: show_head_view(cache, "
                "tokens=model.to_str_tokens(text))."
            )
        return AttentionTrace.from_transformer_lens(source, **build), widget
    if "tokens" not in build:
        raise AttnscopeTypeError(
            "raw attention needs its tokens: show_head_view(attention, tokens=[...])."
        )
    return AttentionTrace.from_tensors(source, **build), widget


def _no_view_option(view: ViewName, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for ``show_<view>_view``, which sets ``view`` itself: refuse a second one."""
    if "view" not in options:
        return options
    value = options["view"]
    fix = (
        f"call show_{value}_view(...) instead"
        if value in VIEWS
        else f"the views are {list(VIEWS)}, each with its show_<view>_view helper"
    )
    raise AttnscopeTypeError(
        f"show_{view}_view() opens the {view} view and takes no view= (got view={value!r}); "
        f"{fix}, and views=(...) chooses the tabs offered."
    )


# Where configs keep their layer and head counts (GPT-2's n_layer, T5's num_decoder_layers ...).
_LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
               "decoder_layers", "num_decoder_layers")  # fmt: skip
_HEAD_KEYS = ("num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads",
              "decoder_attention_heads")  # fmt: skip


def _check_against_config(source: Any, build: Mapping[str, Any], widget: Mapping[str, Any]) -> None:
    """Refuse ``layer``, ``head`` or ``heads`` beyond every stream the model has, before capture.

    The counts come from the model's config (a loaded model, or a local
    folder's ``config.json``): the largest layer and head counts of any of its
    stacks, so nothing a stream allows is refused; the widget checks each
    stream exactly once the trace exists. With ``layers=`` the positions are
    that many. A source whose config cannot be read here is not checked.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(config={"num_hidden_layers": 6, "num_attention_heads": 12})
    >>> _check_against_config(model, {}, {"layer": 5, "head": 11})
    >>> _check_against_config(model, {}, {"layer": 9})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: layer=9 is out of range: the model has 6 layers, ...
    """
    config = _config_dict(source)
    if not config:
        return
    found = [config, *(v for v in config.values() if isinstance(v, dict))]
    layers = max((c[k] for c in found for k in _LAYER_KEYS if _is_count(c.get(k))), default=0)
    heads = max((c[k] for c in found for k in _HEAD_KEYS if _is_count(c.get(k))), default=0)
    chosen = build.get("layers")
    has = f"the model has {layers} layers"
    if isinstance(chosen, Sequence) and not isinstance(chosen, str) and layers:
        layers = len(chosen)
        has = f"layers={list(chosen)} keeps {layers}"
    layer = widget.get("layer")
    if layers and isinstance(layer, int) and not 0 <= layer < layers:
        raise AttnscopeError(
            f"layer={layer} is out of range: {has}, positions 0..{layers - 1} (layer is a "
            "position among the layers captured); pass a layer in that range."
        )
    asked = [widget.get("head"), *(widget.get("heads") or [])]
    bad = [h for h in asked if isinstance(h, int) and heads and not 0 <= h < heads]
    if bad:
        raise AttnscopeError(
            f"head(s) {bad} out of range: the model has {heads} attention heads (0..{heads - 1}); "
            "pass head= / heads= within that, or heads=None for all."
        )


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _config_dict(source: Any) -> dict[str, Any]:
    """The config of a loaded model, or of a local model folder; {} when there is none here."""
    config = getattr(source, "config", None)
    if config is not None:
        if isinstance(config, dict):
            return config
        to_dict = getattr(config, "to_dict", None)
        return dict(to_dict()) if callable(to_dict) else {}
    if isinstance(source, str | os.PathLike):
        path = Path(source) / "config.json"
        if path.is_file():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return {}
            return loaded if isinstance(loaded, dict) else {}
    return {}


def _capture(source: Any, text: Any, options: dict[str, Any]) -> AttentionTrace:
    from attnscope import capture

    # capture loads a name or path itself (with the head encoder-decoders need).
    trace: AttentionTrace = capture(source, text, **options)
    return trace


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
        _, widget_options = split_options(kind, options)
        if view == "neuron" and "stream" not in widget_options:
            shown = comparable_streams(comparison)
            with_qk = [name for name in shown if comparison.a.streams[name].has_qk]
            widget_options["stream"] = (with_qk or shown)[0]
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
    trace_a, _ = resolve_trace(source, text, **options)
    options_b = dict(options)
    if other_tokens is not None:
        options_b["tokens"] = other_tokens
    trace_b, _ = resolve_trace(source, other, **options_b)
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
    trace, widget_options = resolve_trace(source, text, **options)
    if view == "neuron" and "stream" not in widget_options:
        with_qk = [name for name, s in trace.streams.items() if s.has_qk]
        if with_qk:
            widget_options["stream"] = with_qk[0]
    return AttentionWidget(trace, view=view, **widget_options)


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
        The text to run a model on; for a module, its input tensor
        ``(1, seq, d_model)``. Leave out for traces and raw tensors.
    **options
        Building the trace — for models: ``tokenizer``, ``text_pair``,
        ``target``, ``layers``, ``max_tokens``, and to capture a generation
        ``max_new_tokens``, ``seed`` and any setting of ``model.generate``
        (``do_sample``, ``temperature`` ...; see :func:`attnscope.capture`);
        for modules: ``tokens``, ``attn_mask``, ``key_padding_mask``; for raw
        tensors: ``tokens``, ``sentence_b_start``, ``prettify_tokens``. To
        compare two inputs: ``compare`` (the second text, or a module's second
        input tensor), ``compare_tokens`` (that tensor's tokens; default
        ``tokens``) and ``alignment`` (pairs ``(position in A, position in
        B)``; default position by position, or over the raw tokens when the
        lengths differ, see :func:`attnscope.compare`). For the widget:
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
