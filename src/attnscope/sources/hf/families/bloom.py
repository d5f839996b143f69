"""BLOOM: ALiBi attention computed inside the module, with no AttentionInterface.

Scores are ``alibi * beta + (q · k) * inv_norm_factor`` (one ``baddbmm``), then
the additive causal mask; q and k come from splitting the fused
``query_key_value`` projection the way the module does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

from attnscope.sources.hf.families.taps import Notes, keep_kwargs, keep_output, run_tapped
from attnscope.sources.hf.recorder import AttentionCall, split_mask


def _taps(module: Any, notes: Notes) -> list[RemovableHandle]:
    return [
        module.register_forward_pre_hook(
            keep_kwargs(notes, "alibi", "attention_mask"), with_kwargs=True
        ),
        module.query_key_value.register_forward_hook(keep_output(notes, "fused")),
        module.register_forward_hook(keep_output(notes, "weights", 1)),
    ]


def _call(module: Any, notes: Notes) -> AttentionCall:
    query, key, _ = module._reshape(notes["fused"])
    heads = module.num_heads
    alibi = notes["alibi"].view(-1, heads, *notes["alibi"].shape[1:])[0] * module.beta
    blocked, folded = split_mask(notes["attention_mask"], key.shape[-2])
    return AttentionCall(
        weights=notes["weights"][0],
        query=query[0],
        key=key[0],
        scaling=float(module.inv_norm_factor),
        mask=None if blocked is None else blocked[0],
        bias=alibi if folded is None else alibi + folded[0],
    )


def capture_bloom(
    model: torch.nn.Module, inputs: Mapping[str, torch.Tensor], layers: Sequence[int] | None
) -> dict[str, list[tuple[int, AttentionCall]]]:
    """Run a BLOOM model once, recording q, k, ALiBi bias, mask and weights per layer.

    Examples
    --------
    >>> from transformers import BloomConfig, BloomModel
    >>> import torch
    >>> config = BloomConfig(n_layer=2, n_head=2, hidden_size=8, vocab_size=16,
    ...                      bos_token_id=1, eos_token_id=2)
    >>> model = BloomModel(config).eval()
    >>> with torch.inference_mode():
    ...     calls = capture_bloom(model, {"input_ids": torch.tensor([[1, 2, 3]])}, None)
    >>> [layer for layer, _ in calls["self"]]
    [0, 1]
    """
    runs = run_tapped(model, "BloomAttention", inputs, layers, _taps)
    return {"self": [(layer, _call(module, notes)) for layer, module, notes in runs]}
