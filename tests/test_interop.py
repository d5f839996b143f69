"""TransformerLens caches and nnsight models as sources, on tiny models from configs.

TransformerLens 4.x builds a ``TransformerBridge`` around a Hugging Face model
offline (``build_bridge_from_module``); its ``run_with_cache`` output becomes a
trace whose q and k reproduce the weights (``check() <= 1e-5``) and match the
Hugging Face model's own eager attention. nnsight's wrapper is unwrapped by
``capture``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

import attnscope
from attnscope import AttentionTrace, show_head_view, show_neuron_view

# nnsight names its own envoys after the wrapped modules and warns where BERT's clash.
pytestmark = pytest.mark.filterwarnings("ignore:Module .* has a submodule named:UserWarning")

IDS = torch.tensor([[1, 5, 7, 9, 11, 13]])
WORDS = ["<s>", "The", " cat", " sat", " on", " it"]


def gpt2() -> Any:
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2,
        n_head=4,
        n_embd=32,
        vocab_size=50,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config).eval()


def llama() -> Any:
    torch.manual_seed(1)
    config = LlamaConfig(
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        hidden_size=32,
        intermediate_size=64,
        vocab_size=50,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config).eval()


def eager_attention(model: Any) -> np.ndarray[Any, Any]:
    model.set_attn_implementation("eager")
    with torch.no_grad():
        out = model(IDS, output_attentions=True)
    model.set_attn_implementation("sdpa")
    return np.stack([a[0].numpy() for a in out.attentions])


def bridged(model: Any, architecture: str, **run: Any) -> tuple[Any, Any]:
    from transformer_lens.model_bridge.sources import build_bridge_from_module

    bridge = build_bridge_from_module(model, architecture, hf_config=model.config)
    with torch.no_grad():
        _, cache = bridge.run_with_cache(IDS, **run)
    return bridge, cache


@pytest.mark.parametrize(
    ("make", "architecture", "q_hooks", "kv_heads"),
    [
        (gpt2, "GPT2LMHeadModel", "hook_q/hook_k", 4),
        (llama, "LlamaForCausalLM", "hook_rot_q/hook_rot_k", 2),  # rotary, grouped-query
    ],
)
def test_transformer_lens_cache_recomputes_and_matches_the_model(
    make: Any, architecture: str, q_hooks: str, kv_heads: int
) -> None:
    model = make()
    reference = eager_attention(model)  # before the bridge rebuilds the model's modules
    _, cache = bridged(model, architecture)
    trace = AttentionTrace.from_transformer_lens(cache, WORDS)
    assert trace.attention.shape == (2, 4, 6, 6)
    assert trace.stream.num_kv_heads == kv_heads
    assert trace.metadata["source"] == "transformer_lens"
    assert trace.metadata["qk_hooks"] == q_hooks
    assert trace.check() <= 1e-5
    np.testing.assert_allclose(trace.attention, reference, atol=1e-5)
    assert trace.stream.mask is not None
    assert trace.stream.mask[0, 0, 0, 1]  # causal: the first token cannot see the second
    assert trace.raw_tokens == WORDS


def test_rotary_keys_are_taken_after_the_rotation() -> None:
    _, cache = bridged(llama(), "LlamaForCausalLM")
    trace = AttentionTrace.from_transformer_lens(cache, WORDS)
    rotated = cache["blocks.1.attn.hook_rot_k"][0].numpy().transpose(1, 0, 2)
    unrotated = cache["blocks.1.attn.hook_k"][0].numpy().transpose(1, 0, 2)
    assert trace.keys is not None
    np.testing.assert_array_equal(trace.keys[1], rotated)
    assert not np.allclose(trace.keys[1], unrotated)


def test_a_filtered_cache_keeps_its_layers_and_says_why_there_is_no_neuron_view() -> None:
    _, cache = bridged(
        gpt2(), "GPT2LMHeadModel", names_filter=lambda n: n == "blocks.1.attn.hook_pattern"
    )
    trace = AttentionTrace.from_transformer_lens(cache, WORDS)
    assert trace.stream.layers == (1,)
    assert not trace.stream.has_qk
    assert "neuron view unavailable" in trace.notes[0]
    _, no_pattern = bridged(gpt2(), "GPT2LMHeadModel", names_filter=lambda n: "hook_q" in n)
    with pytest.raises(ValueError, match="no attention pattern"):
        AttentionTrace.from_transformer_lens(no_pattern, WORDS)


def test_show_helpers_take_a_cache_and_errors_point_to_the_right_entry() -> None:
    bridge, cache = bridged(gpt2(), "GPT2LMHeadModel")
    widget = show_neuron_view(cache, tokens=WORDS, layer=1, query=3)
    assert (widget.view, widget.layer, widget.query) == ("neuron", 1, 3)
    assert widget.trace.check() <= 1e-5
    with pytest.raises(TypeError, match="tokens"):
        show_head_view(cache)
    with pytest.raises(TypeError, match="from_transformer_lens"):
        AttentionTrace.from_tensors(cache, WORDS)
    with pytest.raises(ValueError, match="6 positions but 2 tokens"):
        AttentionTrace.from_transformer_lens(cache, ["a", "b"])
    with pytest.raises(TypeError, match="run_with_cache"):
        attnscope.capture(bridge, "The cat sat")


def test_capture_unwraps_an_nnsight_model_and_leaves_it_as_found(minilm: tuple[Any, Any]) -> None:
    from nnsight import NNsight

    model, tokenizer = minilm
    wrapped = NNsight(model)
    text = "The cat sat on the mat."
    trace = attnscope.capture(wrapped, text, tokenizer=tokenizer)
    direct = attnscope.capture(model, text, tokenizer=tokenizer)
    assert trace.check() <= 1e-5
    np.testing.assert_array_equal(trace.attention, direct.attention)
    assert wrapped._module is model
    assert model.config._attn_implementation == "sdpa"  # put back as found
    widget = show_head_view(wrapped, text, tokenizer=tokenizer, layer=2)
    assert widget.trace.tokens == direct.tokens
