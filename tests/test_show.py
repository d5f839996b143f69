"""show_* helpers: every kind of source, options split and checked before work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from attnscope import (
    AttentionTrace,
    AttentionWidget,
    MultiHeadAttention,
    show_head_view,
    show_model_view,
    show_neuron_view,
)
from attnscope.sources.resolve import source_kind


def per_layer(layers: int = 2, heads: int = 3, n: int = 4) -> tuple[torch.Tensor, ...]:
    return tuple(torch.softmax(torch.randn(1, heads, n, n), -1) for _ in range(layers))


def test_trace_source() -> None:
    trace = AttentionTrace(list("abc"), np.full((2, 2, 3, 3), 1 / 3, np.float32))
    w = show_model_view(trace, layer=1, theme="dark")
    assert isinstance(w, AttentionWidget)
    assert w.trace is trace
    assert (w.view, w.layer, w.theme) == ("model", 1, "dark")


def test_raw_tensor_sources() -> None:
    attention = per_layer()
    w = show_head_view(attention, tokens=list("abcd"), sentence_b_start=2, pair_filter="AB")
    assert w.trace.source.segments == (0, 0, 1, 1)
    np.testing.assert_allclose(w.trace.attention[1], attention[1][0].numpy())
    stacked = np.stack([a[0].numpy() for a in attention])
    assert show_head_view(stacked, tokens=list("abcd"), heads=[2]).heads == [2]
    assert show_head_view(list(attention), tokens=["##a", "b", "c", "d"]).trace.tokens[0] == "a"


def test_module_source_one_or_many_layers() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, causal=True)
    x = torch.randn(1, 5, 16)
    w = show_neuron_view(mha, x, tokens=list("abcde"), query=3, head=2)
    assert (w.view, w.query, w.head) == ("neuron", 3, 2)
    assert w._meta["streams"]["self"]["head_dim"] == 4
    assert w.trace.check() < 1e-5
    layers = [MultiHeadAttention(16, 4) for _ in range(3)]
    pad = torch.tensor([[False, False, False, False, True]])
    w = show_head_view(layers, x, tokens=list("abcde"), key_padding_mask=pad, layer=2)
    assert w.trace.attention.shape == (3, 4, 5, 5)
    assert w.layer == 2
    assert source_kind(layers) == "module"


def test_hugging_face_model_source(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    w = show_head_view(
        model, "The cat sat on the mat.", tokenizer=tokenizer, text_pair="It was tired.", layer=5
    )
    assert w.layer == 5
    assert w.trace.source.segments is not None
    w.pair_filter = "AB"
    assert w.trace.check() < 1e-4


def test_model_name_source(minilm_path: Path) -> None:
    w = show_model_view(str(minilm_path), "Attention is all you need.", max_tokens=32)
    assert w.view == "model"
    assert w._meta["streams"]["self"]["num_heads"] == 12


ABCD = list("abcd")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: show_head_view(per_layer(), tokens=ABCD, colour="red"), TypeError, "colour"),
        (lambda: show_head_view(per_layer(), tokens=ABCD, tokenizer=1), TypeError, "valid options"),
        (lambda: show_head_view(per_layer()), TypeError, "tokens"),
        (lambda: show_head_view(per_layer(), "text", tokens=ABCD), TypeError, "only applies"),
        (lambda: show_neuron_view(per_layer(), tokens=ABCD), ValueError, "neuron view"),
        (lambda: show_head_view(MultiHeadAttention(8, 2), torch.randn(1, 2, 8)), TypeError, "x,"),
        (lambda: show_head_view({"not": "a source"}), TypeError, "cannot show attention"),
        (lambda: show_head_view(per_layer(), tokens=ABCD, layer=5), Exception, "layer=5"),
    ],
)
def test_bad_calls_are_explained(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_model_options_are_checked_before_the_model_runs(minilm: tuple[Any, Any]) -> None:
    model, _ = minilm
    with pytest.raises(TypeError, match="sentence_b_start"):
        show_head_view(model, "text", sentence_b_start=3)
    with pytest.raises(TypeError, match="needs the text"):
        show_head_view(model)
    with pytest.raises(ValueError, match="text is empty"):  # capture's own message
        show_head_view(model, "  ")


def test_neuron_view_needs_qk_in_a_trace() -> None:
    trace = AttentionTrace(list("ab"), np.full((1, 1, 2, 2), 0.5, np.float32))
    with pytest.raises(ValueError, match="query/key"):
        show_neuron_view(trace)


def test_views_pass_through_and_are_checked_before_the_model_runs() -> None:
    w = show_model_view(per_layer(), tokens=list("abcd"), views=("model", "head"))
    assert (w.views, w.view) == (("model", "head"), "model")
    assert show_head_view(per_layer(), tokens=list("abcd"), views=["head"])._meta["views"] == [
        "head"
    ]
    with pytest.raises(ValueError, match=r"leaves out 'head'.*use show_model_view"):
        show_head_view("no/such-model", "text", views=("model",))  # checked before loading
    with pytest.raises(ValueError, match="unknown view"):
        show_head_view("no/such-model", "text", views=("head", "graph"))
