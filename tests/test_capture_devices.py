"""Dtypes and devices: half precision captures, unloaded weights and foreign tokenizers are
refused before the forward pass, and accelerate-dispatched models keep their hooks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import AttnscopeError
from capture_models import TEXT, bpe_tokenizer, tiny_model
from test_capture_restore import snapshot


def forward_calls(model: torch.nn.Module) -> list[int]:
    """A list that grows by one each time ``model`` runs (a pre-hook; remove it after)."""
    calls: list[int] = []
    model.register_forward_pre_hook(lambda *_: calls.append(1))
    return calls


@pytest.mark.parametrize("family", ["llama", "gpt2", "bert"])
def test_bfloat16_model_captures(family: str) -> None:
    tokenizer = bpe_tokenizer()
    model = tiny_model(family, len(tokenizer))
    full = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    half = model.to(torch.bfloat16)
    before = snapshot(half)
    trace = attnscope.capture(half, TEXT, tokenizer=tokenizer)
    assert snapshot(half) == before
    assert trace.attention.dtype == np.float32
    assert trace.metadata["dtype"] == "bfloat16"
    assert any("ran in bfloat16" in n for n in trace.notes)
    assert trace.stream.has_qk
    assert trace.check() < 0.05  # bf16 rounds the scores before softmax
    assert np.abs(trace.attention - full.attention).max() < 0.05


def test_model_on_meta_device_is_refused_before_running() -> None:
    tokenizer = bpe_tokenizer()
    with torch.device("meta"):
        model = tiny_model("gpt2", len(tokenizer))
    calls = forward_calls(model)
    with pytest.raises(AttnscopeError, match=r"on the meta device.*from_pretrained"):
        attnscope.capture(model, TEXT, tokenizer=tokenizer)
    assert calls == []


def test_token_ids_beyond_the_vocabulary_are_refused_before_running() -> None:
    tokenizer = bpe_tokenizer()
    model = tiny_model("gpt2", 50)
    calls = forward_calls(model)
    refused = r"id \d+, but GPT2Model has embeddings for ids 0\.\.49 only.*tokenizer="
    with pytest.raises(AttnscopeError, match=refused):
        attnscope.capture(model, TEXT, tokenizer=tokenizer)
    assert calls == []


def _hooks(model: torch.nn.Module) -> list[Any]:
    return [getattr(m, "_hf_hook", None) for m in model.modules()]


def test_disk_offloaded_model_captures_and_keeps_accelerate_hooks(tmp_path: Path) -> None:
    from transformers import AutoModel

    tokenizer = bpe_tokenizer()
    model = tiny_model("llama", len(tokenizer))
    plain = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    model.save_pretrained(tmp_path / "model")
    device_map = {
        "embed_tokens": "cpu",
        "rotary_emb": "cpu",
        "layers.0": "cpu",
        "layers.1": "disk",
        "norm": "cpu",
    }
    offloaded = AutoModel.from_pretrained(
        tmp_path / "model", device_map=device_map, offload_folder=tmp_path / "offload"
    )
    assert any(p.device.type == "meta" for p in offloaded.parameters())
    hooks = _hooks(offloaded)
    assert any(h is not None for h in hooks)
    before = snapshot(offloaded)
    trace = attnscope.capture(offloaded, TEXT, tokenizer=tokenizer)
    assert _hooks(offloaded) == hooks
    assert snapshot(offloaded) == before
    assert np.abs(trace.attention - plain.attention).max() <= 1e-6
    assert trace.check() <= 1e-5
    again = attnscope.capture(offloaded, TEXT, tokenizer=tokenizer)  # still runs after
    assert np.array_equal(again.attention, trace.attention)
