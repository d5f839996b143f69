"""A 32-layer x 32-head model's default page: every layer of the head and model views."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaModel

import attnscope
from attnscope.display.page import page_html

TOKENS = 128


@pytest.fixture(scope="module")
def trace(minilm_path: Any) -> attnscope.AttentionTrace:
    config = LlamaConfig(
        hidden_size=128,  # head_dim 4: the 32 x 32 head count at a test's cost
        num_attention_heads=32,
        num_key_value_heads=32,
        num_hidden_layers=32,
        intermediate_size=64,
        vocab_size=31000,
        max_position_embeddings=TOKENS,
    )
    torch.manual_seed(0)
    model = LlamaModel(config).eval()
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    text = " ".join(["the cat sat on a mat while rivers ran"] * TOKENS)
    return attnscope.capture(model, text, tokenizer=tokenizer, max_tokens=TOKENS)


def _page(trace: attnscope.AttentionTrace, **kwargs: Any) -> tuple[dict[str, Any], list[str]]:
    page = page_html(trace, **kwargs)
    found = {
        name: json.loads(m)
        for name, m in re.findall(r'id="attnscope-(state|chunks)">(.*?)</script>', page, re.S)
    }
    return found["chunks"], found["state"]["_meta"]["notes"]


def test_every_layer_of_head_and_model_views_fits_and_the_rest_is_named(
    trace: attnscope.AttentionTrace,
) -> None:
    stream = trace.streams["self"]
    assert (stream.num_layers, stream.num_heads, stream.q_len) == (32, 32, TOKENS)
    budget = 4_000_000  # at 128 tokens, tighter than the default 50 MB is at 512
    chunks, notes = _page(trace, max_bytes=budget)
    tops = [k for k in chunks if k.startswith("top:")]
    assert len(tops) == 32
    assert "thumbs:self" in chunks
    assert sum(len(c["data"]) for c in chunks.values()) <= budget
    slots = {c["arrays"][0]["shape"][-1] for k, c in chunks.items() if k.startswith("top:")}
    assert len(slots) == 1
    assert slots.pop() < 64
    text = " ".join(notes)
    assert "strongest keys" in text
    assert "neuron view: q/k of" in text
    assert "views=('neuron',)" in text
    assert "max_bytes=" in text


def test_a_roomy_budget_keeps_every_key(trace: attnscope.AttentionTrace) -> None:
    chunks, notes = _page(trace, views=("head",), max_bytes=200_000_000)
    assert {c["arrays"][0]["shape"][-1] for c in chunks.values()} == {64}
    assert not any("strongest" in n or "left out" in n for n in notes)
