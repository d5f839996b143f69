"""capture() leaves the model as it found it: after success, after an error, with no warnings."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import pytest
import torch
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface

import attnscope
from capture_models import SEQ2SEQ, TARGET, TEXT, bpe_tokenizer, forward_inputs, tiny_model

HOOK_TABLES = (
    "_forward_hooks",
    "_forward_pre_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_pre_hooks_with_kwargs",
)


def snapshot(model: torch.nn.Module) -> dict[str, Any]:
    configs = [m.config for m in model.modules() if hasattr(m, "config")]
    return {
        "implementations": [c._attn_implementation for c in configs],
        "hooks": [[dict(getattr(m, t)) for t in HOOK_TABLES] for m in model.modules()],
        "training": [m.training for m in model.modules()],
        "requires_grad": [p.requires_grad for p in model.parameters()],
        "registered": sorted(AttentionInterface._global_mapping)
        + sorted(AttentionMaskInterface._global_mapping),
    }


def outputs(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    torch.manual_seed(0)  # the model may be in train mode: same dropout both times
    with torch.no_grad():
        return (
            model(**inputs).last_hidden_state
            if not hasattr(model, "lm_head")
            else (model(**inputs).logits)
        )


def prepared(family: str) -> tuple[torch.nn.Module, Any]:
    """A model in an unusual state: train mode, one frozen parameter, a user's own hook."""
    tokenizer = bpe_tokenizer(wrap=family == "bart")
    model = tiny_model(family, len(tokenizer)).train()
    next(model.parameters()).requires_grad_(False)
    model.register_forward_hook(lambda module, args, output: None)
    return model, tokenizer


@pytest.mark.parametrize("family", ["gpt2", "bart", "bloom", "gpt_neo", "mistral"])
def test_model_unchanged_after_capture(family: str) -> None:
    model, tokenizer = prepared(family)
    inputs = forward_inputs(model, tokenizer, family)
    before, out_before = snapshot(model), outputs(model, inputs)
    extra = {"target": TARGET} if family in SEQ2SEQ else {}
    attnscope.capture(model, TEXT, tokenizer=tokenizer, **extra)
    assert snapshot(model) == before
    assert torch.equal(outputs(model, inputs), out_before)
    attnscope.capture(model, TEXT, tokenizer=tokenizer, layers=[1], **extra)
    assert snapshot(model) == before


@pytest.mark.parametrize("family", ["gpt2", "bart", "bloom", "gpt_neo"])
def test_model_unchanged_after_capture_raised(family: str) -> None:
    # The user's own hook on the embedding fails inside the forward pass, after
    # capture has switched and hooked the model.
    tokenizer = bpe_tokenizer(wrap=family == "bart")
    model = tiny_model(family, len(tokenizer)).train()
    model.register_forward_pre_hook(lambda module, args: None)

    def fail(module: torch.nn.Module, args: Any) -> None:
        raise IndexError("the user's hook failed")

    runs_first = model.get_encoder() if family in SEQ2SEQ else model  # BART: not `shared`
    runs_first.get_input_embeddings().register_forward_pre_hook(fail)
    before = snapshot(model)
    extra = {"target": TARGET} if family in SEQ2SEQ else {}
    with pytest.raises(IndexError, match="user's hook"):
        attnscope.capture(model, TEXT, tokenizer=tokenizer, **extra)
    assert snapshot(model) == before
    with pytest.raises(IndexError, match="user's hook"):
        attnscope.capture(model, TEXT, tokenizer=tokenizer, layers=[0], **extra)
    assert snapshot(model) == before


def test_sdpa_model_captures_without_warnings(
    minilm: tuple[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    model, tokenizer = minilm
    assert model.config._attn_implementation == "sdpa"
    library = logging.getLogger("transformers")
    library.addHandler(caplog.handler)  # transformers does not propagate to the root
    try:
        with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO):
            warnings.simplefilter("always")
            trace = attnscope.capture(model, "The cat sat on the mat.", tokenizer=tokenizer)
    finally:
        library.removeHandler(caplog.handler)
    assert [str(w.message) for w in caught] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert trace.attention.shape == (6, 12, 9, 9)
    assert model.config._attn_implementation == "sdpa"
    # and the model still runs with sdpa afterwards
    with torch.inference_mode():
        assert model(**tokenizer("ok", return_tensors="pt"), output_attentions=False) is not None
