"""capture() errors say what was wrong and how to fix it, before any work is done."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import attnscope
from capture_models import TEXT, bpe_tokenizer, tiny_model


def test_empty_text(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    with pytest.raises(ValueError, match="text is empty"):
        attnscope.capture(model, "   ", tokenizer=tokenizer)
    with pytest.raises(ValueError, match="text_pair is empty"):
        attnscope.capture(model, "hi", tokenizer=tokenizer, text_pair="")


def test_text_longer_than_positions(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    long_text = "word " * 600
    with pytest.raises(ValueError, match=r"602 tokens.*at most 512.*max_tokens=512"):
        attnscope.capture(model, long_text, tokenizer=tokenizer)


def test_max_tokens_truncates_and_says_so(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, "word " * 600, tokenizer=tokenizer, max_tokens=16, layers=[0])
    assert len(trace.tokens) == 16
    assert trace.tokens[-1] == "[SEP]"
    assert any("truncated to 16 of 602 tokens" in n for n in trace.notes)


def test_no_tokenizer_found() -> None:
    model = tiny_model("gpt2", 300)
    with pytest.raises(ValueError, match="pass tokenizer="):
        attnscope.capture(model, TEXT)


def test_model_without_attention() -> None:
    from transformers import ResNetConfig, ResNetModel

    model = ResNetModel(ResNetConfig(embedding_size=8, hidden_sizes=[8], depths=[1]))
    with pytest.raises(ValueError, match="no attention layers"):
        attnscope.capture(model, torch.zeros(3, 16, 16))


def test_not_a_transformers_model() -> None:
    with pytest.raises(TypeError, match=r"AttentionTrace\.from_module"):
        attnscope.capture(torch.nn.Linear(2, 2), TEXT)


@pytest.mark.parametrize("layers", [[6], [-1], [0, 9]])
def test_unknown_layer(minilm: tuple[Any, Any], layers: list[int]) -> None:
    model, tokenizer = minilm
    with pytest.raises(IndexError, match=r"the model has 6 layers: valid indices are 0\.\.5"):
        attnscope.capture(model, TEXT, tokenizer=tokenizer, layers=layers)


def test_bad_max_tokens(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    with pytest.raises(ValueError, match="max_tokens must be a positive"):
        attnscope.capture(model, TEXT, tokenizer=tokenizer, max_tokens=0)


def test_wrong_image_shape() -> None:
    model = tiny_model("vit", 64)
    with pytest.raises(ValueError, match=r"reads images of shape \(3, 16, 16\)"):
        attnscope.capture(model, torch.zeros(3, 8, 8))


def test_seq2seq_without_head_needs_target() -> None:
    from transformers import AutoConfig, T5Model

    tokenizer = bpe_tokenizer()
    config = AutoConfig.for_model(
        "t5", d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=2, vocab_size=len(tokenizer)
    )
    with pytest.raises(ValueError, match="pass target="):
        attnscope.capture(T5Model(config).eval(), TEXT, tokenizer=tokenizer)


def test_target_needs_an_encoder_decoder(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    with pytest.raises(ValueError, match="target= is the decoder text"):
        attnscope.capture(model, TEXT, tokenizer=tokenizer, target="x")
