"""A model that lives elsewhere (NDIF, through nnsight): reduce attention there, bring back little.

:func:`reduce_remotely` runs one forward of an nnsight-wrapped model in
``wrapper.trace(..., remote=...)``: ``True`` ships it to the NDIF server
nnsight is configured for, ``"local"`` runs nnsight's local simulation of that
path (the request serialised, the user's own modules hidden, then run here).
Inside the trace, for every attention layer, the query and key states are read
where the model hands them to its attention function (after q/k norms and
RoPE, keys before the grouped-query repeat), its weights are rebuilt a block
of query rows at a time with the mask and scaling the model passed, and each
block is given to a *reducer* the caller made (per-head statistics, say). Only
what the reducers' ``result()`` returns comes back: never N x N weights, never
the layer's q and k.

The reducers and the code that feeds them travel with the request: attnscope
is not installed on an NDIF server, so its modules are registered with
cloudpickle to be serialised by value for the request (and unregistered after).
The server computes with torch alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.sources.hf.tokenize import encode_text
from attnscope.trace.tokens import Tokens

BLOCK_ROWS = 256
"""Query rows of one layer's weights rebuilt at a time on the server."""

UNSUPPORTED = ("softcap", "s_aux", "position_bias")
"""Attention-function keywords whose scores are not plain masked q.k (refused remotely)."""


def attention_modules(wrapper: Any) -> list[Any]:
    """The nnsight envoys of the model's attention modules, by layer index.

    An attention module is one with a ``layer_idx`` whose forward calls the
    model's attention function (``attention_interface(...)``).
    """
    found = []
    for envoy in wrapper.modules():
        module = getattr(envoy, "_module", None)
        if module is None or not isinstance(getattr(module, "layer_idx", None), int):
            continue
        if "Attention" not in type(module).__name__:
            continue
        found.append((module.layer_idx, envoy))
    if not found:
        raise AttnscopeTypeError(
            f"found no attention modules with a layer_idx in this nnsight "
            f"{type(wrapper).__name__}; remote statistics need a transformers model whose "
            "attention calls the attention interface (Llama, Qwen, Mistral, GPT-2 ...). "
            "Capture it locally instead."
        )
    return [envoy for _, envoy in sorted(found, key=lambda pair: pair[0])]


def interface_call(envoy: Any) -> Any:
    """The source operation where ``envoy``'s forward calls its attention function."""
    names = [n for n in envoy.source.names if n.startswith("attention_interface_")]
    if not names:
        raise AttnscopeTypeError(
            f"{type(envoy._module).__name__}.forward calls no attention_interface; remote "
            "statistics need transformers' attention interface. Capture it locally instead."
        )
    return getattr(envoy.source, names[-1])


def layer_weights(
    query: Any, key: Any, mask: Any, *, scaling: float, causal: bool, rows: slice
) -> Any:
    """Float32 weights ``(heads, rows, keys)`` of one batch row, rebuilt from q and k.

    ``softmax(q . repeat_kv(k) * scaling + mask)``; with no mask, a causal
    module masks later keys (sdpa's ``is_causal``). Runs on the server.
    """
    import torch

    q = query[0, :, rows].detach().float()
    k = key[0].detach().float()
    k = k.repeat_interleave(q.shape[0] // k.shape[0], dim=0)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scaling
    first = rows.start or 0
    if mask is None:
        if causal:
            later = (
                torch.arange(k.shape[1], device=q.device)[None, :]
                > (torch.arange(first, first + q.shape[1], device=q.device)[:, None])
            )
            scores = scores.masked_fill(later, float("-inf"))
    elif mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask[0, :, rows], float("-inf"))
    else:
        scores = scores + mask[0, :, rows].float()
    return torch.softmax(scores, dim=-1).cpu()


