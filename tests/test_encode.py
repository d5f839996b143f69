"""Trace -> `_meta` and chunks: shapes, quantisation error bounds, exact q/k."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from attnscope import AttentionStream, AttentionTrace, Tokens
from attnscope.encode.arrays import qk_arrays, quantize_rows, thumbnails, top_keys
from attnscope.encode.chunks import ChunkCache, all_keys, encode_chunk, parse_key
from attnscope.encode.messages import reply_messages
from attnscope.encode.meta import build_meta
from attnscope.trace.recompute import recompute_attention


def softmax_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    logits = rng.normal(scale=3.0, size=shape)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def qk_trace(rng: np.random.Generator, *, kv_heads: int = 2) -> AttentionTrace:
    """A trace whose attention is softmax(q·k·scaling + bias) with a causal mask."""
    layers, heads, n, d = 2, 4, 7, 8
    q = rng.normal(size=(layers, heads, n, d)).astype(np.float32)
    k = rng.normal(size=(layers, kv_heads, n, d)).astype(np.float32)
    scaling = np.array([0.35, 0.5], np.float32)
    bias = rng.normal(size=(1, heads, n, n)).astype(np.float32)
    mask = np.triu(np.ones((n, n), bool), 1)[None, None]
    att = recompute_attention(q, k, scaling, bias=bias, mask=mask)
    return AttentionTrace(
        list("abcdefg"), att, queries=q, keys=k, scaling=scaling, bias=bias, mask=mask
    )


def decode(weight: np.ndarray, rowmax: np.ndarray) -> np.ndarray:
    return weight.astype(np.float64) / 255 * rowmax[..., None]


def test_thumbnails_shape_and_scale() -> None:
    rng = np.random.default_rng(0)
    att = softmax_rows(rng, (3, 5, 130, 97))
    thumbs = thumbnails(att, 64, 64)
    assert thumbs.shape == (3, 5, 64, 64)
    assert thumbs.dtype == np.uint8
    assert (thumbs.max(axis=(2, 3)) == 255).all()
    # Block-max: the block holding each head's largest weight is the one at 255.
    for layer in range(3):
        for head in range(5):
            r, c = np.unravel_index(att[layer, head].argmax(), att.shape[2:])
            row = np.searchsorted(np.arange(64) * 130 // 64, r, side="right") - 1
            col = np.searchsorted(np.arange(64) * 97 // 64, c, side="right") - 1
            assert thumbs[layer, head, row, col] == 255


def test_thumbnails_pool_every_position_and_keep_zero_heads() -> None:
    att = np.zeros((1, 2, 5, 5), np.float32)
    att[0, 0, 4, 4] = 0.25  # the last row and column fall in the last block
    thumbs = thumbnails(att, 2, 2)
    assert thumbs[0, 0].tolist() == [[0, 0], [0, 255]]
    assert not thumbs[0, 1].any()
    with pytest.raises(ValueError, match="thumbnail size"):
        thumbnails(att, 6, 2)


def test_top_keys_order_and_error_bound() -> None:
    rng = np.random.default_rng(1)
    att = softmax_rows(rng, (4, 33, 300))
    index, weight, rowmax = top_keys(att, 20)
    assert index.dtype == np.uint16
    assert index.shape == weight.shape == (4, 33, 20)
    true_order = np.argsort(-att, axis=-1, kind="stable")[..., :20]
    np.testing.assert_array_equal(index, true_order)
    np.testing.assert_array_equal(rowmax, att.max(-1))
    exact = np.take_along_axis(att, index.astype(np.intp), -1)
    error = np.abs(decode(weight, rowmax) - exact)
    assert (error <= rowmax[..., None] / 510 + 1e-9).all()


def test_top_keys_all_keys_and_ties_keep_lower_index_first() -> None:
    att = np.array([[[0.25, 0.5, 0.25, 0.0]]], np.float32)
    index, weight, _ = top_keys(att, 4)
    assert index.tolist() == [[[1, 0, 2, 3]]]
    assert weight.tolist() == [[[255, 128, 128, 0]]]


def test_top_keys_stopping_at_each_query_s_span_gives_what_every_key_gives() -> None:
    # A causal mean: query i weighs keys 0..i only (the first queries fewer than k keys,
    # some weights equal); stopping the search at the spans' stops changes nothing.
    rng = np.random.default_rng(0)
    n, k = 3000, 16
    weights = rng.integers(0, 40, size=(2, n, n)).astype(np.float32)
    stops = np.arange(1, n + 1)
    weights[:, np.arange(n)[None, :] >= stops[:, None]] = 0.0
    weights /= np.maximum(weights.sum(-1, keepdims=True), 1)
    cut = top_keys(weights, k, stops=stops)
    whole = top_keys(weights, k)
    for got, want in zip(cut, whole, strict=True):
        np.testing.assert_array_equal(got, want)
    assert cut[0][0, 3].tolist()[:4] == np.argsort(-weights[0, 3], kind="stable")[:4].tolist()


def test_top_keys_u32_when_forced_or_long() -> None:
    att = softmax_rows(np.random.default_rng(2), (2, 3, 50))
    index, _, _ = top_keys(att, 5, index_dtype=np.uint32)
    assert index.dtype == np.uint32
    np.testing.assert_array_equal(index, np.argsort(-att, -1, kind="stable")[..., :5])
    long_row = np.zeros((1, 70000), np.float32)
    long_row[0, 66000] = 1.0
    index, weight, _ = top_keys(long_row, 2)
    assert index.dtype == np.uint32
    assert index[0, 0] == 66000
    assert weight[0].tolist() == [255, 0]
    with pytest.raises(ValueError, match="cannot index"):
        top_keys(long_row, 2, index_dtype=np.uint16)


def test_quantize_rows_error_bound_and_zero_rows() -> None:
    att = softmax_rows(np.random.default_rng(3), (40, 64))
    att[5] = 0.0  # a fully masked query
    weight, rowmax = quantize_rows(att)
    assert weight.dtype == np.uint8
    assert rowmax.dtype == np.float32
    assert rowmax[5] == 0
    assert not weight[5].any()
    error = np.abs(decode(weight, rowmax) - att)
    assert (error <= rowmax[:, None] / 510 + 1e-9).all()


def test_full_head_chunk_decodes_within_bound_at_one_byte_per_value() -> None:
    rng = np.random.default_rng(4)
    trace = AttentionTrace([str(i) for i in range(50)], softmax_rows(rng, (2, 3, 50, 50)))
    arrays = dict(encode_chunk(trace, parse_key("attn:self:1:2", trace)))
    weight, rowmax = arrays["weight"], arrays["rowmax"]
    assert weight.shape == (50, 50)
    exact = trace.attention[1, 2]
    assert (np.abs(decode(weight, rowmax) - exact) <= rowmax[:, None] / 510 + 1e-9).all()
    # One byte per attention value; the only other bytes are one float per row.
    assert weight.nbytes / exact.size == 1
    assert rowmax.nbytes == 4 * exact.shape[0]


def _hidden(arrays: dict[str, Any], shape: tuple[int, ...]) -> Any:
    """Where a ``qk:`` chunk hides a key: its ``mask``, and keys outside each query's ``spans``."""
    hidden = arrays["mask"].astype(bool) if "mask" in arrays else np.zeros(shape, bool)
    if "spans" in arrays:
        keys = np.arange(shape[1])
        hidden |= (keys < arrays["spans"][:, :1]) | (keys >= arrays["spans"][:, 1:])
    return hidden


