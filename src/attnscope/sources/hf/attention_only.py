"""The last route: attention weights only, from ``output_attentions=True`` under eager.

For models whose scores are not ``q · k`` (DeBERTa-v2's disentangled
position terms, XLNet's two streams ...) or whose code neither goes through
``AttentionInterface`` nor has a per-family route. There is no q/k, so the
neuron view is unavailable and the trace cannot recompute itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attnscope.errors import AttnscopeError
from attnscope.sources.hf.banded import BANDED, spread_band
from attnscope.sources.hf.generic import FIELDS, returned_call
from attnscope.sources.hf.recorder import AttentionCall

# Why a family's scores are not q·k, for the trace's notes.
WHY = {
    "deberta-v2": "DeBERTa-v2 scores include disentangled position terms, not q·k",
    "deberta": "DeBERTa scores include disentangled position terms, not q·k",
    "xlnet": "XLNet mixes content and query streams with relative position terms",
    "longformer": (
        "Longformer attends within a sliding window; each row is spread over the whole key "
        "axis, with the keys outside the window hidden"
    ),
    "led": (
        "LED's encoder attends within a sliding window; each row is spread over the whole "
        "key axis, with the keys outside the window hidden"
    ),
    "big_bird": "BigBird attends through random, window and global blocks",
    "reformer": "Reformer hashes keys into buckets (LSH attention)",
}


def _run(model: Any, inputs: Mapping[str, torch.Tensor]) -> Any:
    extra: dict[str, Any] = {"output_attentions": True}
    if "use_cache" in inspect.signature(model.forward).parameters:
        # Some decoders drop their causal mask when they may cache keys (FSMT).
        extra["use_cache"] = False
    return model(**inputs, **extra)


def _weights(model: Any, stream: str, weights: Any) -> AttentionCall:
    if not isinstance(weights, torch.Tensor):
        return returned_call(weights)
    weights = weights[0]
    banded = str(model.config.model_type) in BANDED and stream in ("self", "encoder")
    if banded and weights.ndim == 3 and weights.shape[-1] != weights.shape[-2]:
        spread, hidden = spread_band(weights, weights.shape[-2])
        return AttentionCall(weights=spread, mask=hidden)
    return AttentionCall(weights=weights)


def capture_weights(
    model: Any, inputs: Mapping[str, torch.Tensor], layers: Sequence[int] | None
) -> dict[str, list[tuple[int, AttentionCall]]]:
    """Run ``model`` with ``output_attentions=True`` and keep the chosen layers' weights.

    The caller has put the model in eager mode (and restores it after). A
    model that chooses its attention modules during a call (BigBird turns to
    full attention for short inputs, building new modules) runs once first,
    so the modules it returns weights from are those it settled on.

    Examples
    --------
    >>> import torch
    >>> from transformers import DebertaV2Config, DebertaV2Model
    >>> config = DebertaV2Config(num_hidden_layers=2, hidden_size=8, num_attention_heads=2,
    ...                          intermediate_size=8, vocab_size=16)
    >>> model = DebertaV2Model(config).eval()
    >>> with torch.inference_mode():
    ...     streams = capture_weights(model, {"input_ids": torch.tensor([[1, 2, 3]])}, [1])
    >>> [(layer, call.weights.shape, call.query) for layer, call in streams["self"]]
    [(1, torch.Size([2, 3, 3]), None)]
    """
    if callable(getattr(model, "set_attention_type", None)):
        model(**inputs)
    outputs = _run(model, inputs)
    streams: dict[str, list[tuple[int, AttentionCall]]] = {}
    for field, stream in FIELDS.items():
        for layer, weights in enumerate(getattr(outputs, field, None) or ()):
            if weights is not None and (layers is None or layer in layers):
                call = _weights(model, stream, weights)
                streams.setdefault(stream, []).append((layer, call))
    if streams:
        return streams
    implementation = getattr(model.config, "_attn_implementation", "eager")
    fix = (
        f" Its attention classes are fixed when it is built ({implementation!r} here): load it "
        "with attn_implementation='eager'."
        if implementation != "eager" and not type(model)._can_set_attn_implementation()
        else ""
    )
    raise AttnscopeError(
        f"{type(model).__name__} returned no attention weights with "
        "output_attentions=True, so there is nothing attnscope can show for it." + fix
    )


def why_no_qk(model_type: str) -> str:
    """A note saying why the neuron view is unavailable for ``model_type``.

    Examples
    --------
    >>> why_no_qk("deberta-v2")
    'neuron view unavailable: DeBERTa-v2 scores include disentangled position terms, not q·k.'
    """
    reason = WHY.get(
        model_type,
        f"{model_type}'s attention code predates transformers' AttentionInterface and "
        "has no attnscope route that records its q and k",
    )
    return f"neuron view unavailable: {reason}."
