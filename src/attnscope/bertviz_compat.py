"""bertviz-compatible ``head_view`` and ``model_view``: switching is a change of import.

``from bertviz import head_view`` becomes ``from attnscope import head_view``;
the arguments are bertviz's. Two differences, both deliberate:

- ``html_action="view"`` displays the view where it is called, as bertviz
  does, and also *returns* the :class:`~attnscope.AttentionWidget` (bertviz
  returns None) for reading the selection; as the cell's last line it is not
  shown twice. The widget offers all three views (head, model, neuron) and
  opens on the one named.
- ``html_action="return"`` returns an ``IPython.display.HTML`` whose
  ``.data`` is one self-contained page, as bertviz's does, but without any
  CDN: it opens offline. Like bertviz's, the page holds only the view named,
  and only the data that view needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attnscope.encode.selection import ViewName
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace, Side, Tokens
from attnscope.trace.tensors import stack_layers

if TYPE_CHECKING:
    from IPython.display import HTML

    from attnscope.display.widget import AttentionWidget

TRACE_ARGS = (
    "attention",
    "tokens",
    "sentence_b_start",
    "prettify_tokens",
    "encoder_attention",
    "decoder_attention",
    "cross_attention",
    "encoder_tokens",
    "decoder_tokens",
    "include_layers",
)
"""The arguments both views pass on to :func:`bertviz_trace`."""
EMPTY_ATTENTION = (
    "attention is an empty tuple. Two usual causes: bertviz's `outputs[-1]` now picks "
    "`cross_attentions`, which is empty for encoder-only models in transformers 5 (use "
    "`outputs.attentions`); or the model runs with 'sdpa', which returns () for "
    "output_attentions=True (load it with attn_implementation='eager', or use "
    "attnscope.show_head_view(model, text), which captures attention itself)."
)
HEAD_VIEW_ARGS = (*TRACE_ARGS, "layer", "heads", "html_action")
MODEL_VIEW_ARGS = (*TRACE_ARGS, "display_mode", "include_heads", "html_action")


def head_view(  # noqa: PLR0917 - bertviz takes these positionally
    attention: Any = None,
    tokens: Sequence[str] | None = None,
    sentence_b_start: int | None = None,
    prettify_tokens: bool = True,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    encoder_attention: Any = None,
    decoder_attention: Any = None,
    cross_attention: Any = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    include_layers: Sequence[int] | None = None,
    html_action: str = "view",
    **unknown: Any,
) -> AttentionWidget | HTML:
    """Draw bertviz's ``head_view`` with attnscope: same arguments, no CDN.

    Parameters
    ----------
    attention
        Per-layer ``(batch, heads, n, n)`` tensors, as a model returns with
        ``output_attentions=True`` (load it with ``attn_implementation="eager"``).
    tokens
        One token per position, e.g. ``tokenizer.convert_ids_to_tokens(ids)``.
    sentence_b_start
        Index of the first token of sentence B, for pair inputs.
    prettify_tokens
        Show ``Ġ``/``▁``/``##`` tokens as readable text (raw tokens stay in tooltips).
    layer
        Model layer shown first (must be in ``include_layers``); default the first.
    heads
        Heads selected at first; default all.
    encoder_attention, decoder_attention, cross_attention, encoder_tokens, decoder_tokens
        Encoder-decoder models, instead of ``attention``/``tokens``.
    include_layers
        Model layers to keep; default all.
    html_action
        ``"view"``: display the widget here and return it; it offers all three
        views and opens on the head view; ``"return"``: return ``IPython.display.HTML`` holding a
        self-contained page in ``.data`` with the head view only (as bertviz's),
        so it embeds only the head view's data.

    Examples
    --------
    >>> import torch
    >>> from attnscope import head_view
    >>> attention = tuple(torch.full((1, 2, 3, 3), 1 / 3) for _ in range(4))
    >>> w = head_view(attention, ["[CLS]", "hi", "[SEP]"], layer=2, heads=[1])
    >>> w.layer, w.heads
    (2, [1])
    """
    given = dict(locals())
    _reject(unknown, HEAD_VIEW_ARGS, "head_view")
    _check_action(html_action)
    trace = bertviz_trace(**{name: given[name] for name in TRACE_ARGS})
    position = 0 if layer is None else _layer_position(trace, layer)
    options = {"layer": position, "heads": list(heads) if heads is not None else None}
    return _present(trace, "head", options, html_action)


def model_view(  # noqa: PLR0917 - bertviz takes these positionally
    attention: Any = None,
    tokens: Sequence[str] | None = None,
    sentence_b_start: int | None = None,
    prettify_tokens: bool = True,
    display_mode: str = "dark",
    encoder_attention: Any = None,
    decoder_attention: Any = None,
    cross_attention: Any = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    include_layers: Sequence[int] | None = None,
    include_heads: Sequence[int] | None = None,
    html_action: str = "view",
    **unknown: Any,
) -> AttentionWidget | HTML:
    """Draw bertviz's ``model_view`` with attnscope: same arguments, no CDN.

    Takes :func:`head_view`'s arguments, plus ``display_mode`` (``"dark"`` or
    ``"light"``, the widget's theme) and ``include_heads`` (as in bertviz, the
    grid's columns are those heads only, in that order).
    ``html_action="view"`` displays and returns the widget, with all three
    views, open on the model view; ``html_action="return"`` a page with the model view only.

    Examples
    --------
    >>> import torch
    >>> from attnscope import model_view
    >>> attention = tuple(torch.full((1, 2, 3, 3), 1 / 3) for _ in range(4))
    >>> w = model_view(attention, ["a", "b", "c"], include_layers=[1, 3], display_mode="light")
    >>> w.view, w.theme, w.trace.stream.layers
    ('model', 'light', (1, 3))
    >>> model_view(attention, ["a", "b", "c"], include_heads=[1]).trace.stream.num_heads
    1
    """
    given = dict(locals())
    _reject(unknown, MODEL_VIEW_ARGS, "model_view")
    _check_action(html_action)
    if display_mode not in ("dark", "light"):
        raise AttnscopeError(f"display_mode={display_mode!r}; use 'dark' or 'light'.")
    for name in ("attention", "encoder_attention", "decoder_attention", "cross_attention"):
        given[name] = _keep_heads(given[name], include_heads, name)
    trace = bertviz_trace(**{name: given[name] for name in TRACE_ARGS})
    return _present(trace, "model", {"theme": display_mode}, html_action)


def _keep_heads(attention: Any, include: Sequence[int] | None, name: str) -> Any:
    """``attention`` as ``(layers, heads, q, k)`` with only the ``include`` heads, in that order."""
    if attention is None or include is None:
        return attention
    stack = stack_layers(attention)
    keep = [int(h) for h in include]
    count = stack.shape[1]
    bad = [h for h in keep if not 0 <= h < count]
    if bad or not keep:
        raise AttnscopeError(
            f"include_heads={list(include)} must name heads 0..{count - 1} of {name} (and at "
            "least one); leave it out for every head."
        )
    return stack[:, keep]


def bertviz_trace(
    attention: Any,
    tokens: Sequence[str] | None,
    *,
    sentence_b_start: int | None = None,
    prettify_tokens: bool = True,
    encoder_attention: Any = None,
    decoder_attention: Any = None,
    cross_attention: Any = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    include_layers: Sequence[int] | None = None,
) -> AttentionTrace:
    """Build a trace from bertviz's arguments (self-attention, or encoder-decoder).

    Examples
    --------
    >>> import numpy as np
    >>> enc = (np.full((1, 2, 3, 3), 1 / 3),)
    >>> cross = (np.full((1, 2, 2, 3), 1 / 3),)
    >>> t = bertviz_trace(None, None, encoder_attention=enc, cross_attention=cross,
    ...                   encoder_tokens=["a", "b", "c"], decoder_tokens=["x", "y"])
    >>> list(t.streams)
    ['encoder', 'cross']
    """
    pairs = (encoder_attention, decoder_attention, cross_attention)
    if attention is not None:
        if any(a is not None for a in pairs):
            raise AttnscopeError(
                "pass either attention= (one stack) or encoder_/decoder_/cross_attention= "
                "(an encoder-decoder model), not both."
            )
        if tokens is None:
            raise AttnscopeError("attention= needs tokens=: one token string per position.")
        if isinstance(attention, tuple | list) and len(attention) == 0:
            raise AttnscopeError(EMPTY_ATTENTION)
        trace = AttentionTrace.from_tensors(
            attention, tokens, sentence_b_start=sentence_b_start, prettify_tokens=prettify_tokens
        )
        if include_layers is None:
            return trace
        stream = _keep_layers(trace.stream, "self", "source", "source", include_layers)
        return AttentionTrace.from_streams(trace.source, [stream], metadata=trace.metadata)
    if all(a is None for a in pairs):
        raise AttnscopeError(
            "no attention given: pass attention= and tokens=, or encoder_attention= / "
            "decoder_attention= / cross_attention= with encoder_tokens= / decoder_tokens=."
        )
    if sentence_b_start is not None:
        raise AttnscopeError(
            "sentence_b_start applies to attention=, not to encoder-decoder input."
        )
    source = _tokens(encoder_tokens, "encoder_tokens", prettify_tokens)
    target = (
        None
        if decoder_tokens is None
        else _tokens(decoder_tokens, "decoder_tokens", prettify_tokens)
    )
    specs: list[tuple[str, Any, Side, Side]] = [
        ("encoder", encoder_attention, "source", "source"),
        ("decoder", decoder_attention, "target", "target"),
        ("cross", cross_attention, "target", "source"),
    ]
    streams = []
    for name, att, rows, cols in specs:
        if att is None:
            continue
        if "target" in (rows, cols) and target is None:
            raise AttnscopeError(
                f"{name}_attention needs decoder_tokens=: one per decoder position."
            )
        stream = AttentionStream(stack_layers(att), name=name, query_side=rows, key_side=cols)
        streams.append(_keep_layers(stream, name, rows, cols, include_layers))
    return AttentionTrace.from_streams(
        source, streams, target=target, metadata={"source": "tensors"}
    )


def _tokens(raw: Sequence[str] | None, what: str, prettify: bool) -> Tokens:
    if raw is None:
        raise AttnscopeError(f"{what}= is needed: one token string per encoder position.")
    return Tokens.from_strings(raw, prettify=prettify)


def _keep_layers(
    stream: AttentionStream, name: str, rows: Side, cols: Side, include: Sequence[int] | None
) -> AttentionStream:
    if include is None:
        return stream
    keep = [int(i) for i in include]
    bad = [i for i in keep if not 0 <= i < stream.num_layers]
    if bad or not keep:
        raise AttnscopeError(
            f"include_layers={list(include)} must name layers 0..{stream.num_layers - 1} "
            f"of the {name} attention (and at least one)."
        )
    return stream.select_layers(keep)


def _layer_position(trace: AttentionTrace, layer: int) -> int:
    try:
        return trace.stream.layer_position(int(layer))
    except IndexError:
        raise AttnscopeError(
            f"layer {layer} is not in include_layers {list(trace.stream.layers)}; pick one of "
            "those, or leave layer out."
        ) from None


def _present(
    trace: AttentionTrace, view: ViewName, options: dict[str, Any], html_action: str
) -> AttentionWidget | HTML:
    from attnscope.display.where_called import display_where_called
    from attnscope.display.widget import AttentionWidget

    widget = AttentionWidget(trace, view=view, **options)
    if html_action == "view":
        display_where_called(widget)  # bertviz displays at the call, whatever follows it
        return widget
    from IPython.display import HTML

    from attnscope.display.page import page_html

    # bertviz's pages hold one view each; so does this one, and only that view's data.
    return HTML(page_html(widget, views=(view,)))  # type: ignore[no-untyped-call]


def _check_action(html_action: str) -> None:
    if html_action not in ("view", "return"):
        raise AttnscopeError(
            f"html_action={html_action!r}; use 'view' (displays and returns the widget) or "
            "'return' (returns IPython.display.HTML with a self-contained page in .data)."
        )


def _reject(unknown: dict[str, Any], valid: Sequence[str], name: str) -> None:
    if unknown:
        raise AttnscopeTypeError(
            f"{name}() got unknown argument(s) {sorted(unknown)}; it takes bertviz's "
            f"arguments: {list(valid)}."
        )
