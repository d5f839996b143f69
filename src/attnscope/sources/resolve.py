"""The front door for sources: what the user passed, which options build its trace, the trace.

A *source* is one of:

- a Hugging Face model with ``text`` (``"model"``: captured with
  :func:`attnscope.capture`);
- a model name or local path (``"name"``: loaded, then captured);
- an :class:`~attnscope.MultiHeadAttention` or a list of them (``"module"``),
  with its input tensor as ``text`` and ``tokens=``;
- an :class:`~attnscope.AttentionTrace` (``"trace"``);
- raw attention (``"tensors"``): a tuple of per-layer ``(batch, heads, n, n)``
  tensors or one ``(layers, heads, n, n)`` array, with ``tokens=``;
- a TransformerLens ``ActivationCache`` (``"cache"``) with ``tokens=``.

The options each kind takes are read from its builder's signature
(:func:`source_options`), so a builder's new keyword is accepted here with no
second list to keep. The ``show_*`` helpers (:mod:`attnscope.show`) call
:func:`resolve_trace` and hand the options it passes on to the widget.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Collection, Mapping
from functools import cache
from typing import Any, Literal

from attnscope.errors import AttnscopeTypeError
from attnscope.sources.config_check import check_against_config
from attnscope.trace import AttentionTrace
from attnscope.trace.from_transformer_lens import is_activation_cache

SourceKind = Literal["trace", "module", "model", "name", "tensors", "cache"]

SOURCES_HELP = (
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
        f"cannot show attention from a {type(source).__name__}; pass {SOURCES_HELP}."
    )


def _is_mha(value: object) -> bool:
    # Only a module that has been imported can have produced an instance (and
    # importing it would import torch for every other kind of source).
    module = sys.modules.get("attnscope.nn.attention")
    mha = getattr(module, "MultiHeadAttention", None) if module else None
    return mha is not None and isinstance(value, mha)


@cache
def source_options(kind: SourceKind) -> tuple[str, ...]:
    """The keywords that build the trace of a ``kind`` source, read from its builder's signature.

    A model (or name) takes :func:`attnscope.capture`'s keywords; a module
    :meth:`AttentionTrace.from_module <attnscope.AttentionTrace.from_module>`'s
    ``tokens`` and the masks ``MultiHeadAttention.forward`` takes; raw
    tensors and a TransformerLens cache the keywords of
    :meth:`~attnscope.AttentionTrace.from_tensors` and
    :meth:`~attnscope.AttentionTrace.from_transformer_lens`.

    Examples
    --------
    >>> source_options("tensors")
    ('tokens', 'sentence_b_start', 'prettify_tokens', 'batch_index')
    >>> source_options("cache"), source_options("trace")
    (('tokens', 'batch_index', 'prettify_tokens'), ())
    """
    if kind == "trace":
        return ()
    if kind == "tensors":
        return _keywords(AttentionTrace.from_tensors, after=1)
    if kind == "cache":
        return _keywords(AttentionTrace.from_transformer_lens, after=1)
    if kind == "module":
        from attnscope.nn.attention import MultiHeadAttention
        from attnscope.trace.from_module import REFUSED_KWARGS

        masks = _keywords(MultiHeadAttention.forward, after=4)  # self, query, key, value
        kept = tuple(k for k in masks if k not in REFUSED_KWARGS)
        return (*_keywords(AttentionTrace.from_module, after=2), *kept)
    from attnscope.sources.hf.capture import capture

    return _keywords(capture, after=2)  # model, text


def _keywords(builder: Callable[..., Any], *, after: int) -> tuple[str, ...]:
    """Names of ``builder``'s parameters after the first ``after``, without ``*args``/``**kw``."""
    params = list(inspect.signature(builder).parameters.values())[after:]
    plain = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return tuple(p.name for p in params if p.kind not in plain)


