"""A 32-layer x 32-head model's default page: every layer of the head and model views."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
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


def _page(
    trace: attnscope.AttentionTrace | attnscope.AttentionWidget, **kwargs: Any
) -> tuple[dict[str, Any], list[str]]:
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


@pytest.mark.parametrize("source", ["trace", "widget"])
def test_a_page_that_keeps_fewer_keys_asks_for_only_those(
    trace: attnscope.AttentionTrace, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    # Once the first layer's chunk shows that every layer would not fit, the page asks for
    # the kept keys alone (faster than cutting the widget's 64): the same keys and bytes.
    # A widget's page (its own encoder: segments=, a scan's statistics) asks the same way.
    from attnscope.encode import chunks as chunk_module
    from attnscope.encode.chunks import top_arrays

    asked: list[int | None] = []

    def spied(stream: Any, position: int, first_row: Any, top_k: int | None = None) -> Any:
        asked.append(top_k)
        return top_arrays(stream, position, first_row, top_k)

    monkeypatch.setattr(chunk_module, "top_arrays", spied)
    shown = trace if source == "trace" else attnscope.AttentionWidget(trace)
    chunks, _ = _page(shown, max_bytes=4_000_000)
    slots = {c["arrays"][0]["shape"][-1] for k, c in chunks.items() if k.startswith("top:")}
    assert len(slots) == 1
    kept = slots.pop()
    assert kept < 64
    # Every layer's chunk but the first, which measured them (and a widget's first view).
    assert asked.count(kept) == 31, asked
    assert set(asked) <= {kept, None}, asked
    stream = trace.streams["self"]
    for position in (1, 17, 31):
        fewer = dict(top_arrays(stream, position, None, kept))
        cut = dict(top_arrays(stream, position, None))
        # Near-equal scores may be ordered by score here and by float32 weight (lower key
        # first) where a tie among the 65 strongest sent the widget's row to its weights.
        same = (fewer["index"] == cut["index"][..., :kept]).all(axis=-1)
        assert same.mean() >= 0.99, same.mean()
        step = np.abs(fewer["weight"].astype(int) - cut["weight"][..., :kept].astype(int))
        assert step.max() <= 1
        # A sum of the same exponentials over a block cut one key wider: float32 rounding.
        np.testing.assert_allclose(fewer["rowmax"], cut["rowmax"], rtol=1e-6)
