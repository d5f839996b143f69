"""``attnscope.scan``: head statistics over many inputs equal each input's own ``head_stats``.

Real parts: the MiniLM (real weights, WordPiece) and tiny random causal models
from configs (tests/capture_models.py), captured through the public API.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import pandas as pd
import pytest

import attnscope
import attnscope.sources
from attnscope.analysis import STATISTICS
from attnscope.analysis.scan import head_ranking
from attnscope.errors import AttnscopeError
from capture_models import bpe_tokenizer
from test_capture_generate import MESSAGES, TEMPLATE, causal_lm

TEXTS = ["The cat sat on the mat.", "A dog ran home, and the dog slept.", "Why?"]


def _expected(traces: list[Any], layers: list[int] | None = None) -> pd.DataFrame:
    """The reference: head_stats of each trace, with its index as ``input``."""
    frames = []
    for index, trace in enumerate(traces):
        frame = attnscope.head_stats(trace)
        if layers is not None:
            frame = frame[frame["layer"].isin(layers)]
        frame.insert(0, "input", index)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_scan_equals_head_stats_of_each_input_minilm(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    df = attnscope.scan(model, TEXTS, tokenizer=tokenizer)
    traces = [attnscope.capture(model, text, tokenizer=tokenizer) for text in TEXTS]
    assert list(df.columns) == ["input", "layer", "head", *STATISTICS]
    assert df.shape == (len(TEXTS) * 6 * 12, 3 + len(STATISTICS))
    pd.testing.assert_frame_equal(df, _expected(traces), check_dtype=False)
    assert df.attrs["tokens"] == [len(t.tokens) for t in traces]
    # The inputs differ, so their rows must too: the frame is not one input repeated.
    assert not np.allclose(df[df["input"] == 0]["entropy"], df[df["input"] == 1]["entropy"])
    ranked = head_ranking(df, "prev")
    assert ranked["mean"].is_monotonic_decreasing
    for row in ranked.head(5).itertuples():
        per_input = [
            float(attnscope.head_stats(t)["prev"][row.layer * 12 + row.head]) for t in traces
        ]
        assert row.mean == pytest.approx(np.mean(per_input))
        assert row.std == pytest.approx(np.std(per_input))
        assert row.strongest_input == int(np.argmax(per_input))
        assert row.strongest == pytest.approx(max(per_input))


def test_scan_mixes_traces_chats_and_text_on_a_causal_model() -> None:
    model, _ = causal_lm("qwen2")  # grouped-query attention, byte-level BPE
    tokenizer = copy.deepcopy(bpe_tokenizer())
    tokenizer.chat_template = TEMPLATE
    made = attnscope.capture(model, "The quick brown fox jumps.", tokenizer=tokenizer)
    inputs: list[Any] = [made, MESSAGES, "the lazy dog, the lazy dog."]
    df = attnscope.scan(model, inputs, tokenizer=tokenizer, statistics=["prev", "induction"])
    traces = [made, *(attnscope.capture(model, x, tokenizer=tokenizer) for x in inputs[1:])]
    expected = _expected(traces)[["input", "layer", "head", "prev", "induction"]]
    pd.testing.assert_frame_equal(df, expected, check_dtype=False)
    # The repeated phrase gives an induction score (NaN only for inputs that repeat nothing).
    assert df[df["input"] == 2]["induction"].notna().all()


def test_scan_with_layers_and_generation_options() -> None:
    model, tokenizer = causal_lm("gpt2")
    df = attnscope.scan(
        model, ["The quick brown", "the lazy"], tokenizer=tokenizer, layers=[1], max_new_tokens=3
    )
    assert sorted(set(df["layer"])) == [1]
    traces = [
        attnscope.capture(model, t, tokenizer=tokenizer, layers=[1], max_new_tokens=3)
        for t in ["The quick brown", "the lazy"]
    ]
    assert all(t.prompt_length is not None for t in traces)
    pd.testing.assert_frame_equal(df, _expected(traces), check_dtype=False)


def test_scan_of_traces_needs_no_model_and_picks_layers() -> None:
    rng = np.random.default_rng(0)
    weights = rng.random((3, 2, 5, 5)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    traces = [attnscope.AttentionTrace(list("abcab"), weights[:, :, :, :]) for _ in range(2)]
    df = attnscope.scan(None, traces, layers=[0, 2])
    assert df.shape == (2 * 2 * 2, 3 + len(STATISTICS))
    pd.testing.assert_frame_equal(df, _expected(traces, [0, 2]), check_dtype=False)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call scan makes to capture (none may happen for bad input)."""
    calls: list[Any] = []
    real = attnscope.sources.capture

    @functools.wraps(real)
    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(attnscope.sources, "capture", spy)
    return calls


