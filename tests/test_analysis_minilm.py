"""Head statistics, rollout and flow on real MiniLM traces, against re-implementations.

Each reference below is written from the paper's definition in a few lines of
numpy, independently of attnscope.analysis: special tokens by their spelling,
repeats by the tokenizer's input ids, maximum flow by networkx (what Abnar &
Zuidema used). Everything must agree to 1e-6.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
import pytest

import attnscope

TEXTS = {
    "repeats": ("The cat sat on the mat. The cat sat on the mat, and slept.", None),
    "pair": ("The dog barked at the mailman.", "He ran away, fast."),
    "no repeats": ("A quick brown fox jumps over lazy dogs", None),
}


@pytest.fixture(scope="module", params=list(TEXTS))
def captured(request: pytest.FixtureRequest, minilm: tuple[Any, Any]) -> tuple[Any, list[int]]:
    model, tokenizer = minilm
    text, pair = TEXTS[request.param]
    trace = attnscope.capture(model, text, tokenizer=tokenizer, text_pair=pair)
    ids = tokenizer(text, pair)["input_ids"]
    assert len(ids) == len(trace.tokens)
    return trace, ids


def reference_stats(
    attention: np.ndarray, raw: list[str], labels: list[str], ids: list[int]
) -> dict[str, np.ndarray]:
    a = attention.astype(np.float64)  # (layers, heads, n, n)
    n = a.shape[-1]
    raw_a, labels_a, ids_a = np.array(raw), np.array(labels), np.array(ids)
    ordinary = ~np.isin(raw_a, ["[CLS]", "[SEP]"])
    smoothed = 0.9999 * a + 0.0001 / n
    earlier = np.tril(np.ones((n, n), bool), -1)  # key j < query i
    duplicate = (ids_a[:, None] == ids_a[None, :]) & earlier
    induction = np.zeros((n, n), bool)
    induction[:, 1:] = duplicate[:, :-1]  # the key after an earlier copy of the query token

    def mul(pattern: np.ndarray) -> np.ndarray:  # TransformerLens's "mul" score
        if not pattern.any():
            return np.full(a.shape[:2], np.nan)
        return (a * pattern).sum((-1, -2)) / a.sum((-1, -2))

    return {
        "cls": a[..., raw_a == "[CLS]"].sum(-1).mean(-1),
        "sep": a[..., raw_a == "[SEP]"].sum(-1).mean(-1),
        "punct": a[..., np.isin(labels_a, [".", ","])].sum(-1).mean(-1),
        "prev": np.diagonal(a, -1, -2, -1).mean(-1),  # A[i, i-1]
        "self": np.diagonal(a, 0, -2, -1).mean(-1),
        "next": np.diagonal(a, 1, -2, -1).mean(-1),  # A[i, i+1]
        "entropy": -(smoothed * np.log(smoothed)).sum(-1).mean(-1),
        "entropy_norm": (-(a * np.log(a)).sum(-1) / np.log(n)).mean(-1),
        "confidence": a[..., ordinary, :].max(-1).mean(-1),
        "sink": a[..., :, 0].mean(-1),
        "induction": mul(induction),
        "duplicate": mul(duplicate),
    }


def reference_rollout(attention: np.ndarray) -> np.ndarray:
    out, r = [], None
    for layer in attention.astype(np.float64):
        a_hat = layer.mean(0) + np.eye(layer.shape[-1])
        a_hat /= a_hat.sum(-1, keepdims=True)
        r = a_hat if r is None else a_hat @ r
        out.append(r)
    return np.stack(out)


def reference_flow(attention: np.ndarray, query: int) -> np.ndarray:
    layers, n = attention.shape[0], attention.shape[-1]
    graph = nx.DiGraph()
    for depth, layer in enumerate(attention.astype(np.float64), start=1):
        a_hat = layer.mean(0) + np.eye(n)
        a_hat /= a_hat.sum(-1, keepdims=True)
        for i in range(n):
            for k in range(n):
                graph.add_edge((depth, i), (depth - 1, k), capacity=a_hat[i, k])
    return np.array(
        [
            [nx.maximum_flow_value(graph, (depth, query), (0, j)) for j in range(n)]
            for depth in range(1, layers + 1)
        ]
    )


def test_head_stats_match_the_papers_definitions(captured: tuple[Any, list[int]]) -> None:
    trace, ids = captured
    stats = attnscope.head_stats(trace)
    expected = reference_stats(trace.attention, trace.raw_tokens, trace.tokens, ids)
    layers, heads = trace.attention.shape[:2]
    assert len(stats) == layers * heads
    for name, values in expected.items():
        got = stats[name].to_numpy().reshape(layers, heads)
        np.testing.assert_allclose(got, values, atol=1e-6, rtol=0, err_msg=name)


def test_the_texts_exercise_what_they_should(captured: tuple[Any, list[int]]) -> None:
    trace, ids = captured
    stats = attnscope.head_stats(trace)
    repeats = len(set(ids)) < len(ids)
    assert stats["induction"].isna().all() == (not repeats)
    assert (stats["sep"] > 0).all()
    # MiniLM's heads differ: the statistics are not one number repeated.
    assert stats["prev"].std() > 0.01
    assert stats["entropy"].std() > 0.01


def test_rollout_matches_the_definition(captured: tuple[Any, list[int]]) -> None:
    trace, _ = captured
    np.testing.assert_allclose(
        attnscope.rollout(trace), reference_rollout(trace.attention), atol=1e-6, rtol=0
    )


# networkx takes seconds per text: short ones.
@pytest.mark.parametrize(
    ("text", "pair"), [("The dog barked, loudly.", "He ran."), TEXTS["no repeats"]]
)
def test_flow_matches_networkx_maximum_flow(
    text: str, pair: str | None, minilm: tuple[Any, Any]
) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, text, tokenizer=tokenizer, text_pair=pair)
    query = len(trace.tokens) // 2
    np.testing.assert_allclose(
        attnscope.flow(trace, query), reference_flow(trace.attention, query), atol=1e-6, rtol=0
    )


def test_words_merge_wordpieces(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, "Tokenization splits unbelievable words.", tokenizer=tokenizer)
    words = attnscope.word_ids(trace.source)
    encoding = tokenizer("Tokenization splits unbelievable words.")
    # The tokenizer's own word ids (None for specials, each its own word here).
    theirs = encoding.word_ids()
    groups = [[i for i, w in enumerate(words) if w == k] for k in range(max(words) + 1)]
    their_groups = []
    for i, w in enumerate(theirs):
        if w is None or i == 0 or theirs[i - 1] != w:
            their_groups.append([i])
        else:
            their_groups[-1].append(i)
    assert groups == their_groups
    assert max(words) + 1 < len(trace.tokens)  # some word was split
    merged = attnscope.merge_words(trace.attention[2], words, words)
    np.testing.assert_allclose(merged.sum(-1), 1.0, atol=1e-5)
