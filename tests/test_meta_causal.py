"""``_meta.streams[s].causal``: no query sees a later key, read from the stream's mask rule.

The views open a causal stream on its last ordinary query (js/tokens.ts ``defaultQuery``), so
the field must be true exactly where the model hid every later key: causal language models
(GPT-2, Llama, a sliding window, a generation), the decoder's self-attention; false for a
bidirectional encoder, cross-attention and weights passed in with no mask rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope import AttentionStream, AttentionTrace, MultiHeadAttention
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.meta import build_meta, sees_no_later_keys
from capture_models import TARGET, TEXT, tiny_model, tokenizer_for


def causal_of(trace: AttentionTrace) -> dict[str, bool]:
    return {name: s["causal"] for name, s in build_meta(trace)["streams"].items()}


def tiny(family: str) -> tuple[Any, Any]:
    tokenizer = tokenizer_for(family, None)
    return tiny_model(family, len(tokenizer)), tokenizer


@pytest.mark.parametrize("family", ["gpt2", "llama", "mistral"])
def test_a_causal_language_model_is_causal(family: str) -> None:
    model, tokenizer = tiny(family)
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    assert causal_of(trace) == {"self": True}
    # The rule it is read from: each query's visible keys end at or before it (a window: after
    # a start that moves; mistral's window is 4 tokens here).
    spans = trace.stream.key_spans
    assert spans is not None
    assert np.all(spans[..., 1] == np.arange(1, trace.stream.q_len + 1))
    if family == "mistral":
        assert spans[..., 0].max() > 0


def test_a_generation_is_causal() -> None:
    from transformers import AutoModelForCausalLM, GPT2Config

    tokenizer = tokenizer_for("gpt2", None)
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=4, n_embd=32, n_positions=64, vocab_size=len(tokenizer))
    model = AutoModelForCausalLM.from_config(config).eval()
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, max_new_tokens=3)
    assert build_meta(trace)["generation"] is not None
    assert causal_of(trace) == {"self": True}


def test_minilm_is_bidirectional(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    assert causal_of(attnscope.capture(model, TEXT, tokenizer=tokenizer)) == {"self": False}


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_an_encoder_decoder_s_decoder_alone_is_causal(family: str) -> None:
    model, tokenizer = tiny(family)
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, target=TARGET)
    assert causal_of(trace) == {"encoder": False, "decoder": True, "cross": False}


def test_weights_passed_in_with_no_mask_rule_are_not_called_causal() -> None:
    # Lower-triangular weights, but nothing says the model hid the later keys.
    att = np.tril(np.ones((4, 4), np.float32))
    att /= att.sum(-1, keepdims=True)
    trace = AttentionTrace.from_tensors(np.broadcast_to(att, (2, 3, 4, 4)).copy(), list("abcd"))
    assert causal_of(trace) == {"self": False}


@pytest.mark.parametrize("causal", [True, False])
def test_a_dense_mask_is_read_too(causal: bool) -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, causal=causal)
    trace = AttentionTrace.from_module(mha, torch.randn(1, 5, 16), tokens=list("abcde"))
    assert trace.stream.key_spans is None
    assert causal_of(trace) == {"self": causal}


def test_one_later_key_left_visible_is_not_causal() -> None:
    q = np.zeros((2, 1, 4, 2), np.float32)
    spans = np.array([[0, 1], [0, 2], [0, 3], [0, 4]], np.int32)
    assert sees_no_later_keys(AttentionStream(queries=q, keys=q, key_spans=spans[None]))
    leaky = np.stack([spans, spans])
    leaky[1, 2, 1] = 4  # layer 1, query 2 sees key 3
    assert not sees_no_later_keys(AttentionStream(queries=q, keys=q, key_spans=leaky))
    later = np.triu(np.ones((4, 4), bool), 1)
    mask = np.stack([later, later])[:, None].repeat(3, axis=1)  # (layers, heads, q, k)
    weights = np.full((2, 3, 4, 4), 0.25, np.float32)
    assert sees_no_later_keys(AttentionStream(weights, mask=np.triu(mask, 1)))
    mask[1, 2, 0, 3] = False  # one head of one layer lets query 0 see key 3
    assert not sees_no_later_keys(AttentionStream(weights, mask=mask))


def test_a_comparison_of_two_causal_runs_keeps_the_rule() -> None:
    model, tokenizer = tiny("gpt2")
    a = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    other = "The quick brown cat happily jumps over the lazy dog."
    b = attnscope.capture(model, other, tokenizer=tokenizer)
    comparison = attnscope.compare(a, b)
    assert len(comparison.alignment) < len(b.tokens)  # B's extra word has no partner
    chunks = ComparisonChunks(comparison)
    assert chunks.meta()["streams"]["self"]["causal"] is True
    # The aligned traces keep the causal rule over the kept tokens, so their q and k still
    # give their (renormalised) weights: the comparison's neuron view checks exactly this.
    for side in ("a", "b"):
        stream = chunks.trace(side).stream
        assert stream.key_spans is not None
        error = stream.check_error()
        assert error is not None
        assert error < 1e-5, (side, error)


@pytest.mark.parametrize("leak", [None, (0, 1), (5, 6), (7, 8), (2, 8)])
def test_a_dense_mask_is_read_a_block_of_rows_at_a_time(
    leak: tuple[int, int] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two rows a block (9 rows, the last block one row): a leak in any block is found.
    from attnscope.encode import meta

    monkeypatch.setattr(meta, "_MASK_CHECK_VALUES", 18)
    mask = np.triu(np.ones((1, 1, 9, 9), bool), 1)
    if leak is not None:
        mask[0, 0, leak[0], leak[1]] = False
    weights = np.full((1, 1, 9, 9), 1 / 9, np.float32)
    assert sees_no_later_keys(AttentionStream(weights, mask=mask)) is (leak is None)
