"""A needle run in the widget (issue 24): retrieval heads ranked, and where a head looked per step.

A generation trace built by hand (a copying head and a uniform one, so every
expected key is known), then a real generation of a tiny random Llama, where
``looked_at`` is held to the trace's own attention rows, read here as the
head view's caption reads a page's bytes: keys j < p at the top of 255 levels
of the row's largest tie, the lowest wins (Wu et al. 2024's argmax otherwise).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
from attnscope import AttentionTrace, AttentionWidget, looked_at, retrieval_scores
from attnscope.display.scan_ranking import RankedChunkCache
from attnscope.errors import AttnscopeError
from capture_models import llama_over

# prompt "x a b c q", then the model writes "a b c": a copy of the needle a b c (tokens 1..3)
TOKENS = ["x", "a", "b", "c", "q", "a", "b", "c"]
PROMPT = 5


def needle_run() -> AttentionTrace:
    n = len(TOKENS)
    weights = np.zeros((2, 2, n, n), np.float32)
    rows = np.arange(n)
    for layer in range(2):
        weights[layer, 0, rows, np.maximum(rows - 3, 0)] = 1.0  # copier: query i -> key i - 3
        weights[layer, 1] = np.tril(np.ones((n, n))) / (rows[:, None] + 1)  # uniform causal
    weights[1, 0] = weights[1, 1]  # layer 1: no copier
    generation = {
        "prompt_length": PROMPT,
        "generated_ids": [1, 2, 3],
        "generated_text": "a b c",
        "settings": {},
    }
    return AttentionTrace(TOKENS, weights, metadata={"generation": generation})


def test_the_model_view_ranks_a_needle_run_by_retrieval() -> None:
    trace = needle_run()
    scores = retrieval_scores(trace, needle=(1, 4))
    widget = AttentionWidget(trace, scan=scores, view="model")
    assert widget.rank_by == "scan:retrieval"
    ((content, buffers),) = widget.answer({"type": "request", "keys": ["stats:self"]})
    arrays = {
        a["name"]: np.frombuffer(buffers[a["buffer"]], np.float32).reshape(a["shape"])
        for a in content["chunks"][0]["arrays"]
    }
    np.testing.assert_array_equal(arrays["scan:retrieval"], [[1, 0], [0, 0]])
    # The copier, chosen in the model view (a click sets layer and head): each step's key.
    widget.layer, widget.head = 0, 0
    steps = widget.looked_at()
    assert steps["key"].tolist() == [1, 2, 3]
    assert steps["key_token"].tolist() == ["a", "b", "c"]
    assert steps["copy"].all()
    assert steps["step"].tolist() == [0, 1, 2]
    widget.head = 1  # the uniform head ties everywhere: the lowest key, no copy
    assert widget.looked_at()["key"].tolist() == [0, 0, 0]
    assert not widget.looked_at()["copy"].any()


def test_looked_at_without_a_needle_and_its_errors() -> None:
    trace = needle_run()
    steps = looked_at(trace, layer=0, head=0)  # start: the first generated token
    assert steps.columns.tolist() == ["step", "position", "token", "key", "key_token", "tied"]
    assert steps["position"].tolist() == [5, 6, 7]
    with pytest.raises(AttnscopeError, match="layer=4 is not in stream"):
        looked_at(trace, layer=4, head=0)
    with pytest.raises(AttnscopeError, match="head=2 is out of range"):
        looked_at(trace, layer=0, head=2)
    with pytest.raises(AttnscopeError, match="needle="):
        looked_at(trace, layer=0, head=0, needle=(3, 1))
    plain = AttentionTrace(TOKENS, np.full((1, 1, 8, 8), 1 / 8, np.float32))
    with pytest.raises(AttnscopeError, match="start=None needs a trace that holds a generation"):
        looked_at(plain, layer=0, head=0)


@pytest.fixture(scope="module")
def llama(minilm: tuple[Any, Any]) -> tuple[Any, Any]:
    """A tiny random Llama (grouped-query attention) over MiniLM's real WordPiece tokenizer."""
    _, tokenizer = minilm
    return llama_over(tokenizer, 256), tokenizer