def test_qk_chunk_reproduces_attention_rows() -> None:
    trace = qk_trace(np.random.default_rng(5))
    stream = trace.stream
    for position in range(stream.num_layers):
        for head in range(stream.num_heads):
            arrays = dict(encode_chunk(trace, parse_key(f"qk:self:{position}:{head}", trace)))
            q, k = arrays["q"], arrays["k"]
            assert arrays["kv_head"].tolist() == [head // 2]
            scores = (q.astype(np.float64) @ k.T.astype(np.float64)) * arrays["scaling"][0]
            scores += arrays["bias"]
            scores[_hidden(arrays, scores.shape)] = -np.inf
            w = np.exp(scores - scores.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            np.testing.assert_allclose(w, stream.attention[position, head], atol=1e-5)
            assert "attention" not in arrays  # recomputed in the browser, not sent twice


def test_qk_chunk_from_multi_head_attention_module() -> None:
    import torch

    from attnscope import MultiHeadAttention

    module = MultiHeadAttention(16, 4, causal=True).eval()
    trace = AttentionTrace.from_module(module, torch.randn(1, 6, 16), list("abcdef"))
    for head in range(4):
        arrays = dict(encode_chunk(trace, parse_key(f"qk:self:0:{head}", trace)))
        scores = arrays["q"].astype(np.float64) @ arrays["k"].T * arrays["scaling"][0]
        if "bias" in arrays:
            scores += arrays["bias"]
        scores[_hidden(arrays, scores.shape)] = -np.inf
        w = np.exp(scores - scores.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        np.testing.assert_allclose(w, trace.attention[0, head], atol=1e-5)


def test_qk_optional_terms() -> None:
    rng = np.random.default_rng(6)
    q = rng.normal(size=(1, 2, 3, 4)).astype(np.float32)
    sinks = np.array([[0.5, -1.0]], np.float32)
    softcap = np.array([30.0], np.float32)
    att = recompute_attention(q, q, np.ones(1, np.float32), softcap=softcap, sinks=sinks)
    stream = AttentionStream(
        att, queries=q, keys=q, scaling=np.ones(1), softcap=softcap, sinks=sinks
    )
    arrays = dict(qk_arrays(stream, 0, 1))
    assert arrays["sink"].tolist() == [-1.0]
    assert arrays["softcap"].tolist() == [30.0]
    assert "bias" not in arrays
    assert "mask" not in arrays


def test_meta_describes_every_stream_and_is_json() -> None:
    source, target = Tokens(["a", "b", "c"], segments=[0, 0, 1]), Tokens(["x", "y"])
    enc = AttentionStream(np.full((2, 4, 3, 3), 1 / 3, np.float32), name="encoder")
    dec = AttentionStream(
        np.full((1, 4, 2, 2), 0.5, np.float32),
        name="decoder",
        query_side="target",
        key_side="target",
        layers=(3,),
    )
    cross = AttentionStream(
        np.full((1, 4, 2, 3), 1 / 3, np.float32),
        name="cross",
        query_side="target",
        key_side="source",
        layers=(3,),
    )
    trace = AttentionTrace.from_streams(source, [enc, dec, cross], target=target)
    meta = json.loads(json.dumps(build_meta(trace, notes=("left out: nothing",))))
    assert meta["protocol"] == 1
    assert list(meta["streams"]) == ["encoder", "decoder", "cross"]
    assert meta["sides"]["source"]["segments"] == [0, 0, 1]
    assert meta["sides"]["target"]["labels"] == ["x", "y"]
    cross_meta = meta["streams"]["cross"]
    assert cross_meta["layers"] == [3]
    assert (cross_meta["q_len"], cross_meta["k_len"]) == (2, 3)
    assert cross_meta["head_dim"] is None
    assert (cross_meta["thumb_rows"], cross_meta["thumb_cols"], cross_meta["top_k"]) == (2, 3, 3)
    assert meta["neuron_unavailable"]
    assert meta["notes"] == ["left out: nothing"]
    assert meta["embedded"] is False


def test_meta_of_qk_trace() -> None:
    meta = build_meta(qk_trace(np.random.default_rng(7)))
    s = meta["streams"]["self"]
    assert meta["neuron_unavailable"] is None
    assert (s["head_dim"], s["num_kv_heads"], s["has_bias"], s["has_mask"]) == (8, 2, True, True)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("thumbs", "malformed"),
        ("top:self", "malformed"),
        ("picture:self", "unknown chunk kind"),
        ("pixels:self", "has no images"),
        ("image:self:0", "has no images"),
        ("top:cross:0", "unknown stream"),
        ("top:self:2", "out of range"),
        ("attn:self:0:4", "head 4 is out of range"),
        ("attn:self:-1:0", "not a non-negative integer"),
        ("qk:self:0:0", "no query/key"),
        (7, "is a string"),
    ],
)
def test_bad_keys_are_explained(key: object, message: str) -> None:
    trace = AttentionTrace(["a", "b"], np.full((2, 4, 2, 2), 0.5, np.float32))
    with pytest.raises(ValueError, match=message):
        parse_key(key, trace)


def test_reply_batches_stay_under_the_cap_and_keep_order() -> None:
    trace = AttentionTrace(
        [str(i) for i in range(40)], softmax_rows(np.random.default_rng(8), (3, 2, 40, 40))
    )
    keys = [f"attn:self:{p}:{h}" for p in range(3) for h in range(2)]
    per_chunk = 40 * 40 + 40 * 4
    messages = list(reply_messages(trace, [*keys, "bad"], max_bytes=2 * per_chunk))
    assert len(messages) == 3
    got = [c["key"] for content, _ in messages for c in content["chunks"]]
    assert got == [*keys, "bad"]
    for content, buffers in messages:
        assert sum(len(b) for b in buffers) <= 2 * per_chunk
        for chunk in content["chunks"]:
            for spec in chunk.get("arrays", []):
                data = buffers[spec["buffer"]]
                dtype = {"u8": np.uint8, "f32": np.float32}[spec["dtype"]]
                assert np.frombuffer(data, dtype).size == np.prod(spec["shape"])
    # A chunk larger than the cap goes in parts (tests/test_messages.py).
    assert all(
        sum(len(b) for b in buffers) <= 10
        for _, buffers in reply_messages(trace, keys[:2], max_bytes=10)
    )


def test_all_keys_cover_every_chunk_current_layer_first() -> None:
    trace = qk_trace(np.random.default_rng(9))
    keys = all_keys(trace, layer=1)
    assert keys[:3] == ["thumbs:self", "stats:self", "top:self:1"]
    assert len(keys) == len(set(keys)) == 2 + 2 * (1 + 1 + 4 + 4)
    for key in keys:
        parse_key(key, trace)


def test_chunk_cache_reuses_and_stays_bounded() -> None:
    trace = AttentionTrace(
        [str(i) for i in range(40)], softmax_rows(np.random.default_rng(10), (2, 3, 40, 40))
    )
    per_head = 40 * 40 + 40 * 4
    cache = ChunkCache(max_bytes=2 * per_head)
    first = cache.encode(trace, parse_key("attn:self:0:0", trace))
    assert cache.encode(trace, parse_key("attn:self:0:0", trace)) is first
    for head in range(3):
        cache.encode(trace, parse_key(f"attn:self:1:{head}", trace))
    assert cache.nbytes == 2 * per_head
    assert cache.encode(trace, parse_key("attn:self:0:0", trace)) is not first
    replies = list(reply_messages(trace, ["attn:self:1:2", "attn:self:1:2"], cache=cache))
    ((content, buffers),) = replies
    assert buffers[0] == buffers[2]
    assert [c["key"] for c in content["chunks"]] == ["attn:self:1:2"] * 2


def test_top_chunk_sends_one_byte_per_value_when_every_key_is_kept() -> None:
    rng = np.random.default_rng(3)
    short = rng.dirichlet(np.ones(6), size=(1, 2, 6)).astype(np.float32)
    trace = AttentionTrace(list("abcdef"), short)
    arrays = dict(encode_chunk(trace, parse_key("top:self:0", trace)))
    assert set(arrays) == {"weight", "rowmax"}
    assert arrays["weight"].nbytes == short[0].size  # one byte per attention value
    decoded = arrays["weight"] / 255 * arrays["rowmax"][..., None]
    assert np.abs(decoded - short[0]).max() <= arrays["rowmax"].max() / 510 + 1e-7


def test_a_mask_rule_travels_as_spans_not_as_a_square() -> None:
    # A causal or windowed mask is 2 numbers a query in the qk: chunk: at 32768 tokens the
    # square it says would be 1 GB to build, deflate, send and inflate.
    n = 6
    q = np.random.default_rng(7).normal(size=(1, 1, n, 4)).astype(np.float32)
    window = np.stack([np.maximum(0, np.arange(n) - 2), np.arange(1, n + 1)], axis=1)
    stream = AttentionStream(queries=q, keys=q, scaling=np.ones(1), key_spans=window[None])
    arrays = dict(qk_arrays(stream, 0, 0))
    assert "mask" not in arrays
    assert arrays["spans"].dtype == np.uint32
    assert arrays["spans"].tolist() == window.tolist()
    scores = arrays["q"].astype(np.float64) @ arrays["k"].T.astype(np.float64)
    scores[_hidden(arrays, scores.shape)] = -np.inf
    w = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(w / w.sum(-1, keepdims=True), stream.attention[0, 0], atol=1e-6)
