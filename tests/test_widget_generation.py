"""The widget's side of a generation: _meta.generation, the step and generated_only traits,
the generated rows' thumbnails."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from attnscope import AttentionTrace, AttentionWidget
from attnscope.encode.arrays import thumbnails
from attnscope.encode.chunks import all_keys, encode_chunk, parse_key
from attnscope.encode.meta import build_meta

PROMPT, NEW = 4, 3


def generation_trace() -> AttentionTrace:
    """A causal trace of 4 prompt + 3 generated tokens, as capture(max_new_tokens=3) records it."""
    n = PROMPT + NEW
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(2, 2, n, n)) + np.triu(np.full((n, n), -np.inf), 1)
    attention = np.exp(scores - scores.max(-1, keepdims=True))
    attention /= attention.sum(-1, keepdims=True)
    labels = ["<s>", "The", "cat", "sat", " on", " the", " mat"]
    return AttentionTrace(
        labels,
        attention.astype(np.float32),
        segments=[0] * PROMPT + [1] * NEW,
        metadata={
            "generation": {
                "prompt_length": PROMPT,
                "generated_ids": [10, 11, 12],
                "generated_text": " on the mat",
                "settings": {"max_new_tokens": NEW},
            }
        },
    )


def test_meta_says_where_the_prompt_ends() -> None:
    meta = build_meta(generation_trace())
    assert meta["generation"] == {
        "stream": "self",
        "prompt_length": PROMPT,
        "generated": NEW,
        "thumb_rows": NEW,
        "thumb_cols": PROMPT + NEW,
    }
    plain = AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    assert build_meta(plain)["generation"] is None


def test_step_and_query_move_together() -> None:
    # Step s is the choice of generated token s: its query is the token before it.
    widget = AttentionWidget(generation_trace(), step=1)
    assert (widget.step, widget.query) == (1, PROMPT)
    widget.step = 0  # the first generated token was chosen by the prompt's last token
    assert widget.query == PROMPT - 1
    widget.step = NEW - 1
    assert widget.query == PROMPT + NEW - 2
    widget.query = PROMPT + 1  # another generating query: the step follows
    assert widget.step == 2
    widget.query = PROMPT + NEW - 1  # the last token chose nothing: no step
    assert widget.step is None
    widget.step = 0
    widget.query = 1  # an earlier prompt token: no step
    assert widget.step is None
    assert widget.query == 1
    widget.query = PROMPT  # without a step shown, a query starts none
    assert widget.step is None
    assert AttentionWidget(generation_trace(), query=5).step is None


@pytest.mark.parametrize(
    ("trace", "trait", "value", "match"),
    [
        ("generation", "step", NEW, r"step=3 is out of range: 3 tokens .* \(steps 0..2\)"),
        ("generation", "step", -1, "out of range"),
        ("plain", "step", 0, "applies to a trace of a generation"),
        ("plain", "generated_only", True, "this trace has none"),
    ],
)
def test_bad_step_values_are_refused(trace: str, trait: str, value: object, match: str) -> None:
    source = (
        generation_trace()
        if trace == "generation"
        else AttentionTrace(["a", "b"], np.full((1, 1, 2, 2), 0.5, np.float32))
    )
    widget = AttentionWidget(source)
    before = (widget.step, widget.query, widget.generated_only)
    with pytest.raises(traitlets.TraitError, match=match):
        setattr(widget, trait, value)
    assert (widget.step, widget.query, widget.generated_only) == before
    with pytest.raises(traitlets.TraitError, match=match):
        AttentionWidget(source, **{trait: value})


def test_generated_rows_have_their_own_thumbnails() -> None:
    trace = generation_trace()
    widget = AttentionWidget(trace, view="model", generated_only=True)
    assert widget.generated_only
    key = parse_key(f"thumbs:self:{PROMPT}", trace)
    assert key.key == f"thumbs:self:{PROMPT}"
    [(name, thumbs)] = encode_chunk(trace, key)
    assert name == "thumbs"
    np.testing.assert_array_equal(
        thumbs, thumbnails(trace.attention[:, :, PROMPT:], NEW, PROMPT + NEW)
    )
    [(reply, buffers)] = widget.answer({"type": "request", "keys": [key.key]})
    assert reply["chunks"][0]["arrays"][0]["shape"] == [2, 2, NEW, PROMPT + NEW]
    assert len(buffers) == 1
    with pytest.raises(ValueError, match="first row 7 is out of range"):
        parse_key("thumbs:self:7", trace)
    # An exported page that offers the model view holds them too.
    assert f"thumbs:self:{PROMPT}" in all_keys(trace)
    assert f"thumbs:self:{PROMPT}" not in all_keys(trace, views=("head",))
