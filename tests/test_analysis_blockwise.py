"""The analysis reads attention a block of one head's rows at a time, each layer once.

On a real MiniLM trace (weights recomputed from q and k, as capture keeps
them): blocks of a few rows give the statistics, means, rollout and chunks
that one block per head gives, and the widget's analysis chunks read every
layer exactly once between them, never more than a block at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope import AttentionStream, AttentionTrace
from attnscope.analysis import heads_max, heads_mean, rollout, statistic_table
from attnscope.encode.chunks import encode_chunk, parse_key
from attnscope.trace import rows as rows_module
from attnscope.trace.rows import row_blocks

TEXT = "The cat sat on the mat. The cat sat on the mat, and then it slept."


def capture(minilm: tuple[Any, Any]) -> AttentionTrace:
    model, tokenizer = minilm
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    assert not trace.stream.has_weights  # recomputed from q and k
    return trace


def analysis(trace: AttentionTrace) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = dict(statistic_table(trace))
    out["rollout"] = rollout(trace)
    out["mean"] = np.stack([heads_mean(trace, layer) for layer in trace.stream.layers])
    out["max"] = np.stack([heads_max(trace, layer, heads=[1, 4]) for layer in trace.stream.layers])
    for position in range(trace.stream.num_layers):
        for name, array in encode_chunk(trace, parse_key(f"pseudo:self:{position}", trace)):
            out[f"pseudo {position} {name}"] = array
    return out


def test_blocks_of_a_few_rows_give_what_one_block_per_head_gives(
    minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = analysis(capture(minilm))
    trace = capture(minilm)
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", 5 * len(trace.tokens))  # 5 rows a block
    assert len(list(row_blocks(trace.stream.q_len, trace.stream.k_len))) > 3
    blocks = analysis(trace)
    assert list(blocks) == list(whole)
    assert not np.isnan(whole["induction"]).any()  # the text repeats itself
    for name, expected in whole.items():
        if name.endswith("weight"):  # one byte per weight: a rounding may land one step off
            assert np.abs(blocks[name].astype(int) - expected).max() <= 1, name
        else:
            np.testing.assert_allclose(blocks[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_analysis_chunks_read_each_layer_once_a_block_at_a_time(
    minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = capture(minilm)
    stream = trace.stream
    block = 4 * len(trace.tokens)
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", block)
    reads = watch_reads(monkeypatch)

    def refused(self: AttentionStream, which: Any) -> Any:
        raise AssertionError(f"materialised {which}")

    monkeypatch.setattr(AttentionStream, "_materialise", refused)
    encode_chunk(trace, parse_key("stats:self", trace))
    for position in (3, 2, 4, 1, 5, 0):  # the widget's order when it opens on layer 3
        encode_chunk(trace, parse_key(f"pseudo:self:{position}", trace))
    per_layer = stream.num_heads * len(list(row_blocks(stream.q_len, stream.k_len)))
    sizes = [size for _, size in reads]
    assert len(sizes) == stream.num_layers * per_layer
    assert max(sizes) <= block
    # The functions behind them read blocks too (once per call: they keep nothing).
    statistic_table(trace)
    rollout(trace)
    sizes = [size for _, size in reads]
    assert len(sizes) == 3 * stream.num_layers * per_layer
    assert max(sizes) <= block


def test_a_long_page_s_mean_chunks_come_from_the_stats_pass_without_a_second_reading(
    minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past MEANS_KEPT_BYTES (a long input) the means are not kept; without a rollout
    # pseudo-head the stats pass encodes each layer's pseudo: chunk from its mean instead.
    from attnscope.encode import analysis_chunks

    monkeypatch.setattr(analysis_chunks, "pseudo_heads", lambda stream: ["mean"])
    alone = capture(minilm)
    expected = [
        encode_chunk(alone, parse_key(f"pseudo:self:{p}", alone))
        for p in range(alone.stream.num_layers)
    ]
    trace = capture(minilm)
    monkeypatch.setattr(analysis_chunks, "MEANS_KEPT_BYTES", 0)
    encode_chunk(trace, parse_key("stats:self", trace))
    reads = watch_reads(monkeypatch)
    for position, chunk in enumerate(expected):
        found = encode_chunk(trace, parse_key(f"pseudo:self:{position}", trace))
        assert [name for name, _ in found] == [name for name, _ in chunk]
        for (name, array), (_, want) in zip(found, chunk, strict=True):
            if name == "weight":
                assert np.abs(array.astype(int) - want.astype(int)).max() <= 1, name
            elif name == "rowmax":
                np.testing.assert_allclose(array, want, rtol=1e-6)
    assert reads == []  # no weight read again


def test_a_causal_layer_is_read_only_up_to_each_block_s_last_visible_key(
    minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under a causal mask the statistics and head means read each block of rows only up
    # to the last key those rows see (layer_rows(..., narrow=True)): about half the
    # weights, with what reading every key gives.
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    tokenizer = minilm[1]
    config = GPT2Config(
        n_layer=2, n_head=3, n_embd=24, n_positions=64, vocab_size=tokenizer.vocab_size
    )
    model = GPT2Model(config).eval()
    trace = attnscope.capture(model, TEXT + " " + TEXT, tokenizer=tokenizer)  # repeats
    stream = trace.stream
    assert stream.key_spans is not None
    assert stream.mask is None
    monkeypatch.setattr(rows_module, "BLOCK_VALUES", 16 * stream.k_len)  # 8-row narrow blocks
    reads = watch_reads(monkeypatch)
    narrow = statistic_table(trace)
    means = [heads_mean(trace, layer) for layer in stream.layers]
    everything = stream.num_layers * stream.num_heads * stream.q_len * stream.k_len
    # statistics and means, each about half of every layer
    assert sum(size for _, size in reads) < 0.7 * 2 * everything
    monkeypatch.setattr(
        attnscope.analysis.access, "layer_rows", _wide(attnscope.analysis.access.layer_rows)
    )
    from attnscope.analysis import aggregate, statistics

    monkeypatch.setattr(statistics, "layer_rows", _wide(statistics.layer_rows))
    monkeypatch.setattr(aggregate, "layer_rows", _wide(aggregate.layer_rows))
    wide = statistic_table(trace)
    assert not np.isnan(wide["induction"]).any()
    for name, expected in wide.items():
        np.testing.assert_allclose(narrow[name], expected, rtol=1e-5, atol=1e-7, err_msg=name)
    for layer, mean in zip(stream.layers, means, strict=True):
        np.testing.assert_allclose(mean, heads_mean(trace, layer), rtol=1e-6, atol=1e-8)


def watch_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """``(layer position, weights read)`` of every ``attention_rows`` call from now on."""
    reads: list[tuple[int, int]] = []
    compute = AttentionStream.attention_rows

    def watched(
        self: AttentionStream, position: int, head: int, rows: Any, stop: Any = None
    ) -> torch.Tensor:
        out = compute(self, position, head, rows, stop)
        reads.append((position, out.numel()))
        return out

    monkeypatch.setattr(AttentionStream, "attention_rows", watched)
    return reads


def _wide(layer_rows: Any) -> Any:
    """``layer_rows`` that reads every key whatever ``narrow`` asks."""

    def every_key(*args: Any, narrow: bool = False, **kwargs: Any) -> Any:
        return layer_rows(*args, **kwargs)

    return every_key