@pytest.mark.parametrize(
    ("inputs", "options", "match"),
    [
        ("The cat", {}, r"inputs must be a list of inputs; got a str"),
        ([], {}, r"inputs is empty"),
        (["ok", 5], {}, r"inputs\[1\] is a int; expected a string"),
        (["ok", {"role": "user", "content": "Hi"}], {}, r"pass inputs=\[messages\]"),
        (["ok", "  "], {}, r"inputs\[1\] is an empty string"),
        (["ok"], {"statistics": ["sinks"]}, r"names 'sinks', which is not a head statistic"),
        (["ok"], {"layers": [9]}, r"names layer 9, but the model has 6 layers"),
        (["ok"], {"layers": "0"}, r"layers must be a list of layer indices"),
        (["ok"], {"text": "x"}, r"text= is set by scan"),
        (["ok"], {"do_sample": True}, r"pass max_new_tokens=N"),
        (["ok"], {"stream": "cross"}, r"stream='cross' is not in this trace"),
        (["ok", "ok", "word " * 600], {}, r"inputs\[2\] is 602 tokens long .* at most 512"),
    ],
)
def test_bad_input_raises_before_any_capture(
    minilm: tuple[Any, Any], counted: list[Any], inputs: Any, options: Any, match: str
) -> None:
    model, tokenizer = minilm
    if options.get("stream"):  # a trace among the inputs lacks the stream: refused first
        inputs = ["ok", attnscope.capture(model, "ok", tokenizer=tokenizer)]
        counted.clear()
    with pytest.raises(AttnscopeError, match=match):
        attnscope.scan(model, inputs, tokenizer=tokenizer, **options)
    assert counted == []


def test_a_trace_without_the_asked_layers_and_a_missing_model_are_refused() -> None:
    trace = attnscope.AttentionTrace(list("ab"), np.full((1, 1, 2, 2), 0.5, np.float32))
    with pytest.raises(AttnscopeError, match=r"inputs\[0\] is a trace holding layers \[0\]"):
        attnscope.scan(None, [trace], layers=[3])
    with pytest.raises(AttnscopeError, match=r"model is None, but inputs\[1\] is a text input"):
        attnscope.scan(None, [trace, "some text"])


def test_head_ranking_names_what_it_needs() -> None:
    frame = pd.DataFrame({"layer": [0], "head": [0], "prev": [0.5]})
    with pytest.raises(
        AttnscopeError, match="head_ranking needs a scan's DataFrame with column 'input'"
    ):
        head_ranking(frame, "prev")


def test_scan_of_a_decoder_stream() -> None:
    from capture_models import tiny_model, tokenizer_for

    tokenizer = tokenizer_for("t5", None)
    model = tiny_model("t5", len(tokenizer))
    texts = ["The cat sat on the mat.", "A dog ran."]
    df = attnscope.scan(model, texts, tokenizer=tokenizer, stream="decoder", target="The cat.")
    traces = [attnscope.capture(model, t, tokenizer=tokenizer, target="The cat.") for t in texts]
    frames = []
    for index, trace in enumerate(traces):
        frame = attnscope.head_stats(trace, stream="decoder")
        frame.insert(0, "input", index)
        frames.append(frame)
    pd.testing.assert_frame_equal(df, pd.concat(frames, ignore_index=True), check_dtype=False)
    assert df.attrs["tokens"] == [len(traces[0].target)] * 2  # decoder rows: the target's


def test_each_trace_is_let_go_before_the_next_capture(
    minilm: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import weakref

    model, tokenizer = minilm
    made: list[weakref.ref[Any]] = []
    alive_at_capture: list[int] = []
    real = attnscope.sources.capture

    @functools.wraps(real)
    def spy(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive_at_capture.append(sum(ref() is not None for ref in made))
        trace = real(*args, **kwargs)
        made.append(weakref.ref(trace))
        return trace

    monkeypatch.setattr(attnscope.sources, "capture", spy)
    df = attnscope.scan(model, TEXTS, tokenizer=tokenizer, statistics=["sink"])
    assert len(made) == len(TEXTS)
    assert alive_at_capture == [0, 0, 0]  # no earlier trace survives into the next capture
    gc.collect()
    assert all(ref() is None for ref in made)
    assert df.shape == (len(TEXTS) * 72, 4)
