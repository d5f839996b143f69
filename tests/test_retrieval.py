"""``attnscope.retrieval_scores`` against the paper's definition, on traces with known answers.

Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context
Factuality" (arXiv:2404.15574), section 2: at each generation step the head's
most attended context token is a copy when it lies in the needle and is the
token being generated; retrieval score = distinct needle tokens copied /
needle length. :func:`reference_scores` is written from that text on the full
N x N weights; the package reads rows blockwise from q and k.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
import attnscope.trace.rows
from attnscope import AttentionStream, AttentionTrace, Tokens
from attnscope.analysis.retrieval import strongest_keys
from attnscope.errors import AttnscopeError
from test_capture_generate import causal_lm


def reference_scores(trace: AttentionTrace, first: int, stop: int, start: int) -> np.ndarray:
    """(layers, heads) retrieval scores, straight from the paper on the whole attention."""
    weights = trace.attention
    tokens = trace.raw_tokens
    layers, heads = weights.shape[:2]
    scores = np.zeros((layers, heads))
    for layer in range(layers):
        for head in range(heads):
            copied = set()
            for p in range(start, len(tokens)):
                row = weights[layer, head, p - 1, :p]  # the query that produced token p
                j = int(np.argmax(row))  # numpy's argmax: the first maximum
                if first <= j < stop and tokens[j] == tokens[p]:
                    copied.add(j)
            scores[layer, head] = len(copied) / (stop - first)
    return scores


def weights_looking_at(targets: list[int], n: int) -> np.ndarray:
    """One head whose query i puts 0.7 on key targets[i] and spreads 0.3 over the rest."""
    w = np.full((n, n), 0.3 / (n - 1), np.float32)
    w[np.arange(n), targets] = 0.7
    return w


def test_known_copies_ties_and_later_keys() -> None:
    tokens = ["<s>", "k", "=", "4", "2", ";", "k", "?", "4", "2", "4", "2"]
    n = len(tokens)
    # Head 0 copies the needle "4 2" (positions 3, 4) at steps 8, 9, then again at 10, 11.
    copier = [0, 0, 0, 0, 0, 0, 0, 3, 4, 3, 4, 0]
    # Head 1 looks hardest at a later key (not j < p: left out); the keys it may use tie
    # at 0.3/11, so its strongest is the lowest, 0 ("<s>"): no copy.
    later = [0, 0, 0, 0, 0, 0, 0, 11, 11, 11, 11, 0]
    weights = np.stack([weights_looking_at(copier, n), weights_looking_at(later, n)])[None]
    trace = AttentionTrace(tokens, weights)
    df = attnscope.retrieval_scores(trace, needle=(3, 5), start=8)
    assert df[["layer", "head"]].values.tolist() == [[0, 0], [0, 1]]
    assert df["retrieval"].tolist() == [1.0, 0.0]
    assert df["copied"].tolist() == [2, 0]
    assert df["copy_steps"].tolist() == [4, 0]
    assert df["steps"].tolist() == [4, 4]
    assert df.attrs == {"needle": (3, 5), "start": 8, "stream": "self"}
    np.testing.assert_array_equal(
        df["retrieval"].to_numpy().reshape(1, 2), reference_scores(trace, 3, 5, 8)
    )
    # A needle of the first "4" alone is copied whole; a wider needle (2 .. 5) half.
    assert attnscope.retrieval_scores(trace, needle=(3, 4), start=8)["retrieval"][0] == 1.0
    assert attnscope.retrieval_scores(trace, needle=(2, 6), start=8)["retrieval"][0] == 0.5


def test_qk_trace_read_in_small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A q/k stream whose strongest keys are set by the vectors; blocks of two rows each."""
    rng = np.random.default_rng(1)
    n, heads = 40, 2
    labels = [str(t) for t in rng.integers(0, 5, n)]
    keys = np.eye(n, dtype=np.float32)[None, None]  # key j = e_j: the score of j is q[j]
    targets = np.array([[rng.integers(0, max(i, 1)) for i in range(n)] for _ in range(heads)])
    queries = np.zeros((1, heads, n, n), np.float32)
    for h in range(heads):
        queries[0, h, np.arange(n), targets[h]] = 5.0
    causal = np.stack([np.zeros(n, np.int32), np.arange(1, n + 1, dtype=np.int32)], -1)[None]
    stream = AttentionStream(
        queries=queries, keys=keys, scaling=np.ones(1, np.float32), key_spans=causal
    )
    trace = AttentionTrace.from_streams(Tokens(labels), [stream])
    monkeypatch.setattr(attnscope.trace.rows, "BLOCK_VALUES", 2 * n)
    df = attnscope.retrieval_scores(trace, needle=(5, 25), start=20)
    expected = reference_scores(trace, 5, 25, 20)
    np.testing.assert_array_equal(df["retrieval"].to_numpy().reshape(1, heads), expected)
    by_hand = [
        len(
            {
                t
                for p, t in enumerate(targets[h][19:-1], 20)
                if 5 <= t < 25 and labels[t] == labels[p]
            }
        )
        / 20
        for h in range(heads)
    ]
    assert df["retrieval"].tolist() == by_hand
    assert max(by_hand) > 0


