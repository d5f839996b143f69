"""Issue 36 on trained SmolLM2-135M in the exported page (the guide's pictures;
``--screenshots=docs/images`` writes them).

- The why panel: SmolLM2's induction head (layer 18, head 6) at the second "lantern" attends
  to the token after the first one; the panel's key side is led by layer 16's head 0, the
  model's strongest previous-token head (K-composition, Olsson et al. 2022), and the page
  holds the pair split in the notebook.
- Weight by value norm: in layer 23 the first token takes 72% of the attention but 35% of
  what the values carry (``head_stats``' ``sink`` and ``sink_value``); the head view's lines
  and the model view's cells redraw weighted, and the legends say so.
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

WORDS = "The violin, a lantern, seven oranges and the harbour clock"
TEXT = f"{WORDS}. {WORDS}."
INDUCTION, PREVIOUS, SINKY = (18, 6), (16, 0), 23


@pytest.fixture(scope="module")
def loaded() -> tuple[Any, Any, Any]:
    model, tokenizer = smollm2()
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, value_norms=True)
    return model, tokenizer, trace


def test_why_panel_traces_the_induction_head_to_a_previous_token_head_screenshot(
    page: Any, loaded: tuple[Any, Any, Any], tmp_path: Path, screenshots: Any
) -> None:
    model, tokenizer, trace = loaded
    hits = [i for i, t in enumerate(trace.tokens) if "lantern" in t]
    query, key = hits[1], hits[0] + 1
    layer, head = INDUCTION
    widget = attnscope.AttentionWidget(
        trace, view="neuron", layer=layer, head=head, query=query, key=key
    )
    table = widget.explain(model, tokenizer=tokenizer, query=query, key=key)
    assert table is not None
    by_key = table.groupby("key_source").contribution.sum()
    assert by_key.abs().idxmax() == f"L{PREVIOUS[0]}H{PREVIOUS[1]}"
    prev = attnscope.head_stats(trace).pivot(index="layer", columns="head", values="prev")
    assert prev.stack().idxmax() == PREVIOUS  # the model's strongest previous-token head
    out = attnscope.save_html(widget, tmp_path / "why", views=["neuron", "head"])
    page.set_viewport_size({"width": 1000, "height": 760})
    page.goto(out.as_uri())
    view = wait_for_widget(page, root='[data-testid="neuron-view"]')
    panel = view.locator('[data-testid="why-panel"]')
    expect(panel).to_have_attribute("data-state", "ready")
    expect(panel).to_have_attribute("data-pair", f"{layer}:{head}:{query}:{key}")
    key_side = panel.locator(".attnscope-why-col").nth(1).locator('[data-testid="why-row"]')
    expect(key_side.first).to_have_attribute("data-source", f"L{PREVIOUS[0]}H{PREVIOUS[1]}")
    assert float(panel.get_attribute("data-score") or "nan") == pytest.approx(
        table.attrs["score"], rel=1e-5
    )
    screenshots.take("real-why-panel", ExportedPage(page, out.as_uri()).picture())


def test_value_weighted_sink_screenshot(
    page: Any, loaded: tuple[Any, Any, Any], tmp_path: Path, screenshots: Any
) -> None:
    _model, _tokenizer, trace = loaded
    stats = attnscope.head_stats(trace).groupby("layer")[["sink", "sink_value"]].mean()
    sink, weighted = stats.loc[SINKY]
    assert sink > 0.7
    assert weighted < 0.4
    assert (stats.sink_value < stats.sink).sum() >= 25  # all but a few of the 30 layers
    last = len(trace.tokens) - 2  # the second "clock"
    # Head 5 of layer 23 at the second "clock": 77% of its weight on "The", 24% of what it moves.
    widget = attnscope.AttentionWidget(trace, layer=SINKY, heads=[5], query=last)
    out = attnscope.save_html(widget, tmp_path / "value", views=["head", "model"])
    page.set_viewport_size({"width": 1000, "height": 620})
    exported = ExportedPage(page, out.as_uri()).open()
    head = exported.view("head")
    legend = head.locator('[data-testid="value-legend"]')
    expect(legend).to_be_hidden()
    screenshots.take("real-value-raw-head", exported.picture())
    switch = head.locator('[data-testid="toggle-value_weighted"]')
    exported.redraw_after("head", switch.check)
    expect(legend).to_contain_text("weighted by value norm")
    screenshots.take("real-value-weighted-head", exported.picture())
    model = exported.show("model")
    expect(model.locator('[data-testid="model-value-weighted"]')).to_be_checked()
    expect(model).to_have_attribute("data-value-weighted", "true")
