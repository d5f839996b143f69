"""A model the generic route cannot record falls back to attention weights, cleanly.

The model below routes its attention through ``ALL_ATTENTION_FUNCTIONS`` (so
transformers lets it switch implementation) but its file has no
``eager_attention_forward`` for the recorder to compute weights with, as in
remote code that names its eager function differently.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

import attnscope


class OddConfig(PretrainedConfig):
    model_type = "attnscope-odd"

    def __init__(self, hidden_size: int = 8, num_attention_heads: int = 2, **kwargs: Any):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.num_hidden_layers = 2
        super().__init__(**kwargs)


def plain_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float = 1.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    weights = torch.softmax(query @ key.transpose(-1, -2) * scaling, dim=-1)
    return (weights @ value).transpose(1, 2), weights


class OddAttention(nn.Module):
    def __init__(self, config: OddConfig) -> None:
        super().__init__()
        self.config = config
        self.heads = config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, length, size = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attend = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, plain_attention
        )
        out, weights = attend(self, q, k, v, None, scaling=q.shape[-1] ** -0.5)
        return out.reshape(batch, length, size), weights


class OddModel(PreTrainedModel):
    config_class = OddConfig
    _supports_sdpa = True
    _supports_attention_backend = True

    def __init__(self, config: OddConfig) -> None:
        super().__init__(config)
        self.embed = nn.Embedding(64, config.hidden_size)
        self.layers = nn.ModuleList(OddAttention(config) for _ in range(2))
        self.post_init()

    def forward(
        self, input_ids: torch.Tensor, output_attentions: bool = False, **kwargs: Any
    ) -> BaseModelOutput:
        x = self.embed(input_ids)
        attentions = []
        for layer in self.layers:
            x, weights = layer(x)
            attentions.append(weights)
        return BaseModelOutput(
            last_hidden_state=x, attentions=tuple(attentions) if output_attentions else None
        )


def test_falls_back_to_weights(minilm: tuple[Any, Any]) -> None:
    tokenizer = minilm[1]
    model = OddModel(OddConfig()).eval()
    model.embed = nn.Embedding(len(tokenizer), 8)
    before = model.config._attn_implementation
    trace = attnscope.capture(model, "The cat sat.", tokenizer=tokenizer)
    assert trace.metadata["route"] == "attention-only"
    assert not trace.stream.has_qk
    assert any("eager_attention_forward" in n for n in trace.notes)
    assert model.config._attn_implementation == before
    reference = copy.deepcopy(model)
    reference.set_attn_implementation("eager")
    with torch.inference_mode():
        expected = reference(
            **tokenizer("The cat sat.", return_tensors="pt"), output_attentions=True
        )
    got = np.stack([a[0].numpy() for a in expected.attentions])
    assert trace.stream.weights is not None
    assert trace.stream.weights.dtype == np.float16  # kept compactly: relative error <= 2**-11
    assert np.abs(got - trace.attention).max() <= 1e-3
