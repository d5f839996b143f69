"""First-hour mistakes with the show_* helpers, refused in the user's words before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnscope.sources.resolve as resolve_module
from attnscope import show_head_view, show_model_view
from attnscope.errors import AttnscopeError
from attnscope.show import show

RAW = (np.full((1, 2, 2, 2), 0.5, np.float32),)


class CaptureReachedError(Exception):
    """The capture would run now (the stand-in stops there)."""


@pytest.fixture
def no_capture(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record captures instead of running them: a refusal must come before any."""
    ran: list[Any] = []

    def reached(*args: Any) -> None:
        ran.append(args)
        raise CaptureReachedError

    monkeypatch.setattr(resolve_module, "_capture", reached)
    return ran


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("neurons", r"the views are \['head', 'model', 'neuron'\]"),
        ("neuron", r"call show_neuron_view\(\.\.\.\) instead"),
        ("image", r"open the image view with attnscope\.AttentionWidget\(trace, view='image'\)"),
    ],
)
def test_a_view_option_names_the_views_instead_of_an_internal_error(value: str, says: str) -> None:
    with pytest.raises(TypeError, match=r"show_head_view\(\) opens the head view") as caught:
        show_head_view(RAW, tokens=["a", "b"], view=value)
    assert "multiple values" not in str(caught.value)
    with pytest.raises(TypeError, match=says):
        show_model_view(RAW, tokens=["a", "b"], view=value)


def test_show_refuses_an_unknown_view() -> None:
    with pytest.raises(AttnscopeError, match=r"view='neurons' is not a view; use one of"):
        show("neurons", RAW, tokens=["a", "b"])  # type: ignore[arg-type]


def test_a_layer_beyond_the_model_is_refused_before_the_capture(
    minilm_path: Path, no_capture: list[Any]
) -> None:
    with pytest.raises(AttnscopeError, match=r"layer=9 is out of range: the model has 6 layers"):
        show_head_view(minilm_path, "The cat sat.", layer=9)
    with pytest.raises(AttnscopeError, match=r"layers=\[0, 1\] keeps 2, positions 0\.\.1"):
        show_head_view(minilm_path, "The cat sat.", layer=3, layers=[0, 1])
    with pytest.raises(AttnscopeError, match=r"head\(s\) \[12\] out of range: the model has 12"):
        show_head_view(minilm_path, "The cat sat.", head=12)
    assert no_capture == []


def test_a_loaded_models_config_is_read_too(no_capture: list[Any]) -> None:
    from transformers import GPT2Config, GPT2Model

    model = GPT2Model(GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=50))
    with pytest.raises(AttnscopeError, match=r"layer=2 is out of range: the model has 2 layers"):
        show_head_view(model, "The cat sat.", layer=2)
    assert no_capture == []


def test_layers_and_heads_within_the_model_go_on_to_the_capture(
    minilm_path: Path, no_capture: list[Any]
) -> None:
    with pytest.raises(CaptureReachedError):
        show_head_view(minilm_path, "The cat sat.", layer=5, head=11)
    assert len(no_capture) == 1