@pytest.fixture(scope="module")
def generated(llama: tuple[Any, Any]) -> AttentionTrace:
    model, tokenizer = llama
    text = "The secret number is 42. Grass is green. What is the secret number?"
    return attnscope.capture(model, text, tokenizer=tokenizer, max_new_tokens=6)


def test_a_needle_in_a_haystack_table_ranks_the_model_view(
    llama: tuple[Any, Any], generated: AttentionTrace
) -> None:
    model, tokenizer = llama
    found = attnscope.needle_in_a_haystack(
        model,
        tokenizer=tokenizer,
        haystack="Grass is green. The sky is blue. Water is wet.",
        needle="The secret number is 42.",
        question="What is the secret number?",
        lengths=[48, 96],
        depths=[0.0, 1.0],
        max_new_tokens=4,
    )
    # A random model copies nothing (every score 0 here): this checks that the protocol's own
    # table is taken as it is; test_scan_widget holds the layout to random per-head values.
    widget = AttentionWidget(generated, scan=found.heads, view="model")
    assert widget.rank_by == "scan:retrieval"
    (entry,) = [s for s in widget._meta["statistics"] if s["name"] == "scan:retrieval"]
    assert (entry["inputs"], entry["over"], entry["spread"]) == (4, "runs", "scan:retrieval:spread")
    cache = widget.chunk_cache
    assert isinstance(cache, RankedChunkCache)
    arrays = dict(cache.encode_raw(generated, "stats:self"))
    by_head = found.heads.set_index(["layer", "head"]).sort_index()
    for column in ("retrieval", "retrieval_std"):
        expected = by_head[column].to_numpy().reshape(2, 4)
        name = "scan:retrieval" + (":spread" if column.endswith("_std") else "")
        np.testing.assert_allclose(arrays[name], expected, rtol=1e-6)
    with pytest.raises(AttnscopeError, match="two rows for layer"):
        AttentionWidget(generated, scan=found.runs)  # one row per run and head: no 'input'


def test_looked_at_is_the_strongest_key_of_each_step_query_on_a_real_generation(
    generated: AttentionTrace,
) -> None:
    start = generated.prompt_length
    assert start is not None
    stream = generated.streams["self"]
    for layer in range(2):
        attention = np.asarray(stream.layer_attention(layer))  # (heads, q, k)
        for head in range(4):
            expected, tied = [], []
            for p in range(start, stream.q_len):
                row = attention[head, p - 1, :p].astype(np.float32)
                top = np.rint(row * (np.float32(255) / row.max())) >= 255  # the page's bytes
                expected.append(int(np.flatnonzero(top)[0]))
                tied.append(int(top.sum()) - 1)
            steps = looked_at(generated, layer=layer, head=head, needle=(1, 4))
            assert steps["key"].tolist() == expected
            assert steps["tied"].tolist() == tied
            # Without a tie it is Wu et al.'s argmax, as retrieval_scores reads it.
            alone = steps["tied"] == 0
            argmax = [int(np.argmax(attention[head, p - 1, :p])) for p in steps["position"]]
            assert (steps["key"][alone] == np.asarray(argmax)[alone]).all()


def near_tie_trace() -> AttentionTrace:
    """A 400-token generation whose last step's query weighs keys 132 and 380 nearly alike."""
    n = 400
    weights = np.zeros((1, 1, n, n), np.float32)
    rows = np.arange(n)
    weights[0, 0] = np.tril(np.ones((n, n))) / (rows[:, None] + 1)
    last = weights[0, 0, n - 2]
    top, near = 0.2, 0.2 * 0.0020712 / 0.0020731  # their ratio, in a row that sums to 1
    last[: n - 1] = (1 - top - near) / (n - 3)
    last[132], last[380] = near, top
    generation = {"prompt_length": n - 1, "generated_ids": [0], "generated_text": "x"}
    tokens = [f"t{i}" for i in range(n)]
    return AttentionTrace(tokens, weights, metadata={"generation": generation})


def test_a_near_tie_is_a_tie_in_looked_at_and_the_page_caption() -> None:
    # issue 39: #132 at 0.0020712 and #380 at 0.0020731 looked different to looked_at
    # (exact argmax: #380) and the same to the caption (one byte: #132).
    steps = looked_at(near_tie_trace(), layer=0, head=0)
    assert steps[["key", "tied"]].values.tolist() == [[132, 1]]