def reduce_layer(reducer: Any, call: Any, causal: bool) -> Any:
    """Inside a trace: feed one layer's weights to ``reducer``, a block of rows at a time."""
    args, kwargs = call.inputs
    query, key, mask = args[1], args[2], args[4] if len(args) > 4 else kwargs.get("attention_mask")
    for name in UNSUPPORTED:
        if kwargs.get(name) is not None:
            raise AttnscopeError(
                f"this model's attention adds {name}= to q.k; remote statistics rebuild plain "
                "masked q.k weights only. Capture the model locally instead."
            )
    length = int(query.shape[2])
    heads = list(range(int(query.shape[1])))
    for start in range(0, length, BLOCK_ROWS):
        rows = slice(start, min(start + BLOCK_ROWS, length))
        reducer.add(
            rows,
            heads,
            layer_weights(query, key, mask, scaling=kwargs["scaling"], causal=causal, rows=rows),
        )
    return reducer.result()


def reduce_remotely(
    wrapper: Any,
    text: str,
    reducers: Callable[[Tokens, int], Sequence[Any]],
    *,
    remote: bool | str = True,
    tokenizer: Any = None,
    layers: Sequence[int] | None = None,
    verbose: bool = False,
) -> tuple[Tokens, list[Any]]:
    """Run ``text`` through an nnsight model on its server; each layer's reducer result comes back.

    Parameters
    ----------
    wrapper
        An nnsight ``LanguageModel`` (or other nnsight wrapper of a
        transformers model, with ``tokenizer=``).
    text
        The input.
    reducers
        Called here with the input's tokens and the number of layers to reduce;
        returns one object per layer with ``add(rows, heads, weights)`` and
        ``result()``. They are sent with the request.
    remote
        ``True`` for NDIF (nnsight's configured host), ``"local"`` for
        nnsight's local simulation of the remote path, or a host URL.
    layers
        Layer indices to reduce; None for every layer.
    verbose
        nnsight's own report of the request (its payload in bytes).

    Returns
    -------
    tuple
        The input's tokens, and each reduced layer's ``result()``.
    """
    import nnsight  # type: ignore[import-untyped]
    from cloudpickle import (  # type: ignore[import-untyped]
        list_registry_pickle_by_value,
        unregister_pickle_by_value,
    )

    attnscope = sys.modules["attnscope"]  # its package, loaded with this module

    if remote and not callable(getattr(wrapper, "_remote_backend", None)):
        raise AttnscopeTypeError(
            f"remote={remote!r} needs an nnsight model that can run remotely, such as "
            f"nnsight.LanguageModel(name) (a {type(wrapper).__name__} runs only here and would "
            "ignore it); or leave remote out to capture the model here."
        )
    tokenizer = tokenizer if tokenizer is not None else getattr(wrapper, "tokenizer", None)
    if tokenizer is None:
        raise AttnscopeTypeError(
            "this nnsight wrapper has no tokenizer; pass tokenizer= (the model's own)."
        )
    encoded = encode_text(tokenizer, text)
    modules = attention_modules(wrapper)
    chosen = list(range(len(modules))) if layers is None else list(layers)
    bad = [layer for layer in chosen if not 0 <= layer < len(modules)]
    if bad:
        raise AttnscopeError(
            f"layers={list(chosen)} names layer {bad[0]}, but the model has {len(modules)} "
            "attention layers; name layers from 0 to that number minus one."
        )
    made = list(reducers(encoded.tokens, len(chosen)))
    causal = [bool(getattr(modules[layer]._module, "is_causal", False)) for layer in chosen]
    for layer in chosen:
        interface_call(modules[layer])  # refused here, before any request
    registered = attnscope.__name__ in list_registry_pickle_by_value()
    nnsight.register(attnscope)  # the server has no attnscope: ship its code with the request
    try:
        with wrapper.trace(encoded.inputs["input_ids"], remote=remote, verbose=verbose):
            results = nnsight.save(
                [
                    reduce_layer(made[i], interface_call(modules[layer]), causal[i])
                    for i, layer in enumerate(chosen)
                ]
            )
    finally:
        if not registered and attnscope.__name__ in list_registry_pickle_by_value():
            unregister_pickle_by_value(attnscope)
    return encoded.tokens, list(results)
