"""GPT-Neo: unscaled q·k (scaling 1.0), with local-window layers between global ones.

The module keeps its causal (or windowed) pattern in a boolean buffer
``bias`` and adds the model's additive mask on top; both become the trace's
mask, so local layers show their window.
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
        module.register_forward_pre_hook(keep_kwargs(notes, "attention_mask"), with_kwargs=True),
        module.q_proj.register_forward_hook(keep_output(notes, "query")),
        module.k_proj.register_forward_hook(keep_output(notes, "key")),
        module.register_forward_hook(keep_output(notes, "weights", 1)),
    ]


def _call(module: Any, notes: Notes) -> AttentionCall:
    query = module._split_heads(notes["query"], module.num_heads, module.head_dim)[0]
    key = module._split_heads(notes["key"], module.num_heads, module.head_dim)[0]
    q_len, k_len = query.shape[-2], key.shape[-2]
    blocked = ~module.bias[0, :, k_len - q_len : k_len, :k_len]
    extra, folded = split_mask(notes["attention_mask"], k_len)
    if extra is not None:
        blocked = blocked | extra[0]
    return AttentionCall(
        weights=notes["weights"][0],
        query=query.float(),
        key=key.float(),
        scaling=1.0,
        mask=blocked,
        bias=None if folded is None else folded[0],
    )


def capture_gpt_neo(
    model: torch.nn.Module, inputs: Mapping[str, torch.Tensor], layers: Sequence[int] | None
) -> dict[str, list[tuple[int, AttentionCall]]]:
    """Run a GPT-Neo model once, recording q, k, window mask and weights per layer.

    Examples
    --------
    >>> from transformers import GPTNeoConfig, GPTNeoModel
    >>> import torch
    >>> config = GPTNeoConfig(num_layers=2, num_heads=2, hidden_size=8, vocab_size=16,
    ...                       attention_types=[[["global", "local"], 1]], window_size=2,
    ...                       bos_token_id=1, eos_token_id=2)
    >>> model = GPTNeoModel(config).eval()
    >>> with torch.inference_mode():
    ...     calls = capture_gpt_neo(model, {"input_ids": torch.tensor([[1, 2, 3]])}, None)
    >>> calls["self"][1][1].mask[0].tolist()
    [[False, True, True], [False, False, True], [True, False, False]]
    """
    runs = run_tapped(model, "GPTNeoSelfAttention", inputs, layers, _taps)
    return {"self": [(layer, _call(module, notes)) for layer, module, notes in runs]}
