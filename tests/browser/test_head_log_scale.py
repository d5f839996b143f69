"""The head view's log scale with every head of MiniLM selected stays readable.

The log scale lifts faint weights: one head's lines then cover most (query, key)
pairs, and twelve heads at that opacity painted the lines area solid. The test
opens the exported page of a 48-token MiniLM run, turns the log scale on with
all 12 heads selected, and measures the ink of the lines area: the fraction of
its pixels that differ from the background by more than a quarter of the
channel range. That fraction must stay under a bound the old drawing exceeded
(see INK_MAX) and above a floor (lines are still drawn).

``make screenshots`` writes ``page-head-log-scale.png`` with ``--screenshots``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from page_kit import ExportedPage

import attnscope

pytestmark = pytest.mark.browser

TEXT = (
    "When the storm finally passed over the valley, the farmers walked out to their "
    "fields and counted the broken fences, the flattened corn and the frightened sheep "
    "that had run down the hill into the cold river below the old mill."
)
# Measured at this input, layer 2, 12 heads: the weight scale 0.56; the log scale
# 0.99 before issue 26's fade, 0.44 with it (faded to strength^6.5).
INK_MAX = 0.6
INK_MIN = 0.05
COL_W = 128  # js/views/head/head_lines.ts: width of each token column

# Share of the lines area's pixels (between the two token columns) whose colour,
# laid over the background, differs from it by more than `threshold` in a channel.
_INK = """(el, [threshold, colW]) => {
    let node = el, bg = null;
    while (node && !bg) {
        const c = getComputedStyle(node).backgroundColor.match(/[\\d.]+/g).map(Number);
        if (c.length < 4 || c[3] > 0) bg = c.slice(0, 3);
        node = node.parentElement;
    }
    bg = bg ?? [255, 255, 255];
    const scale = el.width / el.getBoundingClientRect().width;
    const x0 = Math.ceil((colW + 2) * scale), x1 = Math.floor(el.width - (colW + 2) * scale);
    const px = el.getContext("2d").getImageData(x0, 0, x1 - x0, el.height).data;
    let ink = 0;
    for (let i = 0; i < px.length; i += 4) {
        const a = px[i + 3] / 255;
        let diff = 0;
        for (let c = 0; c < 3; c++) diff = Math.max(diff, Math.abs(px[i + c] - bg[c]) * a);
        if (diff > threshold * 255) ink++;
    }
    return ink / (px.length / 4);
}"""


@pytest.fixture(scope="module")
def log_page(minilm: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exported page of MiniLM on ``TEXT`` (every head selected, as by default)."""
    model, tokenizer = minilm
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    assert len(trace.tokens) >= 40
    return attnscope.save_html(trace, tmp_path_factory.mktemp("log") / "minilm-log")


def ink(exported: ExportedPage, threshold: float = 0.25) -> float:
    """The ink fraction of the head view's lines area."""
    return float(exported.canvas("head").evaluate(_INK, [threshold, COL_W]))


def test_log_scale_twelve_heads_is_not_a_wall_screenshot(
    page: Any, log_page: Path, screenshots: Any
) -> None:
    page.set_viewport_size({"width": 960, "height": 1100})
    exported = ExportedPage(page, log_page.as_uri()).open()
    exported.redraw_after("head", lambda: page.select_option('[data-testid="layer-select"]', "2"))
    assert exported.view("head").locator('[data-head][aria-pressed="true"]').count() == 12
    exported.redraw_after("head", lambda: page.locator('[data-testid="toggle-log_scale"]').check())
    logged = ink(exported)
    screenshots.take("page-head-log-scale", exported.picture())
    assert INK_MIN < logged < INK_MAX, f"ink fraction {logged:.3f}"
    fade = float(exported.attr("head", "data-fade") or 0)
    assert fade > 1
    legend = exported.view("head").locator('[data-testid="head-scale"]').inner_text()
    assert "log scale: 0.001 (clear) … 1 (full)" in legend, legend
    assert f"strength^{fade:.1f}" in legend, legend

    # One query's fan is no wall: its lines keep the plain log scale.
    query = page.locator('.attnscope-hv-col[data-side="query"] [data-i="12"]')
    exported.redraw_after("head", query.click)
    assert exported.attr("head", "data-fade") == "1"
    assert int(exported.attr("head", "data-lines") or 0) > 100
    assert ink(exported) > INK_MIN
    legend = exported.view("head").locator('[data-testid="head-scale"]').inner_text()
    assert "strength^" not in legend, legend
