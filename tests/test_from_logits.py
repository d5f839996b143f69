"""Top keys and thumbnails computed from q/k scores equal those of the materialised weights."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from attnscope import AttentionStream
from attnscope.encode.arrays import stream_thumbnails, stream_top_keys
from attnscope.encode.from_logits import any_thumbnails, logit_top_keys
from attnscope.trace import rows as rows_module
from attnscope.trace.rows import logit_heads, logit_rows

N = 160


def _spans(n: int, window: int | None = None, pad: int = 0) -> np.ndarray[Any, Any]:
    stop = np.arange(1, n + 1, dtype=np.int32)
    start = np.full(n, pad, np.int32) if window is None else np.maximum(stop - window, pad)
    return np.stack([np.minimum(start, stop), stop], 1)[None]


def _stream(kind: str, seed: int = 0) -> AttentionStream:
    rng = np.random.default_rng(seed)
    layers, heads, kv, d = 2, 4, 2, 8
    q = rng.normal(size=(layers, heads, N, d)).astype(np.float32) * 1.5
    k = rng.normal(size=(layers, kv, N, d)).astype(np.float32)
    fields: dict[str, Any] = {"queries": q, "keys": k, "scaling": np.float32(d**-0.5)}
    if kind == "causal":
        fields["key_spans"] = _spans(N)
    elif kind == "window_padded":
        fields["key_spans"] = _spans(N, window=40, pad=3)
    elif kind == "bias_softcap_sinks":
        fields["bias"] = rng.normal(size=(1, heads, N, N)).astype(np.float32)
        fields["softcap"] = np.float32(2.0)
        fields["sinks"] = np.array([[0.5, -np.inf, 2.0, 1.0]] * layers, np.float32)
        fields["mask"] = np.triu(np.ones((N, N), bool), 1)[None, None]
    elif kind == "ties":  # repeated keys and a zero query: exact ties everywhere
        k[:, :, 1::2] = k[:, :, 0:-1:2]
        q[:, :, 7] = 0
        fields["key_spans"] = _spans(N)
    return AttentionStream(**fields)


def _weights_twin(stream: AttentionStream) -> AttentionStream:
    return AttentionStream(stream.attention.copy(), sinks=stream.sinks)


@pytest.mark.parametrize("kind", ["plain", "causal", "window_padded", "bias_softcap_sinks", "ties"])
@pytest.mark.parametrize("k", [1, 5, 64, N])
def test_top_keys_from_scores_equal_those_of_the_weights(
    kind: str, k: int, monkeypatch: Any
) -> None:
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", 40 * N)  # several blocks of 40 rows
    stream = _stream(kind)
    for position in range(stream.num_layers):
        index, weight, rowmax = logit_top_keys(stream, position, k)
        want_index, want_weight, want_rowmax = stream_top_keys(_weights_twin(stream), position, k)
        np.testing.assert_allclose(rowmax, want_rowmax, rtol=1e-5)
        assert np.abs(weight.astype(int) - want_weight).max() <= 1
        # Equal where the weights differ by more than float rounding; the ties keep lower first.
        assert (index == want_index).mean() > 0.999
        decoded = weight / 255 * rowmax[..., None]
        chosen = np.take_along_axis(stream.attention[position], index.astype(np.intp), axis=-1)
        assert np.abs(decoded - chosen).max() <= rowmax.max() / 510 + 1e-6


@pytest.mark.parametrize("kind", ["plain", "causal", "window_padded", "bias_softcap_sinks"])
def test_every_head_at_once_scores_as_each_head_alone(kind: str) -> None:
    stream = _stream(kind)  # 4 query heads over 2 key heads
    for rows, stop in ((slice(0, N), N), (slice(50, 90), 95), (slice(150, 151), 3)):
        together = logit_heads(stream, 1, rows, stop)
        alone = torch.stack([logit_rows(stream, 1, h, rows, stop) for h in range(4)])
        assert together.shape == alone.shape == (4, rows.stop - rows.start, stop)
        assert torch.equal(together.isinf(), alone.isinf())
        finite = alone.isfinite()
        torch.testing.assert_close(together[finite], alone[finite], rtol=1e-6, atol=1e-6)


def test_ties_keep_the_lower_key_first() -> None:
    stream = _stream("ties")
    index, _, _ = logit_top_keys(stream, 0, 6)
    want, _, _ = stream_top_keys(_weights_twin(stream), 0, 6)
    np.testing.assert_array_equal(index[:, 7], want[:, 7])  # the zero query: keys 0..5
    np.testing.assert_array_equal(index[:, :3], want[:, :3])  # fewer visible keys than k


@pytest.mark.parametrize("kind", ["plain", "causal", "bias_softcap_sinks"])
def test_thumbnails_from_scores_equal_those_of_the_weights(kind: str, monkeypatch: Any) -> None:
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", 30 * N)
    stream = _stream(kind)
    for rows, cols, first in [(64, 64, 0), (13, 50, 0), (20, 64, 100)]:
        got = any_thumbnails(stream, rows, cols, first_row=first, sample=3)
        want = stream_thumbnails(_weights_twin(stream), rows, cols, sample=3, first_row=first)
        assert np.abs(got.astype(int) - want).max() <= 1


def test_scores_are_read_a_block_of_one_head_at_a_time(monkeypatch: Any) -> None:
    block = 25 * N
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", block)
    seen: list[int] = []
    logits = rows_module.logit_rows

    def watched(*args: Any, **kwargs: Any) -> torch.Tensor:
        out = logits(*args, **kwargs)
        seen.append(out.numel())
        return out

    import attnscope.encode.from_logits as from_logits

    monkeypatch.setattr(from_logits, "logit_rows", watched)
    stream = _stream("causal")
    logit_top_keys(stream, 1, 64)
    any_thumbnails(stream, 64, 64)
    assert seen
    assert max(seen) <= block
    full = (1 + stream.num_layers) * stream.num_heads * N * N  # one layer's top keys, thumbnails
    assert sum(seen) < 0.65 * full  # the causal half is skipped