def split_options(
    kind: SourceKind, options: Mapping[str, Any], passed_on: Collection[str] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split options into (trace-building, passed-on) options; refuse the rest before any work.

    ``passed_on`` names the options meant for whatever shows the trace (the
    widget's, for the ``show_*`` helpers).

    Examples
    --------
    >>> split_options("tensors", {"tokens": ["a"], "layer": 2}, passed_on=("layer",))
    ({'tokens': ['a']}, {'layer': 2})
    >>> split_options("trace", {"tokenizer": None})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: unknown or inapplicable option(s) ['tokenizer'] for a ...
    """
    allowed = source_options(kind)
    if kind in ("model", "name") and "max_new_tokens" in options:
        allowed = (*allowed, *_generate_options(options, passed_on))  # generation (issue 15)
    bad = sorted(k for k in options if k not in allowed and k not in passed_on)
    if bad:
        valid = [*sorted(allowed), *passed_on]
        raise AttnscopeTypeError(
            f"unknown or inapplicable option(s) {bad} for a {kind} source; valid options "
            f"are {valid}."
        )
    build = {k: v for k, v in options.items() if k in allowed}
    rest = {k: v for k, v in options.items() if k in passed_on}
    return build, rest


def _generate_options(options: Mapping[str, Any], passed_on: Collection[str]) -> tuple[str, ...]:
    """The options that are settings of ``model.generate`` (do_sample, temperature ...)."""
    from attnscope.sources.hf.generate import generate_option_names

    names = generate_option_names()
    return tuple(k for k in options if k in names and k not in passed_on)


def resolve_trace(
    source: Any, text: Any = None, *, passed_on: Collection[str] = (), **options: Any
) -> tuple[AttentionTrace, dict[str, Any]]:
    """Turn any source into a trace; return it with the options named in ``passed_on``.

    Every option is checked before any model runs (for a model, ``layer``,
    ``head`` and ``heads`` among the passed-on options against its config).

    Examples
    --------
    >>> import numpy as np
    >>> trace, rest = resolve_trace(
    ...     (np.full((1, 2, 2, 2), 0.5),), tokens=["a", "b"], layer=0, passed_on=("layer",)
    ... )
    >>> trace.attention.shape, rest
    ((1, 2, 2, 2), {'layer': 0})
    """
    kind = source_kind(source)
    build, rest = split_options(kind, options, passed_on)
    if kind in ("model", "name"):
        if text is None:
            raise AttnscopeTypeError(
                "a model needs the text to run on: show_head_view(model, 'The cat sat', ...)."
            )
        check_against_config(source, build, rest)
        return _capture(source, text, build), rest
    if kind == "module":
        if text is None or "tokens" not in build:
            raise AttnscopeTypeError(
                "a MultiHeadAttention needs its input and tokens: "
                "show_head_view(mha, x, tokens=[...]) with x of shape (1, seq, d_model)."
            )
        tokens = build.pop("tokens")
        return AttentionTrace.from_module(source, text, tokens, **build), rest
    if text is not None:
        raise AttnscopeTypeError(
            f"the second argument (text) only applies to models and modules, not to a "
            f"{kind} source; pass tokens= for raw attention."
        )
    if kind == "trace":
        return source, rest
    if kind == "cache":
        if "tokens" not in build:
            raise AttnscopeTypeError(
                "an ActivationCache needs its tokens: show_head_view(cache, "
                "tokens=model.to_str_tokens(text))."
            )
        return AttentionTrace.from_transformer_lens(source, **build), rest
    if "tokens" not in build:
        raise AttnscopeTypeError(
            "raw attention needs its tokens: show_head_view(attention, tokens=[...])."
        )
    return AttentionTrace.from_tensors(source, **build), rest


def _capture(source: Any, text: Any, options: dict[str, Any]) -> AttentionTrace:
    from attnscope.sources.hf.capture import capture

    # capture loads a name or path itself (with the head encoder-decoders need).
    return capture(source, text, **options)
