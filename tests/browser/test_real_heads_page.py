"""Real heads of a trained model drawn in the exported page: SmolLM2-135M's induction head
and its attention sink (the README's pictures; ``--screenshots=docs/images`` writes them).

- Layer 18, head 6 is SmolLM2's strongest induction head by the TransformerLens/ARENA
  sweep (tests/test_real_models.py). On a word list said twice, a token of the second
  copy looks at the token after its first occurrence: its strongest key, drawn as the
  head view's thickest line.
- The model view's thumbnails of every layer: past the first layers most heads put
  most of their weight on the first token (the sink), a bright first column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from page_kit import ExportedPage

import attnscope
from real_models import smollm2

pytestmark = [pytest.mark.browser, pytest.mark.real]

WORDS = "The violin, a lantern, seven oranges and the harbour clock"
TEXT = f"{WORDS}. {WORDS}."
LAYER, HEAD = 18, 6


@pytest.fixture(scope="module")
def trace() -> Any:
    model, tokenizer = smollm2()
    return attnscope.capture(model, TEXT, tokenizer=tokenizer)


def second_copy_query(trace: Any) -> tuple[int, int]:
    """A token of the second copy ("lantern") and the key after its first occurrence."""
    tokens = trace.tokens
    hits = [i for i, t in enumerate(tokens) if "lantern" in t]
    assert len(hits) == 2, tokens
    return hits[1], hits[0] + 1


def test_induction_head_stripe_screenshot(
    page: Any, trace: Any, tmp_path: Path, screenshots: Any
) -> None:
    query, expected = second_copy_query(trace)
    row = trace.attention[LAYER, HEAD, query]
    assert int(np.argmax(row)) == expected  # the induction step: after the earlier "lantern"
    assert row[expected] >= 0.5
    widget = attnscope.AttentionWidget(trace, layer=LAYER, heads=[HEAD], query=query)
    out = attnscope.save_html(widget, tmp_path / "induction", views=["head", "model"])
    page.set_viewport_size({"width": 900, "height": 900})
    exported = ExportedPage(page, out.as_uri()).open()
    assert exported.view("head").locator('[data-head][aria-pressed="true"]').count() == 1
    screenshots.take("real-induction-head", exported.picture())


def test_first_token_sink_screenshot(
    page: Any, trace: Any, tmp_path: Path, screenshots: Any
) -> None:
    first = trace.attention[:, :, 4:, 0].mean(axis=(1, 2))
    assert np.median(first) >= 0.35  # as the real tier's band says
    out = attnscope.save_html(trace, tmp_path / "sink", views=["model", "head"])
    page.set_viewport_size({"width": 760, "height": 2100})  # all 30 layers, 9 heads
    exported = ExportedPage(page, out.as_uri())
    page.goto(exported.url)
    exported.show("model")
    screenshots.take("real-sink-model-view", exported.picture())
