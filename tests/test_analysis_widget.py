"""The analysis in the widget, Python side: stats and pseudo-head chunks, the new traits.

The chunks are decoded as the browser decodes them and compared with
attnscope.analysis on a real MiniLM trace (to within the one-byte rounding);
the traits are validated and clamped like the existing ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import traitlets

import attnscope
from attnscope import AttentionStream, AttentionTrace, AttentionWidget, Tokens
from attnscope.analysis import STATISTICS, heads_mean, rollout, statistic_table, word_ids
from attnscope.encode.chunks import encode_chunk, parse_key


@pytest.fixture(scope="module")
def trace(minilm: tuple[Any, Any]) -> AttentionTrace:
    model, tokenizer = minilm
    return attnscope.capture(
        model, "The cat sat on the mat. Unbelievably, the cat slept.", tokenizer=tokenizer
    )


def decode_top(arrays: dict[str, np.ndarray], k_len: int) -> np.ndarray:
    """Dense (H, Q, K) weights from a top:-format chunk, as js/views/head/head_lines.ts reads it."""
    weight = arrays["weight"] / 255 * arrays["rowmax"][..., None]
    if "index" not in arrays:
        return weight
    dense = np.zeros((*weight.shape[:2], k_len))
    np.put_along_axis(dense, arrays["index"].astype(np.intp), weight, axis=-1)
    return dense


def test_stats_chunk_is_the_statistic_table(trace: AttentionTrace) -> None:
    arrays = dict(encode_chunk(trace, parse_key("stats:self", trace)))
    assert list(arrays) == list(STATISTICS)
    table = statistic_table(trace)
    for name, values in arrays.items():
        assert values.dtype == np.float32
        assert values.shape == (6, 12)
        np.testing.assert_allclose(values, table[name], rtol=1e-6, atol=1e-7, equal_nan=True)
    assert np.isfinite(arrays["entropy"]).all()


def test_pseudo_chunk_holds_mean_and_rollout(trace: AttentionTrace) -> None:
    n = len(trace.tokens)
    rolled = rollout(trace)
    for position in (0, 3, 5):
        arrays = dict(encode_chunk(trace, parse_key(f"pseudo:self:{position}", trace)))
        dense = decode_top(arrays, n)
        assert dense.shape == (2, n, n)
        tolerance = arrays["rowmax"].max() / 510 + 1e-6
        np.testing.assert_allclose(dense[0], heads_mean(trace, position), atol=tolerance)
        np.testing.assert_allclose(dense[1], rolled[position], atol=tolerance)
        np.testing.assert_allclose(dense.sum(-1), 1.0, atol=n * tolerance)


def test_meta_announces_statistics_pseudo_heads_and_words(trace: AttentionTrace) -> None:
    meta = AttentionWidget(trace)._meta
    assert [s["name"] for s in meta["statistics"]] == list(STATISTICS)
    assert all(s["formula"] and s["source"] for s in meta["statistics"])
    assert meta["streams"]["self"]["pseudo_heads"] == ["mean", "rollout"]
    words = meta["sides"]["source"]["words"]
    assert words == word_ids(trace.source)
    unbelievably = trace.source.raw.index("un")
    assert words[unbelievably] == words[unbelievably + 1]  # "un", "##bel", ... one word


def small_enc_dec() -> AttentionTrace:
    def uniform(*shape: int) -> np.ndarray:
        return np.full(shape, 1 / shape[-1], np.float32)

    return AttentionTrace.from_streams(
        Tokens(list("abcde")),
        [
            AttentionStream(uniform(2, 4, 5, 5), name="encoder"),
            AttentionStream(
                uniform(1, 2, 3, 3), name="decoder", query_side="target", key_side="target"
            ),
            AttentionStream(
                uniform(1, 2, 3, 5), name="cross", query_side="target", key_side="source"
            ),
        ],
        target=Tokens(list("xyz")),
    )


def test_cross_attention_offers_only_the_mean() -> None:
    trace = small_enc_dec()
    meta = AttentionWidget(trace)._meta
    assert meta["streams"]["cross"]["pseudo_heads"] == ["mean"]
    arrays = dict(encode_chunk(trace, parse_key("pseudo:cross:0", trace)))
    assert arrays["weight"].shape == (1, 3, 5)
    with pytest.raises(ValueError, match="layer position 1"):
        parse_key("pseudo:cross:1", trace)


@pytest.mark.parametrize(
    ("trait", "value", "message"),
    [
        ("rank_by", "attention", "not a statistic"),
        ("pseudo_heads", ["median"], "not offered"),
        ("queries", [1, 9], "out of range"),
        ("words", "yes", "bool"),
        ("hide_special", 2, "bool"),
        ("log_scale", None, "bool"),
    ],
)
def test_invalid_analysis_traits_raise_and_leave_the_widget_unchanged(
    trait: str, value: object, message: str
) -> None:
    w = AttentionWidget(small_enc_dec(), rank_by="sink", pseudo_heads=["rollout"], queries=[2])
    before = {n: getattr(w, n) for n in ("rank_by", "pseudo_heads", "queries", "words")}
    with pytest.raises(traitlets.TraitError, match=message):
        setattr(w, trait, value)
    assert {n: getattr(w, n) for n in before} == before


def test_analysis_traits_are_normalised_and_clamped_to_the_stream() -> None:
    w = AttentionWidget(small_enc_dec(), pseudo_heads=["rollout", "mean"], queries=[4, 1, 4])
    assert (w.pseudo_heads, w.queries, w.rank_by) == (["mean", "rollout"], [1, 4], None)
    w.words, w.hide_special, w.log_scale, w.rank_by = True, True, True, "induction"
    w.stream = "cross"  # target queries, and no rollout
    assert (w.pseudo_heads, w.queries) == (["mean"], [])
    with pytest.raises(traitlets.TraitError, match="offers \\['mean'\\]"):
        w.pseudo_heads = ["rollout"]
    w.stream = "decoder"
    w.queries = [0, 2]
    assert (w.words, w.hide_special, w.log_scale, w.rank_by) == (True, True, True, "induction")


def test_streams_too_long_for_a_layer_offer_no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    from attnscope.encode.chunks import all_keys
    from attnscope.trace import stream as stream_module

    trace = small_enc_dec()
    monkeypatch.setattr(stream_module, "MAX_ATTENTION_BYTES", 4 * 2 * 3 * 5)  # cross fits
    keys = all_keys(trace)
    assert "stats:cross" in keys
    assert "pseudo:cross:0" in keys
    assert not [k for k in keys if k.startswith(("stats:encoder", "pseudo:encoder"))]
    assert AttentionWidget(trace)._meta["streams"]["encoder"]["pseudo_heads"] == []
    with pytest.raises(ValueError, match="too long for head statistics"):
        parse_key("stats:encoder", trace)


def test_comparisons_offer_no_analysis_chunks() -> None:
    from attnscope.encode.comparison import ComparisonChunks

    trace = AttentionTrace(list("abc"), np.full((1, 2, 3, 3), 1 / 3, np.float32))
    chunks = ComparisonChunks(attnscope.compare(trace, trace))
    assert not [k for k in chunks.all_keys() if "stats:" in k or "pseudo:" in k]
    with pytest.raises(ValueError, match="no head statistics"):
        chunks.parse("a/stats:self")
