"""show_generation (issue 34): each generated token drawn as it is produced, a stop
button, and a final widget equal to the plain capture of the same generation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
from attnscope.display.live import LiveGeneration
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from test_capture_generate import causal_lm, model_state

PROMPT = "The quick brown"
NEW = 5


def same_trace(a: attnscope.AttentionTrace, b: attnscope.AttentionTrace) -> None:
    assert a.tokens == b.tokens
    assert a.metadata["generation"] == b.metadata["generation"]
    np.testing.assert_allclose(a.attention, b.attention, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_each_step_is_drawn_and_the_final_widget_is_the_plain_capture(family: str) -> None:
    model, tok = causal_lm(family)
    before = model_state(model)
    steps: list[tuple[int, int, Any]] = []

    def seen(live: LiveGeneration) -> None:
        widget = live.widget
        assert widget is not None
        steps.append((widget.step, widget.query, widget.trace))

    live = attnscope.show_generation(
        model, PROMPT, NEW, tokenizer=tok, display=False, background=False, on_step=seen
    )
    plain = attnscope.capture(model, PROMPT, tokenizer=tok, max_new_tokens=NEW)
    final = live.wait()
    same_trace(final, plain)
    assert live.widget is not None
    assert live.widget.trace is final
    assert live.widget.step == NEW - 1
    assert model_state(model) == before
    # Step k drew token k: the query is the row that produced it, and every row shown
    # is the final trace's row (a causal model's rows do not change as tokens follow).
    prompt = plain.prompt_length
    assert prompt is not None
    assert [s[0] for s in steps] == list(range(NEW))
    for k, (_, query, trace) in enumerate(steps):
        n = prompt + k + 1
        assert query == prompt + k - 1
        assert trace.generated_ids == plain.generated_ids[: k + 1]
        np.testing.assert_allclose(
            trace.attention, plain.attention[:, :, :n, :n], rtol=1e-5, atol=1e-6
        )


def test_no_progress_bars_from_the_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from attnscope import _progress

    model, tok = causal_lm("gpt2")
    written = io.StringIO()
    monkeypatch.setattr(_progress, "FILE", written)
    monkeypatch.setattr(_progress, "DELAY", 0.0)  # a bar would show at once
    attnscope.show_generation(model, PROMPT, 2, tokenizer=tok, display=False, background=False)
    assert written.getvalue() == ""
    assert not _progress.QUIET.get()  # the caller's context is as it was
    attnscope.capture(model, PROMPT, tokenizer=tok)
    assert "attnscope capture" in written.getvalue()  # outside, bars show as before


def test_the_stop_button_ends_the_generation_with_the_tokens_so_far() -> None:
    model, tok = causal_lm("llama")

    def press_after_two(live: LiveGeneration) -> None:
        if live.steps == 2:
            live.stop_button.click()  # the button's own click handler

    live = attnscope.show_generation(
        model, PROMPT, NEW, tokenizer=tok, display=False, on_step=press_after_two
    )
    final = live.wait(timeout=120)
    assert live.done
    assert live.stop_button.disabled
    # The token being generated when the button was pressed still comes (transformers
    # checks stopping criteria before it streams a token): 3 of 5, each drawn.
    count = len(final.generated_ids or ())
    assert count == live.steps == 3
    assert live.status.value == "stopped: 3 tokens generated"
    plain = attnscope.capture(model, PROMPT, tokenizer=tok, max_new_tokens=count)
    assert final.generated_ids == plain.generated_ids
    assert final.metadata["generation"]["settings"] == {"max_new_tokens": NEW}  # as asked
    assert (
        final.notes[-1]
        == f"generation stopped by the stop button after 3 of max_new_tokens={NEW} tokens."
    )
    np.testing.assert_allclose(final.attention, plain.attention, rtol=1e-5, atol=1e-7)


def test_selection_carries_from_step_to_step_and_sampling_with_a_seed() -> None:
    model, tok = causal_lm("gpt2")

    def choose(live: LiveGeneration) -> None:
        assert live.widget is not None
        if live.steps == 1:
            live.widget.layer = 1
            live.widget.heads = [2]
        else:
            assert (live.widget.layer, live.widget.heads) == (1, [2])

    options = {"do_sample": True, "seed": 3, "pad_token_id": 0}
    live = attnscope.show_generation(
        model, PROMPT, 3, view="model", tokenizer=tok, display=False, on_step=choose, **options
    )
    final = live.wait(timeout=120)
    assert live.widget is not None
    assert live.widget.view == "model"
    same_trace(final, attnscope.capture(model, PROMPT, tokenizer=tok, max_new_tokens=3, **options))


def test_refused_before_generating() -> None:
    model, tok = causal_lm("gpt2")
    with pytest.raises(AttnscopeTypeError, match="streamer= is set by show_generation"):
        attnscope.show_generation(model, PROMPT, 2, tokenizer=tok, streamer=object())
    with pytest.raises(AttnscopeTypeError, match="images"):
        attnscope.show_generation(model, PROMPT, 2, tokenizer=tok, images=[object()])
    with pytest.raises(AttnscopeError, match="beam search"):
        attnscope.show_generation(model, PROMPT, 2, tokenizer=tok, num_beams=2)
    with pytest.raises(AttnscopeError, match="max_new_tokens must be at least 1"):
        attnscope.show_generation(model, PROMPT, 0, tokenizer=tok)
    with pytest.raises(AttnscopeTypeError, match="unknown or inapplicable"):
        attnscope.show_generation(model, PROMPT, 2, tokenizer=tok, colour="red")
    failed = attnscope.show_generation(model, "", 2, tokenizer=tok, display=False)
    with pytest.raises(AttnscopeError, match="text is empty"):
        failed.wait(timeout=60)
    assert failed.status.value.startswith("failed: text is empty")