@pytest.mark.parametrize("family", ["gpt2", "llama", "gemma2"])
def test_generation_capture_matches_the_reference(family: str) -> None:
    model, tokenizer = causal_lm(family)
    trace = attnscope.capture(
        model,
        "the dog the dog the dog the dog",
        tokenizer=tokenizer,
        max_new_tokens=8,
        pad_token_id=0,
    )
    assert trace.stream.weights is None  # computed from q and k
    start = trace.prompt_length
    assert start is not None
    n = len(trace.tokens)
    df = attnscope.retrieval_scores(trace, needle=(0, start))
    expected = reference_scores(trace, 0, start, start)
    np.testing.assert_array_equal(df["retrieval"].to_numpy().reshape(expected.shape), expected)
    # Every position scored, the whole sequence as the needle: the repeated words give
    # copies (which the generated tokens alone, from a random model, may not).
    every = attnscope.retrieval_scores(trace, needle=(0, n), start=1)
    expected = reference_scores(trace, 0, n, 1)
    np.testing.assert_array_equal(every["retrieval"].to_numpy().reshape(expected.shape), expected)
    assert expected.max() > 0
    # The strongest key of each step is the first maximum of the model's own rows.
    weights = trace.attention
    for layer in range(weights.shape[0]):
        for head in range(weights.shape[1]):
            keys = strongest_keys(trace.stream, layer, head, 1)
            rows = [int(np.argmax(weights[layer, head, p - 1, :p])) for p in range(1, n)]
            assert keys.tolist() == rows


@pytest.mark.parametrize(
    ("needle", "start", "match"),
    [
        ((3, 3), 4, r"needle=\(3, 3\) must be \(first, stop\)"),
        ((0, 9), 4, r"0 <= first < stop <= 6"),
        ("0:2", 4, r"needle='0:2'"),
        ((0, 2), None, r"start=None needs a trace that holds a generation"),
        ((0, 2), 0, r"start=0 must be a token position >= 1"),
        ((0, 2), 6, r"start=6 leaves no position to score"),
    ],
)
def test_bad_arguments_are_named(needle: Any, start: Any, match: str) -> None:
    trace = AttentionTrace(list("abcdef"), np.full((1, 1, 6, 6), 1 / 6, np.float32))
    with pytest.raises(AttnscopeError, match=match):
        attnscope.retrieval_scores(trace, needle=needle, start=start)


def test_cross_attention_is_refused() -> None:
    cross = AttentionStream(
        np.full((1, 1, 2, 3), 1 / 3, np.float32), name="cross", query_side="target"
    )
    trace = AttentionTrace.from_streams(Tokens(list("abc")), [cross], target=Tokens(list("xy")))
    with pytest.raises(AttnscopeError, match="retrieval_scores needs self-attention"):
        attnscope.retrieval_scores(trace, needle=(0, 1), start=1)
