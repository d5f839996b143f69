"""Layers whose keys are compressed are left out at every length, read from the model's structure.

DeepSeek-V4's compressed sparse (CSA) and heavily compressed (HCA) layers append
one key per window of ``compress_rate`` tokens. Below one HCA window (128 tokens)
no compressed key exists yet, so that layer's key count equals the token count:
a rule based on counts would label its keys as tokens there. The rule reads the
attention module's compressor instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import AttnscopeError
from attnscope.sources.hf.key_structure import compressed_key_layers
from capture_models import bpe_tokenizer
from zoo_models import build

LAYER_TYPES = ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"]
TEXT = " ".join(["cat"] * 17)


def _deepseek_v4(layer_types: list[str]) -> Any:
    return build(
        "deepseek_v4",
        layer_types=layer_types,
        num_hidden_layers=len(layer_types),
        mlp_layer_types=["moe"] * len(layer_types),
    ).model


@pytest.fixture(scope="module")
def model() -> Any:
    return _deepseek_v4(LAYER_TYPES)


def _eager(model: Any, tokenizer: Any) -> tuple[torch.Tensor, ...]:
    ids = tokenizer(TEXT, return_tensors="pt")["input_ids"]
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(input_ids=ids, output_attentions=True)
    finally:
        model.set_attn_implementation(before)
    return tuple(out.attentions)


def test_counts_coincide_at_this_length(model: Any) -> None:
    # The case a count cannot see: the HCA layer's keys number exactly the tokens.
    eager = _eager(model, bpe_tokenizer(wrap=True))
    tokens = eager[0].shape[-1]
    assert eager[2].shape[-1] == tokens
    assert eager[1].shape[-1] != tokens


def test_compressing_layers_are_read_from_the_modules(model: Any) -> None:
    found = compressed_key_layers(model)
    assert set(found) == {("decoder", 1), ("decoder", 2)}
    assert "Compressor" in found[("decoder", 2)]


def test_capture_leaves_them_out_with_a_note_and_keeps_the_rest_exact(model: Any) -> None:
    tokenizer = bpe_tokenizer(wrap=True)
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    assert list(trace.streams) == ["self"]
    assert list(trace.streams["self"].layers) == [0]
    note = next(n for n in trace.notes if "compressed" in n)
    assert "layers 1, 2 not shown" in note
    assert "at any length" in note
    eager = _eager(model, tokenizer)[0][0].numpy()
    assert np.abs(trace.streams["self"].attention[0] - eager).max() < 1e-5
    assert trace.check() < 1e-5


def test_a_model_of_only_compressed_layers_is_refused_clearly() -> None:
    model = _deepseek_v4(["compressed_sparse_attention", "heavily_compressed_attention"])
    with pytest.raises(AttnscopeError, match="keys are compressed"):
        attnscope.capture(model, TEXT, tokenizer=bpe_tokenizer(wrap=True))


def test_any_attention_module_with_a_compression_rate_counts() -> None:
    class PooledAttention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.o_proj = torch.nn.Linear(2, 2)
            self.key_compress_ratio = 4
            self.layer_idx = 3

    class Plain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.o_proj = torch.nn.Linear(2, 2)
            self.compress_ratio = 1  # a rate of 1 merges nothing

    holder = torch.nn.ModuleDict({"a": PooledAttention(), "b": Plain()})
    assert compressed_key_layers(holder) == {
        ("decoder", 3): "PooledAttention.key_compress_ratio = 4"
    }
