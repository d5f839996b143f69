"""The head view's "collapse images" box on an exported page of a tiny VLM (issue 25).

A tiny random LLaVA reads "Look <image> at this cat" with a synthetic picture (16 image
tokens on a 4 x 4 grid). Its widget offers each image as one head-view row: the page opens
on token rows (``segment_rows`` False) with the box unticked; ticking it shows the image
as one row labelled "img0 (4×4 patches)" among the text tokens' rows, with lines drawn
between them; a widget saved with ``segment_rows=True`` opens collapsed, and its PNG and
SVG say "images collapsed". ``--screenshots=DIR`` writes the picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from page_kit import ExportedPage, canvas_stats

import attnscope
import vlm_models
from vlm_models import TEXT, image

pytestmark = pytest.mark.browser

TOGGLE = '[data-testid="toggle-segments"]'
ROWS = ".attnscope-seg-q .attnscope-seg-label"


@pytest.fixture(scope="module")
def vlm_trace() -> attnscope.AttentionTrace:
    model, processor = vlm_models.llava()
    return attnscope.capture(model, TEXT["llava"], images=image(40, 60), processor=processor)


def _page(trace: attnscope.AttentionTrace, folder: Path, **options: Any) -> Path:
    widget = attnscope.AttentionWidget(trace, layer=1, **options)
    return widget.save_html(folder / "rows.html", views=("head", "image"))


def test_collapse_images_shows_each_image_as_one_row(
    page: Any,
    vlm_trace: attnscope.AttentionTrace,
    tmp_path: Path,
    screenshots: Any,
) -> None:
    trace = vlm_trace
    [region] = trace.images
    first, last = min(region.all_positions()), max(region.all_positions())
    exported = ExportedPage(page, _page(trace, tmp_path).as_uri()).open()
    view = exported.view("head")
    toggle = page.locator(TOGGLE)
    # Token rows first; the box is offered and says what it does.
    assert "is-segments" not in (view.get_attribute("class") or "")
    assert not toggle.is_checked()
    assert page.locator(".attnscope-seg-toggle").inner_text().strip() == "collapse images"
    token_rows = page.locator('.attnscope-hv-col[data-side="query"] [data-i]')
    assert token_rows.count() > 0

    exported.redraw_after("head", toggle.check)
    assert "is-segments" in (view.get_attribute("class") or "")
    labels = page.locator(ROWS).all_inner_texts()
    assert len(labels) == len(trace.tokens) - (last - first)
    assert labels[first] == "img0 (4×4 patches)"
    assert labels[first + 1] == "at"
    title = page.locator(ROWS).nth(first).get_attribute("title") or ""
    assert f"tokens {first}\u2013{last}" in title
    legend = page.locator('[data-testid="segment-legend"]').inner_text()
    assert f"{len(labels)} rows: 1 image as one row each" in legend
    # Lines between the rows: ink in the canvas's middle third.
    drawn = int(exported.attr("head", "data-lines") or 0)
    assert drawn > len(labels)
    canvas = page.locator(".attnscope-seg-canvas")
    width, height = canvas.evaluate("(c) => [c.width, c.height]")
    assert canvas_stats(canvas, (width // 3, 0, width // 3, height)).painted > 300
    # Hover the image's query row: only its lines remain, and key bars say where it looks.
    exported.redraw_after("head", lambda: page.locator(ROWS).nth(first).hover())
    assert 0 < int(exported.attr("head", "data-lines") or 0) < drawn
    screenshots.take("head-view-collapsed-images", exported.picture())
    page.screenshot(path="/tmp/attnscope-collapsed-images.png", full_page=True)

    exported.redraw_after("head", toggle.uncheck)
    assert "is-segments" not in (view.get_attribute("class") or "")


def test_python_opens_it_collapsed_and_exports_say_so(
    page: Any, vlm_trace: attnscope.AttentionTrace, tmp_path: Path
) -> None:
    exported = ExportedPage(page, _page(vlm_trace, tmp_path, segment_rows=True).as_uri()).open()
    assert page.locator(TOGGLE).is_checked()
    assert "img0 (4×4 patches)" in page.locator(ROWS).all_inner_texts()
    with page.expect_download() as info:
        exported.view("head").locator('[data-testid="save-svg"]').click()
    svg = Path(info.value.path()).read_text(encoding="utf-8")
    assert "images collapsed (each image one row)" in svg
    assert svg.count("img0 (4×4 patches)") == 2  # the query and the key column
    assert "<line " in svg
