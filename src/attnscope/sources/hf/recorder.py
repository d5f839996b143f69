"""The generic route's recorder: an attention function that notes what it computes.

transformers 5.x models call ``ALL_ATTENTION_FUNCTIONS[config._attn_implementation]``
with q and k exactly as they are dot-producted (after RoPE and q/k norms; keys
before the grouped-query repeat). :class:`Recorder` is registered under a
fresh name, runs the model's own ``eager_attention_forward`` to get the
weights, and keeps q, k, scaling, mask, bias, softcap and sinks of each call.
Calls that were not asked for run the model's original implementation, so a
long input only pays eager memory for the layers being captured.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

AttentionFunction = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]


@dataclass
class AttentionCall:
    """What one call of the attention function saw (batch item 0 only).

    ``weights``/``query``/``key`` are None for calls that were not recorded.

    Examples
    --------
    >>> AttentionCall().weights is None
    True
    """

    weights: torch.Tensor | None = None
    weights_ptr: int = 0
    query: torch.Tensor | None = None
    key: torch.Tensor | None = None
    scaling: float = 1.0
    mask: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    softcap: float = 0.0
    sinks: torch.Tensor | None = None


class CannotRecordError(LookupError):
    """The generic route cannot record this model; capture falls back to weights only.

    Examples
    --------
    >>> issubclass(CannotRecordError, LookupError)
    True
    """


def eager_forward_for(module: torch.nn.Module) -> AttentionFunction:
    """The ``eager_attention_forward`` of the modeling file that defines ``module``.

    Examples
    --------
    >>> from transformers import BertConfig
    >>> from transformers.models.bert.modeling_bert import BertSelfAttention
    >>> module = BertSelfAttention(BertConfig(hidden_size=8, num_attention_heads=2))
    >>> eager_forward_for(module).__module__
    'transformers.models.bert.modeling_bert'
    """
    for cls in type(module).__mro__:
        found = getattr(sys.modules.get(cls.__module__), "eager_attention_forward", None)
        if callable(found):
            return found  # type: ignore[no-any-return]
    raise CannotRecordError(
        f"{type(module).__name__} (from {type(module).__module__}) has no "
        "eager_attention_forward to compute its weights with"
    )


def split_mask(
    mask: torch.Tensor | None, k_len: int
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Split a mask as eager attention receives it into (blocked, extra bias).

    An additive float mask holds a very negative number where a key is hidden
    and 0 elsewhere; any other finite value is a bias the model folded into
    its mask, and is returned as such so the recompute stays exact.

    Examples
    --------
    >>> import torch
    >>> blocked, bias = split_mask(torch.tensor([[[[0.0, -3.4e38]]]]), 2)
    >>> blocked.tolist(), bias
    ([[[[False, True]]]], None)
    """
    if mask is None:
        return None, None
    mask = mask[..., :k_len]
    if mask.dtype == torch.bool:  # sdpa convention: True = attend
        return ~mask, None
    blocked = mask <= torch.finfo(mask.dtype).min / 2
    rest = mask.masked_fill(blocked, 0.0)
    return blocked, (rest if bool(rest.any()) else None)


def _is_plain_causal(mask: torch.Tensor) -> bool:
    """True for an additive mask that hides exactly the future keys (no padding, window)."""
    if mask.dtype == torch.bool or mask.shape[0] != 1 or mask.shape[1] != 1:
        return False
    q_len, k_len = mask.shape[-2:]
    if q_len != k_len:
        return False
    blocked, folded = split_mask(mask, k_len)
    future = torch.ones(q_len, k_len, dtype=torch.bool, device=mask.device).triu(1)
    return folded is None and blocked is not None and torch.equal(blocked[0, 0], future)


class Recorder:
    """An attention function to register with ``transformers.AttentionInterface``.

    Parameters
    ----------
    keep
        Indices of the calls (in the order the model makes them) to record;
        None records every call.
    fallback
        Runs calls that are not recorded (the model's original implementation);
        None uses the model's eager function and drops its weights.

    Examples
    --------
    >>> rec = Recorder()
    >>> rec.calls
    []
    """

    def __init__(
        self, keep: frozenset[int] | None = None, fallback: AttentionFunction | None = None
    ) -> None:
        self.keep = keep
        self.fallback = fallback
        self.calls: list[AttentionCall] = []
        self._causal: dict[tuple[int, tuple[int, ...]], bool] = {}

    def _for_sdpa(self, mask: torch.Tensor | None) -> tuple[torch.Tensor | None, bool]:
        """The mask and ``is_causal`` flag for sdpa, as eager would apply ``mask``.

        A plain causal mask becomes ``is_causal=True`` with no mask: sdpa's fast
        kernels take that path, and a dense float mask costs them several times
        more at thousands of tokens. Eager reads no mask as "attend everywhere".
        """
        if mask is None:
            return None, False
        key = (mask.data_ptr(), tuple(mask.shape))
        if key not in self._causal:  # layers share one mask tensor: check it once
            self._causal[key] = _is_plain_causal(mask)
        return (None, True) if self._causal[key] else (mask, False)

    def __call__(
        self,
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        *args: Any,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Run one attention call, recording it when asked to."""
        index = len(self.calls)
        if self.keep is not None and index not in self.keep:
            self.calls.append(AttentionCall())
            special = kwargs.get("softcap") is not None or kwargs.get("s_aux") is not None
            if self.fallback is not None and not special and not args:
                mask, causal = self._for_sdpa(attention_mask)
                # eager ignores is_causal (the mask says it all), so ours replaces the model's
                rest = {k: v for k, v in kwargs.items() if k != "is_causal"}
                out, _ = self.fallback(module, query, key, value, mask, is_causal=causal, **rest)
                return out, None
            out, _ = eager_forward_for(module)(
                module, query, key, value, attention_mask, *args, **kwargs
            )
            return out, None
        out, weights = eager_forward_for(module)(
            module, query, key, value, attention_mask, *args, **kwargs
        )
        if weights is None:
            raise RuntimeError(
                f"{type(module).__name__}'s eager attention returned no weights; "
                "attnscope cannot capture this model's attention."
            )
        scaling = kwargs.get("scaling")
        if scaling is None:
            scaling = query.shape[-1] ** -0.5
        blocked, folded = split_mask(attention_mask, key.shape[-2])
        bias = kwargs.get("position_bias")
        if bias is not None:
            bias = bias[..., : key.shape[-2]]
        if folded is not None:
            bias = folded if bias is None else bias + folded
        sinks = kwargs.get("s_aux")
        softcap = kwargs.get("softcap")
        self.calls.append(
            AttentionCall(
                weights=weights[0],
                weights_ptr=weights.data_ptr(),
                query=query[0],
                key=key[0],
                scaling=float(scaling),
                mask=None if blocked is None else blocked[0],
                bias=None if bias is None else bias[0],
                softcap=float(softcap or 0.0),
                sinks=None if sinks is None else sinks.reshape(-1),
            )
        )
        return out, weights
