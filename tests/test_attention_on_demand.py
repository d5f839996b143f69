"""Attention computed on demand from q and k: exact, blockwise, never all at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope import AttentionStream, AttentionTrace
from attnscope.encode.chunks import all_keys, encode_chunk, parse_key
from attnscope.errors import AttnscopeError
from attnscope.trace import key_spans
from attnscope.trace import rows as rows_module
from attnscope.trace import stream as stream_module
from attnscope.trace.key_spans import blocked_from_spans, spans_from_blocked
from attnscope.trace.recompute import recompute_attention


def _causal_qk(layers: int, heads: int, n: int, d: int = 8, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    causal = np.stack([np.zeros(n, np.int32), np.arange(1, n + 1, dtype=np.int32)], 1)
    return {
        "queries": rng.normal(size=(layers, heads, n, d)).astype(np.float32),
        "keys": rng.normal(size=(layers, heads, n, d)).astype(np.float32),
        "scaling": np.full(layers, d**-0.5, np.float32),
        "key_spans": causal[None],
    }


@pytest.mark.parametrize(
    "blocked",
    [
        np.triu(np.ones((6, 6), bool), 1),  # causal
        np.triu(np.ones((6, 6), bool), 1) | np.tril(np.ones((6, 6), bool), -3),  # window 3
        np.broadcast_to(np.array([True, True, False, False, False, False]), (6, 6)),  # left pad
        np.ones((2, 3), bool),  # a query that sees nothing
    ],
)
@pytest.mark.parametrize("block", [6, 7, 2**24])  # a row per block, uneven blocks, one block
def test_key_spans_stand_for_contiguous_masks(
    blocked: np.ndarray[Any, Any], block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_spans, "SPAN_BLOCK_VALUES", block)
    spans = spans_from_blocked(blocked)
    assert spans is not None
    assert spans.shape == (blocked.shape[0], 2)
    np.testing.assert_array_equal(blocked_from_spans(spans, blocked.shape[1]).numpy(), blocked)


@pytest.mark.parametrize("block", [3, 2**24])
def test_a_mask_with_holes_is_no_span(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_spans, "SPAN_BLOCK_VALUES", block)
    holes = np.zeros((4, 3), bool)
    holes[3, 1] = True  # the last row, in the last block: [False, True, False]
    assert spans_from_blocked(holes) is None


def test_rows_from_spans_equal_the_dense_recompute() -> None:
    fields = _causal_qk(2, 3, 37)
    dense = np.triu(np.ones((37, 37), bool), 1)[None, None]
    expected = recompute_attention(fields["queries"], fields["keys"], fields["scaling"], mask=dense)
    stream = AttentionStream(**fields)
    assert not stream.has_weights
    np.testing.assert_allclose(stream.attention, expected, atol=1e-6)
    picked = np.array([0, 5, 36])
    np.testing.assert_allclose(
        stream.attention_rows(1, 2, picked).numpy(), expected[1, 2, picked], atol=1e-6
    )


def test_too_large_attention_is_refused_with_its_size_and_the_fix(monkeypatch: Any) -> None:
    monkeypatch.setattr(stream_module, "MAX_ATTENTION_BYTES", 1 << 20)
    stream = AttentionStream(**_causal_qk(2, 2, 600))
    with pytest.raises(AttnscopeError) as caught:
        _ = stream.attention
    message = str(caught.value)
    assert "2 layer(s) x 2 head(s) x 600 x 600 float32" in message
    assert "5.8 MB" in message  # 2 * 2 * 600 * 600 * 4 bytes
    assert "layers=[...]" in message
    assert "head_attention" in message
    with pytest.raises(AttnscopeError, match="one head"):
        stream.head_attention(0, 0)


def test_no_path_holds_more_than_a_block_of_one_head(monkeypatch: Any, tmp_path: Path) -> None:
    """A trace too large to materialise still gives every chunk, a page and its check."""
    n = 300
    block = 1 << 13  # 27 rows of 300 keys: every reader needs a dozen blocks per head
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", block)
    monkeypatch.setattr(stream_module, "MAX_ATTENTION_BYTES", 1024)
    fields = _causal_qk(2, 2, n)
    rows = np.array([0, 150, 299])
    reference = recompute_attention(
        fields["queries"][:, :, rows],
        fields["keys"],
        fields["scaling"],
        mask=np.triu(np.ones((n, n), bool), 1)[rows][None, None],
    )
    stream = AttentionStream(**fields, reference=reference, reference_rows=rows)
    trace = AttentionTrace.from_streams(attnscope.Tokens([str(i) for i in range(n)]), [stream])

    largest: list[int] = []
    compute = AttentionStream.attention_rows

    def watched(
        self: AttentionStream, position: int, head: int, rows: Any, stop: Any = None
    ) -> torch.Tensor:
        out = compute(self, position, head, rows, stop)
        largest.append(out.numel())
        return out

    monkeypatch.setattr(AttentionStream, "attention_rows", watched)
    with pytest.raises(AttnscopeError, match=r"more than the 1\.0 kB limit"):
        _ = trace.attention
    for key in all_keys(trace):
        encode_chunk(trace, parse_key(key, trace))
    assert trace.check() <= 1e-5
    attnscope.save_html(trace, tmp_path / "long.html")
    assert largest
    assert max(largest) <= block


def test_old_files_with_float32_weights_still_load(tmp_path: Path) -> None:
    weights = np.full((1, 2, 3, 3), 1 / 3, np.float32)
    header = {
        "format": "attnscope.AttentionTrace",
        "version": 1,
        "source": {"labels": list("abc"), "raw": list("abc"), "kinds": None, "segments": None},
        "target": None,
        "streams": [{"name": "self", "query_side": "source", "key_side": "source", "layers": [4]}],
        "metadata": {},
        "notes": [],
    }
    path = tmp_path / "v1.npz"
    np.savez_compressed(path, header=np.array(json.dumps(header)), **{"self/attention": weights})
    trace = AttentionTrace.load(path)
    assert trace.stream.layers == (4,)
    np.testing.assert_array_equal(trace.attention, weights)


def test_qk_only_streams_round_trip(tmp_path: Path) -> None:
    stream = AttentionStream(**_causal_qk(2, 2, 9))
    trace = AttentionTrace.from_streams(attnscope.Tokens(list("abcdefghi")), [stream])
    loaded = AttentionTrace.load(trace.save(tmp_path / "qk"))
    assert not loaded.stream.has_weights
    np.testing.assert_array_equal(loaded.stream.key_spans, stream.key_spans)
    np.testing.assert_allclose(loaded.attention, trace.attention)


def test_float16_weights_stay_float16() -> None:
    weights = np.full((1, 1, 2, 2), 0.5, np.float16)
    stream = AttentionStream(weights)
    assert stream.weights is not None
    assert stream.weights.dtype == np.float16
    assert stream.attention.dtype == np.float32
