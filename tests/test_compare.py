"""attnscope.compare: minimal pairs, head by head."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope import AttentionTrace, MultiHeadAttention
from attnscope.analysis.align import align_tokens
from attnscope.analysis.compare import js_divergence


def test_a_trace_compared_with_itself_shows_no_change(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, "The nurse said that she was tired.", tokenizer=tokenizer)
    c = attnscope.compare(trace, trace)
    assert c.alignment == tuple((i, i) for i in range(len(trace.source)))
    assert np.abs(c.difference()).max() == 0
    assert np.all(c.divergence() == 0)
    assert [h.divergence for h in c.ranking()] == [0.0] * 6 * 12


def _two_head_module() -> MultiHeadAttention:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, causal=True)
    with torch.no_grad():
        # Head 0 sharp (large queries), head 1 uniform (zero queries): changing one key
        # moves head 0's rows and cannot move head 1's, whose rows stay uniform.
        mha.q_proj.weight[:8] *= 6
        mha.q_proj.weight[8:] = 0
        if mha.q_proj.bias is not None:
            mha.q_proj.bias[8:] = 0
    return mha


def test_changing_one_input_changes_only_what_can_see_it() -> None:
    mha = _two_head_module()
    x = torch.randn(1, 6, 16)
    y = x.clone()
    y[0, 3] = torch.randn(16)
    a = AttentionTrace.from_module(mha, x, list("abcdef"))
    b = AttentionTrace.from_module(mha, y, list("abcxef"))
    c = attnscope.compare(a, b)
    diff = c.difference()[0]
    # Causal: rows 0..2 cannot see token 3, so nothing in them changes, in any head.
    assert np.abs(diff[:, :3]).max() == 0
    # Head 0 changes in rows 3.. and in column 3; head 1 stays uniform over visible keys.
    assert np.abs(diff[0, 3:]).max() > 1e-3
    assert np.abs(diff[0, 4:, 3]).min() > 0
    assert np.abs(diff[1]).max() < 1e-6
    ranking = c.ranking()
    assert (ranking[0].layer, ranking[0].head) == (0, 0)
    assert ranking[0].divergence > 1e-3
    assert ranking[1].divergence < 1e-9
    assert c.labels()[3] == "d | x"


def test_divergence_is_the_mean_jsd_of_aligned_rows() -> None:
    rng = np.random.default_rng(1)
    att_a = rng.random((2, 3, 5, 5)).astype(np.float32)
    att_a /= att_a.sum(-1, keepdims=True)
    att_b = rng.random((2, 3, 5, 5)).astype(np.float32)
    att_b /= att_b.sum(-1, keepdims=True)
    c = attnscope.compare(
        AttentionTrace(list("abcde"), att_a), AttentionTrace(list("abcde"), att_b)
    )
    p, q = att_a.astype(np.float64), att_b.astype(np.float64)
    m = (p + q) / 2
    expected = (0.5 * (p * np.log(p / m)).sum(-1) + 0.5 * (q * np.log(q / m)).sum(-1)).mean(-1)
    np.testing.assert_allclose(c.divergence(), expected, atol=1e-7)
    assert np.all(c.divergence() <= np.log(2))
    assert float(js_divergence([1, 0], [0, 1])) == pytest.approx(np.log(2))


def test_unequal_lengths_align_over_raw_tokens_as_documented() -> None:
    # Equal runs pair up; a replaced run of the same length pairs position by position;
    # an inserted token has no partner.
    assert align_tokens(["the", "big", "cat", "sat"], ["the", "cat", "sat"]) == (
        (0, 0),
        (2, 1),
        (3, 2),
    )
    assert align_tokens(["a", "she", "ran", "."], ["a", "he", "ran", "far", "."]) == (
        (0, 0),
        (1, 1),
        (2, 2),
        (3, 4),
    )
    rng = np.random.default_rng(0)
    att_a = rng.random((1, 1, 4, 4)).astype(np.float32)
    att_a /= att_a.sum(-1, keepdims=True)
    att_b = rng.random((1, 1, 3, 3)).astype(np.float32)
    att_b /= att_b.sum(-1, keepdims=True)
    c = attnscope.compare(
        AttentionTrace(["the", "big", "cat", "sat"], att_a),
        AttentionTrace(["the", "cat", "sat"], att_b),
    )
    assert c.alignment == ((0, 0), (2, 1), (3, 2))
    np.testing.assert_array_equal(
        c.difference()[0, 0], att_a[0, 0][[0, 2, 3]][:, [0, 2, 3]] - att_b[0, 0]
    )
    # The user's own alignment wins.
    own = attnscope.compare(
        AttentionTrace(["the", "big", "cat", "sat"], att_a),
        AttentionTrace(["the", "cat", "sat"], att_b),
        alignment=[(1, 1), (3, 2)],
    )
    assert own.alignment == ((1, 1), (3, 2))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"alignment": [(1, 0), (0, 1)]}, ValueError, "increase in both"),
        ({"alignment": [(0, 9)]}, ValueError, "out of range"),
        ({"alignment": []}, ValueError, "share no aligned token"),
        ({"alignment": "ab"}, ValueError, "pairs of ints"),
    ],
)
def test_bad_alignments_are_explained(kwargs: dict[str, Any], error: type, match: str) -> None:
    t = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    with pytest.raises(error, match=match):
        attnscope.compare(t, t, **kwargs)


def test_traces_of_different_models_are_refused() -> None:
    a = AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32))
    b = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    with pytest.raises(ValueError, match="same model"):
        attnscope.compare(a, b)
    with pytest.raises(TypeError, match="two AttentionTrace"):
        attnscope.compare(a, "b")  # type: ignore[arg-type]
