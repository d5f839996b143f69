"""Statistics, rollout and flow on the package's own MultiHeadAttention, against closed forms.

With ``W_Q = 0`` every score is 0 and attention is uniform over the keys a
query can see; a hand-set projection makes a head that looks only at the
previous token. Their statistics follow from the definitions by hand.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

import attnscope
from attnscope import AttentionTrace, MultiHeadAttention
from attnscope.analysis import statistic_table
from attnscope.errors import AttnscopeError

TOKENS = ["the", "cat", "sat", "on", "a", "mat", "today"]
N = len(TOKENS)


def uniform_trace(*, causal: bool, layers: int = 3, heads: int = 2) -> AttentionTrace:
    torch.manual_seed(0)
    modules = [MultiHeadAttention(8, heads, causal=causal) for _ in range(layers)]
    with torch.no_grad():
        for m in modules:
            m.q_proj.weight.zero_()
            m.q_proj.bias.zero_()
    return AttentionTrace.from_module(modules, torch.randn(1, N, 8), TOKENS)


def previous_token_trace() -> AttentionTrace:
    # One-hot positions as input; q_i = c·e_{i-1} and k_j = e_j give the score c·[j == i-1].
    m = MultiHeadAttention(N, 1, causal=True, bias=False)
    with torch.no_grad():
        m.q_proj.weight.copy_(1000.0 * torch.diag(torch.ones(N - 1), 1))
        m.k_proj.weight.copy_(torch.eye(N))
    return AttentionTrace.from_module(m, torch.eye(N)[None], TOKENS)


def test_uniform_attention_has_entropy_ln_n_confidence_one_over_n_and_known_rollout() -> None:
    trace = uniform_trace(causal=False)
    stats = attnscope.head_stats(trace)
    assert len(stats) == 3 * 2
    np.testing.assert_allclose(stats["entropy"], math.log(N), atol=1e-6)
    np.testing.assert_allclose(stats["entropy_norm"], 1.0, atol=1e-6)
    np.testing.assert_allclose(stats["confidence"], 1 / N, atol=1e-6)
    np.testing.assert_allclose(stats["sink"], 1 / N, atol=1e-6)
    np.testing.assert_allclose(stats[["prev", "self", "next"]], 1 / N, atol=1e-6)

    rolled = attnscope.rollout(trace)
    uniform = np.full((N, N), 1 / N)
    for layer in range(3):
        share = 2.0 ** -(layer + 1)
        np.testing.assert_allclose(
            rolled[layer], (1 - share) * uniform + share * np.eye(N), atol=1e-6
        )


def test_uniform_attention_flow_has_closed_forms_for_one_and_two_layers() -> None:
    # Â = (U + I) / 2. One layer: the flow is Â's row. Two layers: the routes through
    # each middle token k are disjoint, so the flow is Σ_k min(Â[q, k], Â[k, j]):
    # 1 back to the query itself, 1/2 to every other token.
    trace = uniform_trace(causal=False, layers=2)
    query = 2
    flowed = attnscope.flow(trace, query)
    residual = (np.full((N, N), 1 / N) + np.eye(N)) / 2
    np.testing.assert_allclose(flowed[0], residual[query], atol=1e-6)
    np.testing.assert_allclose(flowed[1], np.where(np.arange(N) == query, 1.0, 0.5), atol=1e-6)
    normalised = attnscope.flow(trace, query, normalize=True)
    np.testing.assert_allclose(normalised.sum(axis=-1), 1.0, rtol=1e-9)


def test_causal_uniform_attention_has_sink_harmonic_over_n() -> None:
    trace = uniform_trace(causal=True)
    stats = attnscope.head_stats(trace)
    harmonic = sum(1 / k for k in range(1, N + 1))
    np.testing.assert_allclose(stats["sink"], harmonic / N, atol=1e-6)
    # Every row is uniform over what it sees, so the normalised entropy is 1 exactly.
    np.testing.assert_allclose(stats["entropy_norm"], 1.0, atol=1e-6)
    # prev: mean over i >= 1 of 1/(i+1); next: nothing after the query is visible.
    prev = np.mean([1 / (i + 1) for i in range(1, N)])
    np.testing.assert_allclose(stats["prev"], prev, atol=1e-6)
    np.testing.assert_allclose(stats["next"], 0.0, atol=1e-12)


def test_hand_set_previous_token_head_has_prev_one() -> None:
    trace = previous_token_trace()
    row = attnscope.head_stats(trace).iloc[0]
    assert row["prev"] == pytest.approx(1.0, abs=1e-6)
    # Query 0 has no previous key and sees only itself: self is 1/N, next 0.
    assert row["self"] == pytest.approx(1 / N, abs=1e-6)
    assert row["next"] == pytest.approx(0.0, abs=1e-12)
    assert row["confidence"] == pytest.approx(1.0, abs=1e-6)
    # "the" repeats nowhere in TOKENS: no repeated token, so no induction score.
    assert math.isnan(row["induction"])
    assert math.isnan(row["duplicate"])


def test_layer_and_head_columns_hold_the_models_numbers() -> None:
    trace = uniform_trace(causal=False, layers=2, heads=4)
    partial = AttentionTrace(trace.source, trace.attention, layers=[3, 4])
    stats = attnscope.head_stats(partial)
    assert stats["layer"].tolist() == [3] * 4 + [4] * 4
    assert stats["head"].tolist() == [0, 1, 2, 3] * 2
    assert stats.attrs["stream"] == "self"


def test_cross_attention_leaves_position_statistics_nan_and_refuses_rollout() -> None:
    from attnscope import AttentionStream, Tokens

    weights = np.full((1, 2, 2, 3), 1 / 3, np.float32)
    cross = AttentionStream(weights, name="cross", query_side="target", key_side="source")
    enc = AttentionStream(np.full((1, 2, 3, 3), 1 / 3, np.float32), name="encoder")
    trace = AttentionTrace.from_streams(
        Tokens(["[CLS]", "a", "[SEP]"], kinds=["special", "token", "special"]),
        [enc, cross],
        target=Tokens(["x", "y"]),
    )
    stats = attnscope.head_stats(trace, stream="cross")
    assert stats[["prev", "self", "next", "induction", "duplicate"]].isna().all().all()
    np.testing.assert_allclose(stats["cls"], 1 / 3)
    np.testing.assert_allclose(stats["sep"], 1 / 3)
    with pytest.raises(AttnscopeError, match="needs self-attention"):
        attnscope.rollout(trace, stream="cross")
    with pytest.raises(AttnscopeError, match="stream='decoder' is not in this trace"):
        attnscope.head_stats(trace, stream="decoder")


def test_flow_refuses_large_inputs_and_bad_queries_before_any_work() -> None:
    from attnscope.analysis import MAX_FLOW_NODES

    tokens = MAX_FLOW_NODES // 2 + 1
    big = AttentionTrace(
        [f"t{i}" for i in range(tokens)], np.full((2, 1, tokens, tokens), 1 / tokens, np.float32)
    )
    with pytest.raises(AttnscopeError, match="MAX_FLOW_NODES"):
        attnscope.flow(big, 0)
    small = uniform_trace(causal=False, layers=1)
    with pytest.raises(AttnscopeError, match="query=7 is out of range"):
        attnscope.flow(small, 7)
    with pytest.raises(TypeError, match="token index"):
        attnscope.flow(small, 1.0)  # type: ignore[arg-type]


def test_rollout_refuses_layers_with_gaps() -> None:
    trace = uniform_trace(causal=False, layers=2)
    gappy = AttentionTrace(trace.source, trace.attention, layers=[0, 2])
    with pytest.raises(AttnscopeError, match="consecutive layers"):
        attnscope.rollout(gappy)


def test_head_stats_without_pandas_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = uniform_trace(causal=False, layers=1)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"attnscope\[analysis\]"):
        attnscope.head_stats(trace)
    # The numbers themselves need no pandas.
    assert statistic_table(trace)["sink"].shape == (1, 2)


def test_aggregations_over_heads_queries_and_words() -> None:
    trace = uniform_trace(causal=True, layers=1, heads=2)
    block = trace.attention[0].astype(np.float64)
    np.testing.assert_allclose(attnscope.heads_mean(trace, 0), block.mean(axis=0))
    np.testing.assert_allclose(attnscope.heads_max(trace, 0, heads=[1]), block[1])
    summed = attnscope.query_sum(block[0], [1, 2])
    np.testing.assert_allclose(summed, [1 / 2 + 1 / 3, 1 / 2 + 1 / 3, 1 / 3, 0, 0, 0, 0], atol=1e-6)
    with pytest.raises(AttnscopeError, match="layer 5 was not captured"):
        attnscope.heads_mean(trace, 5)
    with pytest.raises(AttnscopeError, match="queries=\\[9\\] holds 9"):
        attnscope.query_sum(block, [9])
    words = attnscope.merge_words(block[0], [0, 0, 1, 2, 2, 2, 3], [0, 0, 1, 2, 2, 2, 3])
    assert words.shape == (4, 4)
    np.testing.assert_allclose(words.sum(axis=-1), 1.0, atol=1e-6)
    # Word 0 = pieces 0 and 1: from it, the mean of rows 0 and 1; to it, the sum of columns.
    assert words[0, 0] == pytest.approx((1 + 1) / 2, abs=1e-6)
