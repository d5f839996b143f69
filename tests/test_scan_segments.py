"""``attnscope.segments``: sentence/turn attention and receiver heads against the paper.

Bogdan, Macar, Nanda, Conmy 2025, "Thought Anchors: Which LLM Reasoning Steps
Matter?" (arXiv:2506.19143), section 4: the sentence x sentence matrix
averages token attention over each block; a sentence's vertical score is the
mean of its column over sentences at least ``proximity`` later; a head's
receiver score is the kurtosis of those scores. :func:`reference` is written
from that text on the whole N x N weights.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import attnscope
import attnscope.trace.rows
from attnscope import AttentionStream, AttentionTrace, Tokens
from attnscope.errors import AttnscopeError
from capture_models import bpe_tokenizer
from test_capture_generate import MESSAGES, TEMPLATE, causal_lm

pytestmark = pytest.mark.filterwarnings("ignore:.*receiver score needs:UserWarning")  # few segments

REASONING = (
    "First, add the numbers. Then check the sum! Is it even? "
    "It is. So halve it. The answer is six. Done."
)


def excess_kurtosis(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    if len(values) < 4:  # of two values always -2, of three -1.5: no score
        return float("nan")
    centred = values - values.mean()
    return float((centred**4).mean() / (centred**2).mean() ** 2 - 3)


def reference(trace: AttentionTrace, edges: list[int], proximity: int) -> dict[str, np.ndarray]:
    """Block means, vertical scores and receiver scores of every head, from the paper."""
    weights = trace.attention
    layers, heads = weights.shape[:2]
    count = len(edges) - 1
    blocks = np.zeros((layers, heads, count, count))
    for a in range(count):
        for b in range(count):
            block = weights[:, :, edges[a] : edges[a + 1], edges[b] : edges[b + 1]]
            blocks[:, :, a, b] = block.mean(axis=(-2, -1))
    vertical = np.full((layers, heads, count), np.nan)
    for b in range(count):
        below = [a for a in range(count) if a >= b + proximity]
        if below:
            vertical[:, :, b] = blocks[:, :, below, b].mean(axis=-1)
    receiver = np.array(
        [
            [excess_kurtosis(vertical[layer, head]) for head in range(heads)]
            for layer in range(layers)
        ]
    )
    return {"mean": blocks, "vertical": vertical, "receiver": receiver}


def test_sentences_of_minilm_match_the_reference(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, REASONING, tokenizer=tokenizer)
    found = attnscope.segments(trace, "sentences", proximity=2)
    labels = trace.tokens
    starts = found.edges[:-1].tolist()
    assert [labels[s] for s in starts] == ["[CLS]", "Then", "Is", "It", "So", "The", "Done"]
    expected = reference(trace, found.edges.tolist(), 2)
    np.testing.assert_allclose(found.mean, expected["mean"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(found.vertical, expected["vertical"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(found.receiver, expected["receiver"], rtol=1e-4)
    # Rows of the matrix (mean over queries of summed weight) sum to one.
    np.testing.assert_allclose(found.mass.sum(-1), 1.0, atol=1e-5)
    heads = found.heads()
    assert heads.shape == (72, 4)
    assert heads["receiver"].tolist() == found.receiver.reshape(-1).tolist()


def test_generation_from_qk_in_small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    model, tokenizer = causal_lm("llama")
    trace = attnscope.capture(
        model, "the dog ran. the cat sat. a fox hid.", tokenizer=tokenizer, max_new_tokens=8
    )
    assert trace.stream.weights is None
    monkeypatch.setattr(attnscope.trace.rows, "BLOCK_VALUES", 3 * len(trace.tokens))
    edges = [0, 4, 9, 13, 17, len(trace.tokens)]
    found = attnscope.segments(trace, edges[1:-1], proximity=1)
    expected = reference(trace, edges, 1)
    np.testing.assert_allclose(found.mean, expected["mean"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(found.receiver, expected["receiver"], rtol=1e-4)
    # Causal: no query segment attends to a later one.
    assert np.all(np.triu(found.mass, 1) == 0)


def test_turns_of_a_chat_generation() -> None:
    model, _ = causal_lm("gpt2")
    tokenizer = copy.deepcopy(bpe_tokenizer())
    tokenizer.chat_template = TEMPLATE
    trace = attnscope.capture(model, MESSAGES, tokenizer=tokenizer, max_new_tokens=4)
    found = attnscope.segments(trace, "turns", proximity=1)
    starts = found.edges[:-1].tolist()
    raw = trace.raw_tokens
    # system turn, user turn, then the assistant turn (its marker and the generated tokens).
    assert len(starts) == 3
    assert [trace.source.kinds[s] for s in starts] == ["special"] * 3
    assert "".join(raw[starts[2] :]).startswith("</s>")
    assert found.edges[-1] == len(raw)
    assert found.mass.shape == (2, 4, 3, 3)


def test_hand_made_receiver_head() -> None:
    """Head 0 sends every later query to sentence 1; head 1 spreads evenly: 0 receives most."""
    n, edges = 15, [0, 3, 6, 9, 12, 15]
    spike = np.zeros((n, n), np.float32)
    spike[np.arange(n), np.minimum(np.arange(n), 3)] = 1.0  # queries >= 3 all look at key 3
    even = np.tril(np.ones((n, n), np.float32))
    even /= even.sum(-1, keepdims=True)
    trace = AttentionTrace([str(i) for i in range(n)], np.stack([spike, even])[None])
    found = attnscope.segments(trace, edges[1:-1], proximity=1)
    assert np.nanargmax(found.vertical[0, 0]) == 1
    assert found.heads()["top_segment"].tolist() == [1, 0]
    np.testing.assert_allclose(found.receiver, reference(trace, edges, 1)["receiver"])
    assert found.receiver[0, 0] > found.receiver[0, 1]


def test_too_few_segments_give_no_receiver_score_and_say_why() -> None:
    """Three vertical scores: their kurtosis is -1.5 whatever they are, so it ranks nothing."""
    n = 12
    weights = np.random.default_rng(0).dirichlet(np.ones(n), (1, 2, n)).astype(np.float32)
    trace = AttentionTrace([str(i) for i in range(n)], weights)
    with pytest.warns(UserWarning, match=r"7 segments with proximity=4 leave 3 .* needs 4"):
        found = attnscope.segments(trace, [2, 4, 6, 8, 9, 10])
    assert np.isnan(found.receiver).all()
    widget = attnscope.AttentionWidget(trace, segments=[2, 4, 6, 8, 9, 10])
    assert widget.scan_ranking is None
    assert any("No receiver scores: 7 segments leave 3" in n for n in widget._meta["notes"])
    more = attnscope.AttentionWidget(trace, segments=[1, 2, 3, 4, 5, 6, 7, 8])
    assert more.scan_ranking is not None
    assert more.scan_ranking.names == ["scan:receiver"]


@pytest.mark.parametrize(
    ("boundaries", "options", "match"),
    [
        ("words", {}, r"boundaries='words' is not a way to split"),
        ([3, 1], {}, r"boundaries=\[3, 1\] must be increasing token positions in 0..5"),
        ([2, 6], {}, r"must be increasing token positions in 0..5"),
        ([1.5], {}, r"boundaries=\[1.5\]"),
        ([2], {"proximity": 0}, r"proximity=0 must be an int >= 1"),
    ],
)
def test_bad_boundaries_are_named(boundaries: Any, options: Any, match: str) -> None:
    trace = AttentionTrace(list("abcdef"), np.full((1, 1, 6, 6), 1 / 6, np.float32))
    with pytest.raises(AttnscopeError, match=match):
        attnscope.segments(trace, boundaries, **options)


def test_cross_attention_is_refused() -> None:
    cross = AttentionStream(
        np.full((1, 1, 2, 3), 1 / 3, np.float32), name="cross", query_side="target"
    )
    trace = AttentionTrace.from_streams(Tokens(list("abc")), [cross], target=Tokens(list("xy")))
    with pytest.raises(AttnscopeError, match="segments needs self-attention"):
        attnscope.segments(trace, [1])


def test_sentences_of_a_decoder_stream_split_its_own_tokens() -> None:
    from capture_models import tiny_model, tokenizer_for

    tokenizer = tokenizer_for("bart", None)
    model = tiny_model("bart", len(tokenizer))
    trace = attnscope.capture(
        model, "The cat sat.", tokenizer=tokenizer, target="A dog ran. It slept. Fine."
    )
    found = attnscope.segments(trace, "sentences", stream="decoder", proximity=1)
    target = trace.tokens_for("target")
    assert found.edges[-1] == len(target)
    assert len(found.edges) - 1 == 3  # three sentences in the target, one in the source
    assert found.mass.shape[-1] == 3
    # The tiny BPE splits "It" and "Fine"; the space token before each stays behind.
    assert [target.labels[s].strip() for s in found.edges[1:-1]] == ["I", "F"]


def test_a_numpy_array_of_positions_splits_as_a_list_does() -> None:
    trace = AttentionTrace(list("abcdef"), np.full((1, 1, 6, 6), 1 / 6, np.float32))
    found = attnscope.segments(trace, np.array([0, 4]), proximity=1)
    np.testing.assert_array_equal(found.edges, attnscope.segments(trace, [0, 4], proximity=1).edges)
    with pytest.raises(AttnscopeError, match=r"must be increasing token positions"):
        attnscope.segments(trace, np.array([4, 0]))


def test_turns_of_plain_text_are_refused(minilm: tuple[Any, Any]) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, "Hi there.", text_pair="Hello.", tokenizer=tokenizer)
    with pytest.raises(AttnscopeError, match=r"'turns' .* captured from plain text"):
        attnscope.segments(trace, "turns")
    with pytest.raises(AttnscopeError, match=r"'turns' .* captured from plain text"):
        attnscope.AttentionWidget(trace, segments="turns")
