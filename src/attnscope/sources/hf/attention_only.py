"""The last route: attention weights only, from ``output_attentions=True`` under eager.

For models whose scores are not ``q · k`` (DeBERTa-v2's disentangled
position terms, XLNet's two streams ...) or whose code neither goes through
``AttentionInterface`` nor has a per-family route. There is no q/k, so the
neuron view is unavailable and the trace cannot recompute itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attnscope.sources.hf.generic import FIELDS
from attnscope.sources.hf.recorder import AttentionCall

# Why a family's scores are not q·k, for the trace's notes.
WHY = {
    "deberta-v2": "DeBERTa-v2 scores include disentangled position terms, not q·k",
    "deberta": "DeBERTa scores include disentangled position terms, not q·k",
    "xlnet": "XLNet mixes content and query streams with relative position terms",
    "longformer": "Longformer combines sliding-window and global attention",
    "big_bird": "BigBird attends through random, window and global blocks",
    "reformer": "Reformer hashes keys into buckets (LSH attention)",
}


def capture_weights(
    model: Any, inputs: Mapping[str, torch.Tensor], layers: Sequence[int] | None
) -> dict[str, list[tuple[int, AttentionCall]]]:
    """Run ``model`` with ``output_attentions=True`` and keep the chosen layers' weights.

    The caller has put the model in eager mode (and restores it after).

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
    outputs = model(**inputs, output_attentions=True)
    streams: dict[str, list[tuple[int, AttentionCall]]] = {}
    for field, stream in FIELDS.items():
        for layer, weights in enumerate(getattr(outputs, field, None) or ()):
            if isinstance(weights, torch.Tensor) and (layers is None or layer in layers):
                streams.setdefault(stream, []).append((layer, AttentionCall(weights=weights[0])))
    if not streams:
        raise RuntimeError(
            f"{type(model).__name__} returned no attention weights with "
            "output_attentions=True under eager attention; attnscope cannot capture it."
        )
    return streams


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
