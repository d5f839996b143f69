"""The neuron view of a trained causal LM (SmolLM2-135M) opens on the last ordinary token.

That token sees every key (the one the model predicts the next word from), where the first
would see one key with weight 1.0. The page says so in its info line and query box, and its
softmax over all the keys matches the model's own weights. ``--screenshots=docs/images``
writes the picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_kit import wait_for_widget
from page_kit import ExportedPage
from playwright.sync_api import expect

import attnscope
from real_models import smollm2

pytestmark = [pytest.mark.browser, pytest.mark.real]

TEXT = "The violin in the attic belonged to my grandmother, who played it every"
LAYER, HEAD = 12, 0  # at " every" this head looks back at " played" (0.79 of its weight)


def test_the_neuron_view_opens_on_the_last_token_screenshot(
    page: Any, tmp_path: Path, screenshots: Any
) -> None:
    model, tokenizer = smollm2()
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    last = len(trace.tokens) - 1
    assert trace.source.kinds[last] == "token"
    widget = attnscope.AttentionWidget(trace, view="neuron", layer=LAYER, head=HEAD)
    assert widget.query is None  # nothing chosen: the view picks
    out = attnscope.save_html(widget, tmp_path / "causal", views=["neuron"])
    page.set_viewport_size({"width": 1000, "height": 760})
    page.goto(out.as_uri())
    view = wait_for_widget(page, root='[data-testid="neuron-view"]')
    info = view.locator('[data-testid="neuron-info"]')
    expect(info).to_contain_text(f"query “{trace.source.labels[last]}” (#{last})")
    expect(info).to_contain_text("matches the model's own weights")  # softmax over every key
    assert view.locator('[data-testid="neuron-query"]').input_value() == str(last)
    # The last query sees every key; its strongest is the model's own strongest.
    rows = view.locator("[data-key]")
    weights = {
        int(rows.nth(i).get_attribute("data-key") or -1): float(
            rows.nth(i).get_attribute("data-weight") or "nan"
        )
        for i in range(rows.count())
    }
    assert set(weights) == set(range(last + 1))
    row = trace.stream.layer_attention(LAYER)[HEAD, last]
    assert max(weights, key=lambda j: weights[j]) == int(row.argmax())
    assert trace.tokens[int(row.argmax())].strip() in ("played", "Ġplayed")
    screenshots.take("real-causal-neuron-last-token", ExportedPage(page, out.as_uri()).picture())
