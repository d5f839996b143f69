"""AttentionTrace.from_module: traces recorded from attnscope.MultiHeadAttention layers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from attnscope import AttentionTrace, MultiHeadAttention, Tokens

TOKENS = ["The", "cat", "sat", "on", "the", "mat"]
CHECK_TOL = 1e-6


def _layers(n: int, **kwargs: Any) -> list[MultiHeadAttention]:
    torch.manual_seed(0)
    return [MultiHeadAttention(16, 4, **kwargs).eval() for _ in range(n)]


def _x(batch: int = 1) -> torch.Tensor:
    return torch.randn(batch, len(TOKENS), 16, generator=torch.Generator().manual_seed(1))


def test_single_module_trace_is_the_module_own_weights() -> None:
    (mha,) = _layers(1)
    trace = AttentionTrace.from_module(mha, _x(), TOKENS)
    with torch.no_grad():
        _, step = mha(_x(), need_trace=True)
    assert trace.attention.shape == (1, 4, 6, 6)
    assert trace.queries is not None
    assert trace.keys is not None
    assert trace.queries.shape == (1, 4, 6, 4)
    assert trace.keys.shape == (1, 4, 6, 4)
    np.testing.assert_allclose(trace.attention[0], step.weights[0].numpy(), atol=1e-7)
    np.testing.assert_allclose(trace.scaling, [0.5])
    assert trace.stream.mask is None
    assert trace.metadata == {"source": "attnscope.MultiHeadAttention"}
    assert trace.check() <= CHECK_TOL


def test_stacked_layers_feed_each_other() -> None:
    layers = _layers(3, causal=True)
    trace = AttentionTrace.from_module(layers, _x(), TOKENS)
    assert trace.attention.shape == (3, 4, 6, 6)
    with torch.no_grad():
        hidden = layers[1](layers[0](_x()))
        _, step = layers[2](hidden, need_trace=True)
    np.testing.assert_allclose(trace.attention[2], step.weights[0].numpy(), atol=1e-6)
    assert not np.allclose(trace.attention[0], trace.attention[2])
    assert trace.check() <= CHECK_TOL


def test_causal_trace_records_the_upper_triangle() -> None:
    trace = AttentionTrace.from_module(_layers(2, causal=True), _x(), TOKENS)
    mask = trace.stream.mask
    assert mask is not None
    assert mask.shape == (1, 1, 6, 6)  # one mask shared by both layers and all heads
    np.testing.assert_array_equal(mask[0, 0], np.triu(np.ones((6, 6), bool), 1))
    assert (trace.attention[np.broadcast_to(mask, trace.attention.shape)] == 0).all()
    assert trace.check() <= CHECK_TOL


def test_layers_with_different_masks_keep_one_mask_each() -> None:
    torch.manual_seed(0)
    layers = [MultiHeadAttention(16, 4, causal=c).eval() for c in (True, False)]
    trace = AttentionTrace.from_module(layers, _x(), TOKENS)
    mask = trace.stream.mask
    assert mask is not None
    assert mask.shape == (2, 1, 6, 6)
    assert mask[0].any()
    assert not mask[1].any()
    assert trace.check() <= CHECK_TOL


def test_padded_batch_records_item_zero_and_marks_padding() -> None:
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[0, 4:] = True
    trace = AttentionTrace.from_module(
        _layers(2, causal=True), _x(batch=2), TOKENS, key_padding_mask=pad
    )
    mask = trace.stream.mask
    assert mask is not None
    assert mask[0, 0, 5, 4:].all()
    assert (trace.attention[:, :, :, 4:] == 0).all()
    assert trace.source.kinds == ("token",) * 4 + ("padding",) * 2
    assert trace.check() <= CHECK_TOL


def test_grouped_query_trace_keeps_the_key_heads() -> None:
    layers = _layers(2, num_kv_heads=2, causal=True)
    trace = AttentionTrace.from_module(layers, _x(), TOKENS)
    assert trace.keys is not None
    assert trace.keys.shape == (2, 2, 6, 4)
    assert trace.stream.num_kv_heads == 2
    assert trace.stream.kv_head(3) == 1
    assert trace.check() <= CHECK_TOL


def test_float_mask_goes_to_bias_and_mask() -> None:
    additive = torch.randn(6, 6, generator=torch.Generator().manual_seed(2))
    additive[:, 5] = float("-inf")
    trace = AttentionTrace.from_module(_layers(2), _x(), TOKENS, attn_mask=additive)
    stream = trace.stream
    assert stream.bias is not None
    assert stream.mask is not None
    assert stream.mask[0, 0, :, 5].all()
    assert not stream.mask[0, 0, :, :5].any()
    np.testing.assert_allclose(stream.bias[0, 0, :, :5], additive[:, :5].numpy())
    assert trace.check() <= CHECK_TOL
    # without the bias the recomputation would be off: the check sees it
    bare = AttentionTrace(
        TOKENS, stream.attention, queries=stream.queries, keys=stream.keys, mask=stream.mask
    )
    assert bare.check() > 1e-3


def test_bool_float_mask_adds_no_bias() -> None:
    causal = torch.zeros(6, 6).masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), -torch.inf)
    trace = AttentionTrace.from_module(_layers(1), _x(), TOKENS, attn_mask=causal)
    assert trace.stream.bias is None
    assert trace.stream.mask is not None
    assert trace.check() <= CHECK_TOL


def test_runs_in_eval_and_restores_training_mode() -> None:
    layers = [MultiHeadAttention(16, 4, dropout=0.9).train() for _ in range(2)]
    layers[1].eval()
    first = AttentionTrace.from_module(layers, _x(), TOKENS)
    again = AttentionTrace.from_module(layers, _x(), TOKENS)
    np.testing.assert_array_equal(first.attention, again.attention)  # no dropout acted
    assert [m.training for m in layers] == [True, False]
    assert first.check() <= CHECK_TOL


def test_restores_training_mode_when_the_forward_pass_fails() -> None:
    (mha,) = _layers(1)
    mha.train()
    with pytest.raises(ValueError, match="attn_mask has shape"):
        AttentionTrace.from_module(mha, _x(), TOKENS, attn_mask=torch.zeros(2, 2))
    assert mha.training


def test_explicit_tokens_are_kept() -> None:
    tokens = Tokens(TOKENS, kinds=["special"] + ["token"] * 5)
    trace = AttentionTrace.from_module(_layers(1), _x(), tokens)
    assert trace.source is tokens


def test_module_trace_survives_save_and_load(tmp_path: Path) -> None:
    additive = torch.zeros(6, 6)
    additive[2, 3] = -1.5
    layers = _layers(2, num_kv_heads=1, causal=True)
    trace = AttentionTrace.from_module(layers, _x(), TOKENS, attn_mask=additive)
    loaded = AttentionTrace.load(trace.save(tmp_path / "mha"))
    assert loaded.check() <= CHECK_TOL
    assert loaded.metadata == trace.metadata
    for attr in ("attention", "queries", "keys", "scaling", "bias", "mask"):
        np.testing.assert_array_equal(getattr(loaded.stream, attr), getattr(trace.stream, attr))


@pytest.mark.parametrize(
    ("modules", "x", "tokens", "kwargs", "error", "message"),
    [
        ("one", _x(), TOKENS[:5], {}, ValueError, "5 tokens were given for an input of 6"),
        ("one", _x()[0], TOKENS, {}, ValueError, r"Add a batch axis"),
        ("one", _x(), TOKENS, {"key": _x()}, TypeError, r"do not pass \['key'\]"),
        ("one", _x(), TOKENS, {"need_trace": False}, TypeError, "need_trace"),
        ([], _x(), TOKENS, {}, ValueError, "at least one"),
        ([torch.nn.Linear(16, 16)], _x(), TOKENS, {}, TypeError, "modules\\[0\\] is a Linear"),
        ("mixed", _x(), TOKENS, {}, ValueError, "differ in"),
        ("wide", _x(), TOKENS, {}, ValueError, "takes d_model=32"),
        ("kdim", _x(), TOKENS, {}, ValueError, "kdim=8"),
    ],
)
def test_bad_calls_are_refused(
    modules: Any,
    x: torch.Tensor,
    tokens: list[str],
    kwargs: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    named = {
        "one": MultiHeadAttention(16, 4),
        "mixed": [MultiHeadAttention(16, 4), MultiHeadAttention(16, 2)],
        "wide": MultiHeadAttention(32, 4),
        "kdim": MultiHeadAttention(16, 4, kdim=8),
    }
    target = named[modules] if isinstance(modules, str) else modules
    with pytest.raises(error, match=message):
        AttentionTrace.from_module(target, x, tokens, **kwargs)


def test_per_head_attn_mask_is_recorded_per_head() -> None:
    g = torch.Generator().manual_seed(3)
    mask = torch.rand(2 * 4, 6, 6, generator=g) < 0.5
    mask[:, :, 0] = False
    trace = AttentionTrace.from_module(_layers(2), _x(batch=2), TOKENS, attn_mask=mask)
    recorded = trace.stream.mask
    assert recorded is not None
    assert recorded.shape == (1, 4, 6, 6)
    np.testing.assert_array_equal(recorded[0], mask[:4].numpy())  # batch item 0's heads
    assert trace.check() <= CHECK_TOL
