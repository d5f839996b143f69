"""The model view's "collapse images" box on an exported page of a tiny VLM (issue 25).

A tiny random LLaVA reads "Look <image> at this cat" with a synthetic picture (16 image
tokens on a 4 x 4 grid). Its page opens on the model view with token cells; ticking the
model view's box (the ``segment_rows`` trait, shared with the head view) redraws every
cell as its head's segment x segment mass, the image one row and one column; hovering a
cell's image row names it ("img0 (4×4 patches)") in the preview's caption, and the head
view opens collapsed too. ``--screenshots=DIR`` writes the picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from page_kit import ExportedPage

import attnscope
import vlm_models
from vlm_models import TEXT, image

pytestmark = pytest.mark.browser

TOGGLE = '[data-testid="model-toggle-segments"]'
LABEL_W, LABEL_H, GAP = 34, 16, 2  # js/views/model/model_grid.ts


@pytest.fixture(scope="module")
def vlm_trace() -> attnscope.AttentionTrace:
    model, processor = vlm_models.llava()
    return attnscope.capture(model, TEXT["llava"], images=image(40, 60), processor=processor)


def _pixels(canvas: Any) -> str:
    return str(canvas.evaluate("(c) => c.toDataURL()"))


def test_model_view_collapses_images(
    page: Any, vlm_trace: attnscope.AttentionTrace, tmp_path: Path, screenshots: Any
) -> None:
    trace = vlm_trace
    [region] = trace.images
    first, last = min(region.all_positions()), max(region.all_positions())
    rows = len(trace.tokens) - (last - first)
    widget = attnscope.AttentionWidget(trace, layer=1)
    path = widget.save_html(tmp_path / "model-rows.html", views=("model", "head"))
    exported = ExportedPage(page, path.as_uri()).open()
    exported.show("model")
    view, canvas = exported.view("model"), exported.canvas("model")
    toggle = page.locator(TOGGLE)
    assert view.get_attribute("data-rows") == "tokens"
    assert not toggle.is_checked()
    assert page.locator(".attnscope-mv-seg-toggle").inner_text().strip() == "collapse images"
    tokens = _pixels(canvas)

    exported.redraw_after("model", toggle.check)
    assert view.get_attribute("data-rows") == "segments"
    assert view.get_attribute("data-segments-missing") == "0"  # every layer's chunk is in the page
    assert _pixels(canvas) != tokens
    view.screenshot(path="/tmp/attnscope-model-collapsed-grid.png")

    # Hover the image's query row, key column 0, of layer 1 head 2: the caption names it.
    heads = trace.streams["self"].num_heads
    width = float(canvas.evaluate("(c) => c.getBoundingClientRect().width"))
    cell = (width - LABEL_W) / heads - GAP
    x = LABEL_W + 2 * (cell + GAP) + 0.5 / rows * cell
    y = LABEL_H + 1 * (cell + GAP) + (first + 0.5) / rows * cell
    canvas.hover(position={"x": x, "y": y})
    caption = page.locator(".attnscope-mv-caption")
    caption.wait_for(state="visible")
    text = caption.inner_text()
    assert "images collapsed" in text
    assert "query \u2068img0 (4×4 patches)\u2069 → key \u2068" in text  # labels isolated
    assert page.locator('[data-testid="model-preview"]').get_attribute("data-source") == "segments"
    assert page.locator('[data-testid="model-preview"]').get_attribute("data-query-labels") == str(
        rows
    )
    screenshots.take("model-view-collapsed-images", exported.picture())
    page.screenshot(path="/tmp/attnscope-model-collapsed-images.png", full_page=True)

    # The head view follows the same trait.
    exported.show("head")
    assert page.locator('[data-testid="toggle-segments"]').is_checked()
    assert (
        "img0 (4×4 patches)"
        in page.locator(".attnscope-seg-q .attnscope-seg-label").all_inner_texts()
    )
