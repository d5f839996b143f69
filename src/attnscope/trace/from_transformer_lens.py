"""A trace from a TransformerLens ``ActivationCache`` (``run_with_cache``), read by hook name.

Weights come from ``blocks.{i}.attn.hook_pattern``. The query and key
vectors come from ``hook_rot_q`` / ``hook_rot_k`` on rotary models (``hook_q``
and ``hook_k`` are taken before the rotation there) and ``hook_q`` /
``hook_k`` otherwise; the mask from ``hook_attn_scores`` (TransformerLens
fills hidden scores with the dtype's minimum); the scale from the model's
config. So the trace recomputes itself and the neuron view works.

TransformerLens is never imported here: the cache is read through its
mapping interface, so this module costs nothing to users without it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError, AttnscopeIndexError, AttnscopeTypeError
from attnscope.trace.parts import TraceParts
from attnscope.trace.stream import AttentionStream
from attnscope.trace.tokens import Tokens

_PATTERN = re.compile(r"^blocks\.(\d+)\.attn\.hook_pattern$")


def is_activation_cache(value: object) -> bool:
    """True for a TransformerLens ``ActivationCache`` (checked without importing it).

    Examples
    --------
    >>> is_activation_cache({"blocks.0.attn.hook_pattern": None}), is_activation_cache(())
    (False, False)
    """
    cls = type(value)
    return cls.__name__ == "ActivationCache" and cls.__module__.startswith("transformer_lens")


def parts_from_transformer_lens(
    cache: Any,
    tokens: Any,
    *,
    batch_index: int = 0,
    prettify_tokens: bool = True,
) -> TraceParts:
    """A trace's parts from an ActivationCache; see :meth:`AttentionTrace.from_transformer_lens`.

    Examples
    --------
    >>> parts_from_transformer_lens({}, ["a"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: from_transformer_lens takes the ActivationCache that ...
    """
    if not is_activation_cache(cache):
        raise AttnscopeTypeError(
            "from_transformer_lens takes the ActivationCache that TransformerLens' "
            f"`logits, cache = model.run_with_cache(tokens)` returns, not a {type(cache).__name__}."
        )
    names = list(cache.keys())
    layers = sorted(int(m.group(1)) for m in map(_PATTERN.match, names) if m)
    if not layers:
        raise AttnscopeError(
            "the ActivationCache holds no attention pattern (blocks.<i>.attn.hook_pattern); "
            "run model.run_with_cache(tokens) without a names_filter, or keep "
            "'hook_pattern' in it."
        )
    batched = bool(getattr(cache, "has_batch_dim", True))

    def get(layer: int, hook: str) -> npt.NDArray[np.float32] | None:
        name = f"blocks.{layer}.attn.{hook}"
        if name not in names:
            return None
        value = cache[name]
        if batched:
            if not 0 <= batch_index < value.shape[0]:
                raise AttnscopeIndexError(
                    f"batch_index={batch_index} but the cache holds {value.shape[0]} item(s)."
                )
            value = value[batch_index]
        return np.asarray(value.detach().float().cpu().numpy(), dtype=np.float32)

    attention = np.stack([_required(get(i, "hook_pattern")) for i in layers])
    labels = _token_strings(tokens, cache, batch_index)
    if len(labels) != attention.shape[-1]:
        raise AttnscopeError(
            f"the cache covers {attention.shape[-1]} positions but {len(labels)} tokens were "
            "given; pass one token per position (model.to_str_tokens(tokens))."
        )
    qk = _queries_and_keys(get, layers)
    scores = [get(i, "hook_attn_scores") for i in layers]
    mask = _mask(scores, attention) if qk is not None else None
    config = getattr(getattr(cache, "model", None), "cfg", None)
    scaling = None if qk is None else _scaling(config, qk[0].shape[-1])
    source = Tokens.from_strings(labels, prettify=prettify_tokens)
    stream = AttentionStream(
        attention,
        queries=None if qk is None else qk[0],
        keys=None if qk is None else qk[1],
        scaling=scaling,
        mask=mask,
        layers=tuple(layers),
        name="self",
    )
    return TraceParts(
        source,
        [stream],
        metadata={
            "source": "transformer_lens",
            "model_name": str(getattr(config, "model_name", "") or ""),
            "model_type": str(getattr(config, "architecture", "") or "transformer_lens"),
            "qk_hooks": "hook_rot_q/hook_rot_k" if _rotary(get, layers[0]) else "hook_q/hook_k",
        },
        notes=[]
        if qk is not None
        else [
            "neuron view unavailable: the cache holds no hook_q/hook_k (or hook_rot_q/"
            "hook_rot_k) for every captured layer."
        ],
    )


def _required(value: npt.NDArray[np.float32] | None) -> npt.NDArray[np.float32]:
    if value is None:  # the layer list comes from the hook_pattern names
        raise AssertionError("hook_pattern vanished from the cache")
    return value


def _rotary(get: Any, layer: int) -> bool:
    return get(layer, "hook_rot_q") is not None and get(layer, "hook_rot_k") is not None


def _queries_and_keys(
    get: Any, layers: Sequence[int]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]] | None:
    # hook_q/hook_k are (pos, heads, d_head); the trace wants (heads, pos, d_head).
    qs, ks = [], []
    for layer in layers:
        rotary = _rotary(get, layer)
        q = get(layer, "hook_rot_q" if rotary else "hook_q")
        k = get(layer, "hook_rot_k" if rotary else "hook_k")
        if q is None or k is None:
            return None
        qs.append(q.transpose(1, 0, 2))
        ks.append(k.transpose(1, 0, 2))
    return np.stack(qs), np.stack(ks)


def _mask(
    scores: Sequence[npt.NDArray[np.float32] | None], attention: npt.NDArray[np.float32]
) -> npt.NDArray[np.bool_]:
    # TransformerLens writes the dtype's minimum (or -inf) where a key is hidden.
    if all(s is not None for s in scores):
        stacked = np.stack([s for s in scores if s is not None])
        return np.asarray(~np.isfinite(stacked) | (stacked <= np.finfo(np.float32).min / 2))
    return np.asarray(attention == 0)


def _scaling(config: Any, head_dim: int) -> float:
    # TransformerLens divides scores by cfg.attn_scale (unset: sqrt(d_head)), or not at all.
    if config is not None and getattr(config, "use_attn_scale", True) is False:
        return 1.0
    divisor = float(getattr(config, "attn_scale", -1.0) or -1.0)
    return 1.0 / divisor if divisor > 0 else 1.0 / float(np.sqrt(head_dim))


def _token_strings(tokens: Any, cache: Any, batch_index: int) -> list[str]:
    if isinstance(tokens, str):
        raise AttnscopeTypeError(
            "tokens must be one string per position, not one string; use model.to_str_tokens(text)."
        )
    if hasattr(tokens, "shape") or (
        isinstance(tokens, Sequence) and tokens and not isinstance(tokens[0], str)
    ):
        model = getattr(cache, "model", None)
        if model is None or getattr(model, "tokenizer", None) is None:
            raise AttnscopeTypeError(
                "tokens are token ids and the cache's model has no tokenizer to name them; "
                "pass the strings (one per position) instead."
            )
        ids = np.asarray(tokens.detach().cpu() if hasattr(tokens, "detach") else tokens)
        row = ids[batch_index] if ids.ndim == 2 else ids
        return [str(t) for t in model.to_str_tokens(row.tolist())]
    return [str(t) for t in tokens]
