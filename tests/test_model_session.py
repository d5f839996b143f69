"""The model session (issue 38): a model loaded and checked once, then captured many times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

import attnscope
from attnscope.analysis.scan import check_capture_options
from attnscope.errors import AttnscopeError, AttnscopeIndexError
from attnscope.sources.session import ModelSession


@pytest.fixture(scope="module")
def gpt(minilm_path: Path) -> tuple[Any, Any]:
    tok = AutoTokenizer.from_pretrained(minilm_path)
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=len(tok), pad_token_id=0)
    return GPT2LMHeadModel(config).eval(), tok


def test_a_session_loads_once_and_captures_what_capture_captures(minilm_path: Path) -> None:
    session = ModelSession(minilm_path, layers=[1, 4])
    model = session.model
    texts = ["The cat sat on the mat.", "A dog ran home."]
    traces = [session.capture(text) for text in texts]
    assert session.model is model  # loaded once, not per input
    for text, trace in zip(texts, traces, strict=True):
        alone = attnscope.capture(minilm_path, text, layers=[1, 4])
        assert trace.tokens == alone.tokens
        assert trace.stream.layers == (1, 4)
        np.testing.assert_allclose(trace.attention, alone.attention, rtol=1e-5, atol=1e-7)


def test_a_session_refuses_layers_the_model_lacks_before_any_capture(
    minilm: tuple[Any, Any],
) -> None:
    model, tok = minilm
    with pytest.raises(AttnscopeIndexError, match=r"layers=\[6\] names layer 6.*6 layers"):
        ModelSession(model, tok, layers=[6])


def test_input_lengths_are_told_before_a_capture(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    session = ModelSession(model, tok)
    text = "The cat sat on the mat."
    assert session.input_length(text, "text") == len(
        attnscope.capture(model, text, tokenizer=tok).tokens
    )
    assert session.input_length([101, 2023, 102], "ids") == 3
    with pytest.raises(AttnscopeError, match="token id"):
        session.input_length([101, 10**7], "ids", what="inputs[0]")
    assert session.position_limit == 512
    with pytest.raises(AttnscopeError, match="600"):
        session.check_length(600, "inputs[0]")


def test_a_model_without_a_tokenizer_has_none_when_none_is_required(
    gpt: tuple[Any, Any],
) -> None:
    model, _ = gpt
    session = ModelSession(model)
    assert session.find_tokenizer(required=False) is None
    with pytest.raises(AttnscopeError):
        session.find_tokenizer()
    trace = session.capture(torch.tensor([[5, 6, 7]]))
    assert trace.tokens == ["#5", "#6", "#7"]


def test_generation_settings_are_checked_with_and_without_a_model(
    minilm: tuple[Any, Any], gpt: tuple[Any, Any]
) -> None:
    model, tok = minilm
    with pytest.raises(AttnscopeError, match="cannot generate"):
        ModelSession(model, tok).check_generation(3, None, {})
    ModelSession(gpt[0], gpt[1]).check_generation(3, 0, {"do_sample": True})
    # Without a model (scan checks before it loads one): was an AttributeError on None.
    check_capture_options({"max_new_tokens": 3, "do_sample": True, "seed": 0})
    with pytest.raises(AttnscopeError, match="only apply when capture generates"):
        check_capture_options({"do_sample": True})


def test_scan_with_generation_settings_runs(gpt: tuple[Any, Any]) -> None:
    model, tok = gpt
    df = attnscope.scan(
        model,
        ["Hi there", "The cat"],
        tokenizer=tok,
        statistics=["prev"],
        max_new_tokens=2,
        do_sample=True,
        seed=0,
    )
    assert df.shape == (2 * 2 * 2, 4)
    first = attnscope.capture(
        model, "Hi there", tokenizer=tok, max_new_tokens=2, do_sample=True, seed=0
    )
    assert df.attrs["tokens"][0] == len(first.tokens) == 4 + 2
