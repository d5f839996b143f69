"""The model view's enlarged cell fits its grid's box from the first hover (issue 39, point 5).

MiniLM's six layers make a grid shorter than the preview's widest reach: the
first hover of a fresh page over the last row must open the preview inside the
grid's scroll box (it ran 200 px past it until a second hover).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from browser_kit import Screenshots
from page_kit import ExportedPage
from playwright.sync_api import expect

import attnscope

_BOXES = """(preview) => {
    const scroller = preview.parentElement;
    const wrap = scroller.getBoundingClientRect(), box = preview.getBoundingClientRect();
    return { top: box.top - wrap.top, bottom: box.bottom - wrap.top, height: wrap.height,
             overflow: scroller.scrollHeight - scroller.clientHeight };
}"""


def test_the_first_hover_opens_the_preview_inside_the_grid(
    page: Any, minilm: tuple[Any, Any], tmp_path: Path, screenshots: Screenshots
) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, "The cat sat on the mat by the door.", tokenizer=tokenizer)
    path = attnscope.AttentionWidget(trace).save_html(tmp_path / "preview")
    for width in (1400, 900):  # a wide and a narrow window: cells of 64 px and of fewer
        page.set_viewport_size({"width": width, "height": 900})
        exported = ExportedPage(page, path.as_uri()).open()
        exported.show("model")
        view = exported.view("model")
        canvas = exported.canvas("model")
        cell, row = (float(view.get_attribute(f"data-{n}-px")) for n in ("cell", "row"))
        canvas.hover(position={"x": 34 + 11 * (cell + 2) + cell / 2, "y": 16 + 5 * row + cell / 2})
        preview = page.locator('[data-testid="model-preview"]')
        expect(preview).to_have_attribute("data-source", re.compile("thumb|attn"))
        boxes = preview.evaluate(_BOXES)
        screenshots.take(f"model-preview-first-hover-{width}", exported.picture())
        assert boxes["top"] >= 0, boxes
        assert boxes["bottom"] <= boxes["height"] + 0.5, f"the preview runs past the grid: {boxes}"
        assert boxes["overflow"] <= 0, f"the grid's box scrolls to show the preview: {boxes}"
