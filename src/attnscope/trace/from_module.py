"""Record an :class:`~attnscope.AttentionTrace` from :class:`~attnscope.MultiHeadAttention` layers.

This is what :meth:`AttentionTrace.from_module` runs; it returns the trace's
:class:`~attnscope.trace.parts.TraceParts`. The modules are run in
eval mode (so dropout does not act on the weights the trace records) under
``torch.no_grad``, and each module's training mode is put back afterwards,
also when the forward pass raises.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.nn.attention import MultiHeadAttention, MultiHeadAttentionTrace
from attnscope.trace.labels import TokenKind, guess_kinds
from attnscope.trace.parts import TraceParts
from attnscope.trace.stream import AttentionStream
from attnscope.trace.tokens import Tokens

SOURCE = "attnscope.MultiHeadAttention"
REFUSED_KWARGS = ("key", "value", "need_trace")


def parts_from_modules(
    modules: MultiHeadAttention | Sequence[MultiHeadAttention],
    x: Tensor,
    tokens: Sequence[str] | Tokens,
    **forward_kwargs: Any,
) -> TraceParts:
    """Run one module, or several stacked as layers, on ``x`` and record batch item 0.

    Parameters
    ----------
    modules
        One :class:`~attnscope.MultiHeadAttention`, or a sequence of them run
        as layers: each is fed the previous one's output. All must have the
        same number of heads and head size.
    x
        ``(batch, seq, d_model)`` input of the first module.
    tokens
        One label per position of ``x`` (or a :class:`~attnscope.Tokens`).
        Without explicit token kinds, keys hidden by ``key_padding_mask`` in
        batch item 0 are marked as padding.
    **forward_kwargs
        ``attn_mask`` and ``key_padding_mask``, passed to every module. Bool
        masks become the trace's ``mask``; an additive float mask's ``-inf``
        entries join the mask and its finite part becomes ``bias``.

    Returns
    -------
    TraceParts
        One ``"self"`` stream with attention ``(layers, heads, L, L)``,
        queries ``(layers, heads, L, d)``, keys ``(layers, kv_heads, L, d)``,
        scaling per layer, and mask/bias when there were any.

    Examples
    --------
    >>> import torch
    >>> mha = MultiHeadAttention(8, 2, num_kv_heads=1, causal=True)
    >>> parts = parts_from_modules(mha, torch.randn(1, 3, 8), ["a", "b", "c"])
    >>> s = parts.streams["self"]
    >>> s.keys.shape, s.mask.shape, parts.metadata["source"]
    ((1, 1, 3, 4), (1, 1, 3, 3), 'attnscope.MultiHeadAttention')
    """
    layers = _as_layers(modules)
    _check_call(layers, x, tokens, forward_kwargs)
    with _eval_mode(layers), torch.no_grad():
        recorded: list[MultiHeadAttentionTrace] = []
        hidden = x
        for module in layers:
            hidden, step = module(hidden, need_trace=True, **forward_kwargs)
            recorded.append(step)
    item = [_first_item(step) for step in recorded]
    labels = (
        tokens
        if isinstance(tokens, Tokens)
        else Tokens(tokens, kinds=_kinds(tokens, forward_kwargs.get("key_padding_mask")))
    )
    stream = AttentionStream(
        np.stack([it["weights"] for it in item]),
        queries=np.stack([it["q"] for it in item]),
        keys=np.stack([it["k"] for it in item]),
        scaling=np.array([step.scaling for step in recorded], dtype=np.float32),
        mask=_stack_optional([it["mask"] for it in item]),
        bias=_stack_optional([it["bias"] for it in item]),
        name="self",
    )
    return TraceParts(labels, [stream], metadata={"source": SOURCE})


def _as_layers(
    modules: MultiHeadAttention | Sequence[MultiHeadAttention],
) -> list[MultiHeadAttention]:
    layers = [modules] if isinstance(modules, MultiHeadAttention) else list(modules)
    if not layers:
        raise AttnscopeError("pass at least one MultiHeadAttention module.")
    for i, module in enumerate(layers):
        if not isinstance(module, MultiHeadAttention):
            raise AttnscopeTypeError(
                f"modules[{i}] is a {type(module).__name__}; from_module records "
                "attnscope.MultiHeadAttention only (use attnscope.capture for other models)."
            )
    shapes = {(m.num_heads, m.num_kv_heads, m.head_dim) for m in layers}
    if len(shapes) != 1:
        raise AttnscopeError(
            f"the layers differ in (num_heads, num_kv_heads, head_dim): {sorted(shapes)}; "
            "a trace stacks layers of one shape."
        )
    return layers


def _check_call(
    layers: list[MultiHeadAttention],
    x: Tensor,
    tokens: Sequence[str] | Tokens,
    forward_kwargs: dict[str, Any],
) -> None:
    refused = sorted(set(forward_kwargs) & set(REFUSED_KWARGS))
    if refused:
        raise AttnscopeTypeError(
            f"from_module records self-attention and sets need_trace itself; do not pass {refused}."
        )
    if not isinstance(x, Tensor) or x.dim() != 3:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise AttnscopeError(
            f"x must be a (batch, seq, d_model) tensor; got {shape}. Add a batch axis with x[None]."
        )
    if len(tokens) != x.shape[1]:
        raise AttnscopeError(
            f"{len(tokens)} tokens were given for an input of {x.shape[1]} positions; "
            "pass one token per position."
        )
    for i, module in enumerate(layers):
        if module.d_model != x.shape[-1] or module.kdim != module.d_model:
            raise AttnscopeError(
                f"layer {i} takes d_model={module.d_model} (kdim={module.kdim}) but the "
                f"input has {x.shape[-1]} features; stacked self-attention layers need "
                "d_model == kdim == vdim == the input's width."
            )
        if module.vdim != module.d_model:
            raise AttnscopeError(
                f"layer {i} has vdim={module.vdim} != d_model={module.d_model}; "
                "self-attention feeds the same input as query, key and value."
            )


@contextmanager
def _eval_mode(layers: list[MultiHeadAttention]) -> Iterator[None]:
    was_training = [m.training for m in layers]
    try:
        for m in layers:
            m.eval()
        yield
    finally:
        for m, mode in zip(layers, was_training, strict=True):
            m.train(mode)


def _first_item(step: MultiHeadAttentionTrace) -> dict[str, Any]:
    """Batch item 0 of one layer's trace as numpy; mask and bias keep a size-1 head axis."""

    def first(t: Tensor) -> Any:
        return t[0].detach().float().cpu().numpy()

    mask = step.mask[0].cpu().numpy()
    return {
        "weights": first(step.weights),
        "q": first(step.q),
        "k": first(step.k),
        "mask": mask if mask.any() else None,
        "bias": None if step.bias is None else first(step.bias),
    }


def _stack_optional(per_layer: list[Any]) -> Any:
    """Stack per-layer (heads or 1, L, L) arrays; None when every layer has None."""
    if all(a is None for a in per_layer):
        return None
    present = [a for a in per_layer if a is not None]
    heads = max(a.shape[0] for a in present)
    shape = (heads, *present[0].shape[1:])
    fill = np.zeros(shape, dtype=present[0].dtype)
    full = [fill if a is None else np.broadcast_to(a, shape) for a in per_layer]
    if all(np.array_equal(full[0], a) for a in full[1:]):
        return full[0][None]
    return np.stack(full)


def _kinds(tokens: Sequence[str], key_padding_mask: Tensor | None) -> list[TokenKind]:
    kinds = guess_kinds(tokens)
    if key_padding_mask is None:
        return kinds
    padded = key_padding_mask[0]
    hidden = padded if padded.dtype == torch.bool else torch.isneginf(padded)
    return ["padding" if bool(h) else kind for kind, h in zip(kinds, hidden, strict=True)]
