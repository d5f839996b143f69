"""A length the machine cannot hold is refused before the forward (issue 33), model unchanged."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import attnscope
from attnscope.errors import AttnscopeError
from attnscope.sources.hf import memory_need
from attnscope.sources.hf.memory_need import TooLongError, estimate

TOKENS = 512


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=TOKENS,
    )
    return LlamaForCausalLM(config).eval()


def test_too_long_for_free_memory_is_refused_before_the_forward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _model()
    ids = list(range(1, 64)) * (TOKENS // 63) + [1] * (TOKENS % 63)
    need = estimate(model, TOKENS, None)
    assert need is not None
    free = need.qk_host // 2  # less than the q/k alone
    monkeypatch.setattr(memory_need, "host_available", lambda: free)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    forwards: list[int] = []
    hook = model.register_forward_pre_hook(lambda *_: forwards.append(1))
    try:
        with pytest.raises(TooLongError) as caught:
            attnscope.capture(model, ids)
    finally:
        hook.remove()
    assert forwards == []  # refused before any forward (the probe's included)
    message = str(caught.value)
    assert f"{TOKENS} tokens need at least" in message
    assert f"free memory here: {free / 1e9:.1f} GB" in message
    for fix in ("layers=", "max_tokens=", "device"):
        assert fix in message
    assert isinstance(caught.value, AttnscopeError)
    assert model.config._attn_implementation == "sdpa"
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    # With memory enough the same capture runs.
    monkeypatch.setattr(memory_need, "host_available", lambda: None)
    assert attnscope.capture(model, ids).streams["self"].num_layers == 2


def test_the_estimate_grows_with_the_layers_and_tokens_captured() -> None:
    model = _model()
    one = estimate(model, 1000, [0])
    every = estimate(model, 1000, None)
    longer = estimate(model, 2000, [0])
    assert one is not None
    assert every is not None
    assert longer is not None
    # q (2 heads) and k (1 head) of 16 values per token, float32 on the host
    assert one.qk_host == 3 * 1000 * 16 * 4
    assert every.qk_host == 2 * one.qk_host
    assert longer.qk_host == 2 * one.qk_host
    assert every.forward == one.forward  # the forward runs every layer either way
    half = estimate(model.to(torch.bfloat16), 1000, [0])
    assert half is not None
    assert half.qk_host == one.qk_host // 2
