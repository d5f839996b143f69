"""``top:<stream>:<layer>:<first row>``: one block of a layer's top keys, equal to its rows of the
whole-layer ``top:`` chunk, computed from those rows alone; bad keys explained."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope.encode.meta as meta_module
from attnscope import AttentionStream, AttentionTrace, AttentionWidget, Tokens, compare
from attnscope.encode.chunks import encode_chunk, parse_key
from attnscope.encode.comparison import ComparisonChunks
from attnscope.encode.keys import ChunkKey
from attnscope.encode.meta import build_meta, stream_top_block
from attnscope.trace import rows as rows_module
from test_from_logits import N, _stream

BLOCK = 64  # with TOP_BLOCK_SCORES = 64 * N below: blocks 0, 64 and 128 (32 rows)


def _trace(kind: str) -> AttentionTrace:
    tokens = Tokens([f"t{i}" for i in range(N)])
    if kind == "weights":
        return AttentionTrace(tokens, _stream("causal").attention)
    return AttentionTrace.from_streams(tokens, [_stream(kind)])


@pytest.fixture
def blocks_of_64(monkeypatch: Any) -> None:
    monkeypatch.setattr(meta_module, "TOP_BLOCK_SCORES", BLOCK * N)


@pytest.mark.usefixtures("blocks_of_64")
@pytest.mark.parametrize(
    "kind", ["plain", "causal", "window_padded", "bias_softcap_sinks", "ties", "weights"]
)
@pytest.mark.parametrize("top_k", [5, N])  # N: every key kept, weights in key order
@pytest.mark.parametrize("step", [None, 24])  # 24 rows of 4 heads a product: blocks of 64 split
def test_each_block_equals_its_rows_of_the_whole_layer_chunk(
    kind: str, top_k: int, step: int | None, monkeypatch: Any
) -> None:
    monkeypatch.setattr(meta_module, "TOP_K", top_k)
    if step is not None:
        monkeypatch.setattr(rows_module, "BLOCK_VALUES", step * 4 * N)
    trace = _trace(kind)
    stream = trace.stream
    assert stream_top_block(stream) == BLOCK
    for layer in range(stream.num_layers):
        whole = encode_chunk(trace, parse_key(f"top:self:{layer}", trace))
        names = ["index", "weight", "rowmax"] if top_k < N else ["weight", "rowmax"]
        assert [name for name, _ in whole] == names
        for first in range(0, N, BLOCK):
            block = encode_chunk(trace, parse_key(f"top:self:{layer}:{first}", trace))
            assert [name for name, _ in block] == names
            for (_, got), (_, want) in zip(block, whole, strict=True):
                assert got.dtype == want.dtype
                assert got.shape == (4, min(BLOCK, N - first), *want.shape[2:])
                np.testing.assert_array_equal(got, want[:, first : first + BLOCK])


@pytest.mark.usefixtures("blocks_of_64")
@pytest.mark.parametrize("kind", ["causal", "ties"])  # ties: rows redone from their weights
def test_a_block_reads_only_its_own_rows(kind: str, monkeypatch: Any) -> None:
    trace = _trace(kind)
    asked: list[tuple[int, int]] = []

    def logging(name: str) -> Any:
        real = getattr(rows_module, name)

        def logged(stream: Any, position: int, *args: Any, **options: Any) -> Any:
            picked = np.arange(N)[args[-2] if name == "logit_heads" else args[1]]
            asked.append((int(picked.min()), int(picked.max())))
            return real(stream, position, *args, **options)

        return logged

    for name in ("logit_heads", "compute_rows"):
        monkeypatch.setattr(f"attnscope.encode.from_logits.{name}", logging(name))
    encode_chunk(trace, parse_key("top:self:1:0", trace))
    assert len(asked) > 1  # the scores, then rows redone (fewer visible keys than k)
    asked.clear()
    encode_chunk(trace, parse_key("top:self:1:64", trace))
    assert asked
    assert all(low >= 64 and high < 128 for low, high in asked)


def test_block_size_grows_as_keys_shrink_and_the_page_has_none() -> None:
    def stream(q_len: int, k_len: int) -> AttentionStream:
        q = np.zeros((1, 1, q_len, 2), np.float32)
        k = np.zeros((1, 1, k_len, 2), np.float32)
        return AttentionStream(queries=q, keys=k)

    assert [stream_top_block(stream(8, n)) for n in (4096, 8192, 1000, 8)] == [64, 32, 256, 32768]
    assert stream_top_block(stream(8, 1 << 20)) == meta_module.TOP_BLOCK_MIN
    trace = _trace("plain")
    assert build_meta(trace)["streams"]["self"]["top_block"] == stream_top_block(trace.stream)
    assert build_meta(trace, embedded=True)["streams"]["self"]["top_block"] is None


@pytest.mark.usefixtures("blocks_of_64")
def test_the_key_round_trips() -> None:
    trace = _trace("plain")
    block = stream_top_block(trace.stream)
    parsed = parse_key(f"top:self:1:{block}", trace)
    assert parsed == ChunkKey("top", "self", 1, first_row=block)
    assert parsed.key == f"top:self:1:{block}"


@pytest.mark.usefixtures("blocks_of_64")
@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "top:self:0:70",
            r"first row 70 in 'top:self:0:70' does not start a block: .* blocks of "
            r"64 query rows .*top_block.*use a multiple of 64, e\.g\. 64",
        ),
        ("top:self:0:192", r"first row 192 is out of range: stream 'self' has 160 query rows"),
        ("top:self:2:0", r"layer position 2 is out of range: stream 'self' has 2 layers"),
        ("top:self:0:-64", r"'-64' in 'top:self:0:-64' is not a non-negative integer"),
        ("top:self:0:x", r"'x' in 'top:self:0:x' is not a non-negative integer"),
        ("top:cross:0:0", r"unknown stream 'cross'"),
        ("top:self:0:0:0", r"malformed key .*top:<stream>:<layer>:<first row>"),
    ],
)
def test_bad_block_keys_are_explained(key: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_key(key, _trace("plain"))


@pytest.mark.usefixtures("blocks_of_64")
def test_the_live_widget_answers_blocks_and_explains_bad_ones() -> None:
    trace = _trace("causal")
    block = stream_top_block(trace.stream)
    widget = AttentionWidget(trace)
    assert widget._meta["streams"]["self"]["top_block"] == block
    ((content, buffers),) = widget.answer(
        {"type": "request", "keys": [f"top:self:1:{block}", "top:self:1:3"]}
    )
    good, bad = content["chunks"]
    assert [(a["name"], a["shape"]) for a in good["arrays"]] == [
        ("index", [4, BLOCK, 64]),
        ("weight", [4, BLOCK, 64]),
        ("rowmax", [4, BLOCK]),
    ]
    whole = dict(encode_chunk(trace, parse_key("top:self:1", trace)))
    got = np.frombuffer(buffers[good["arrays"][1]["buffer"]], np.uint8).reshape(4, -1, 64)
    np.testing.assert_array_equal(got, whole["weight"][:, block : 2 * block])
    assert "does not start a block" in bad["error"]


def test_a_comparison_sends_whole_layers_and_says_so_for_blocks() -> None:
    trace = _trace("weights")
    chunks = ComparisonChunks(compare(trace, trace))
    assert chunks.meta()["streams"]["self"]["top_block"] is None
    with pytest.raises(ValueError, match=r"whole layer at a time; ask for diff/top:self:0\."):
        chunks.parse("diff/top:self:0:0")


@pytest.mark.usefixtures("blocks_of_64")
@pytest.mark.parametrize("kind", ["causal", "bias_softcap_sinks"])
def test_blocks_write_their_scores_into_one_buffer(kind: str) -> None:
    # A block's scores in fresh memory leave a hole that the kept results split: the
    # process grew by a block per block (13 GB over a 32768-token layer's blocks).
    trace = _trace(kind)
    places = set()
    for layer in range(trace.stream.num_layers):
        for first in range(0, N, BLOCK):
            encode_chunk(trace, parse_key(f"top:self:{layer}:{first}", trace))
            places.add(rows_module.work_buffer(1, "cpu").data_ptr())
        encode_chunk(trace, parse_key(f"top:self:{layer}", trace))
        places.add(rows_module.work_buffer(1, "cpu").data_ptr())
    assert len(places) == 1
