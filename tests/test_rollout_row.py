"""Rollout of chosen queries at any length (``attnscope.rollout_row``).

A row vector times each layer's residual-mixed head mean, from the top layer
down, a block of rows at a time: on a real MiniLM trace it is the row of
``rollout``; on a long causal q/k trace it needs no ``n x n`` array, and where
``rollout`` of every query is too large, its message says why and names
``rollout_row``; the widget says the real reason it offers no rollout.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
import traitlets

import attnscope
from attnscope import AttentionStream, AttentionTrace, AttentionWidget, Tokens
from attnscope.errors import AttnscopeError
from attnscope.trace import rows as rows_module

# The module (attnscope.analysis.rollout is also the name of its function there).
rollout_module = importlib.import_module("attnscope.analysis.rollout")
TEXT = "The cat sat on the mat. The cat sat on the mat, and then it slept."


def causal_trace(n: int, layers: int = 3) -> AttentionTrace:
    """A q/k-only causal trace of ``n`` tokens (weights recomputed a block at a time)."""
    rng = np.random.default_rng(4)
    q = rng.normal(size=(layers, 2, n, 8)).astype(np.float32)
    k = rng.normal(size=(layers, 2, n, 8)).astype(np.float32)
    stop = np.arange(1, n + 1, dtype=np.int32)
    spans = np.stack([np.zeros(n, np.int32), stop], 1)[None]
    stream = AttentionStream(queries=q, keys=k, scaling=np.float32(8**-0.5), key_spans=spans)
    return AttentionTrace.from_streams(Tokens([f"w{i}" for i in range(n)]), [stream])


def test_rows_equal_rollout_on_minilm(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    full = attnscope.rollout(trace)
    for layer in (0, 3, 5):
        for query in (0, 7, len(trace.tokens) - 1):
            row = attnscope.rollout_row(trace, query, layer=layer)
            np.testing.assert_allclose(row, full[layer, query], atol=1e-6)
    rows = attnscope.rollout_row(trace, [2, 9])
    np.testing.assert_allclose(rows, full[-1, [2, 9]], atol=1e-6)


def test_blocks_of_a_few_rows_give_the_same_causal_row(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = causal_trace(300)
    whole = attnscope.rollout_row(trace, 250)
    np.testing.assert_allclose(whole, attnscope.rollout(trace)[-1, 250], atol=1e-6)
    assert not whole[251:].any()  # a causal query reaches its own prefix only
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", 7 * 300)  # 7 rows a block
    # Another block size sums in another order: float32 products agree to their rounding.
    np.testing.assert_allclose(attnscope.rollout_row(trace, 250), whole, rtol=1e-5, atol=1e-9)


def test_past_the_full_rollouts_size_the_row_still_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = causal_trace(2000, layers=2)
    monkeypatch.setattr(rollout_module, "ROLLOUT_MAX_BYTES", 8 * 2 * 1000 * 1000)
    with pytest.raises(AttnscopeError, match=r"2 x 2000 x 2000 .*rollout_row\(trace, query\)"):
        attnscope.rollout(trace)
    row = attnscope.rollout_row(trace, 1999)
    assert row.shape == (2000,)
    assert abs(row.sum() - 1) < 1e-9
    assert (row >= 0).all()
    assert row[1999] > row[1000] > 0  # the residual keeps the query's own share largest


def test_bad_input_is_refused_before_any_work() -> None:
    trace = causal_trace(20)
    with pytest.raises(AttnscopeError, match=r"query=20 must be a token index .* from 0 to 19"):
        attnscope.rollout_row(trace, 20)
    with pytest.raises(AttnscopeError, match=r"query=\[\] must be"):
        attnscope.rollout_row(trace, [])
    with pytest.raises(TypeError, match="layer must be the model's layer number"):
        attnscope.rollout_row(trace, 3, layer="1")  # type: ignore[arg-type]
    with pytest.raises(AttnscopeError, match="layer"):
        attnscope.rollout_row(trace, 3, layer=7)


def test_widget_says_why_a_long_stream_offers_no_rollout() -> None:
    w = AttentionWidget(causal_trace(1100, layers=1))
    with pytest.raises(traitlets.TraitError) as raised:
        w.pseudo_heads = ["rollout"]
    message = str(raised.value)
    assert "up to 1024 tokens" in message
    assert "attnscope.rollout_row(trace, query)" in message
    assert "consecutive layers" not in message
    assert w.pseudo_heads == []


def test_the_live_widget_offers_one_querys_rollout_past_1024_tokens() -> None:
    from attnscope.encode.arrays import top_keys
    from attnscope.encode.chunks import encode_chunk, parse_key
    from attnscope.encode.meta import build_meta, stream_top_k

    trace = causal_trace(1100, layers=2)
    assert build_meta(trace)["streams"]["self"]["rollout_query"] is True
    assert "rollout_query" not in build_meta(trace, embedded=True)["streams"]["self"]
    arrays = dict(encode_chunk(trace, parse_key("pseudo:self:1:1090", trace)))
    k = stream_top_k(trace.stream)
    row = attnscope.rollout_row(trace, 1090, layer=1).astype(np.float32)[None, None]
    index, weight, rowmax = top_keys(row, k)
    np.testing.assert_array_equal(arrays["index"], index)
    np.testing.assert_array_equal(arrays["weight"], weight)
    np.testing.assert_allclose(arrays["rowmax"], rowmax)
    with pytest.raises(ValueError, match="out of range"):
        parse_key("pseudo:self:1:1100", trace)
    short = causal_trace(30)
    assert "rollout_query" not in build_meta(short)["streams"]["self"]
    with pytest.raises(ValueError, match="offers no rollout of one query"):
        parse_key("pseudo:self:0:3", short)
