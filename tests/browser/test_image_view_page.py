"""The image view of an exported page (issue 25), in the offline chromium.

A tiny random Idefics3 (its image split into 2 x 2 tiles of 2 x 2 tokens, plus a
2 x 2 overview) reads a synthetic scene and generates three tokens. The page's
image view draws the heatmap over the picture, names the text tokens that attend
most to a hovered patch, takes a clicked token as its query (the heatmap
changes), and follows the generation steps.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser_kit import Screenshots
from page_kit import ExportedPage
from playwright.sync_api import expect

import attnscope
import vlm_models

TEXT = "Where is the sun? <image> It is in the sky"
VIEW = '[data-testid="image-view"]'
CANVAS = '[data-testid="image-canvas"]'


def scene(height: int = 48, width: int = 84) -> np.ndarray[Any, Any]:
    """Sky over grass, a yellow sun top right and a red house bottom left."""
    y, x = np.mgrid[0:height, 0:width]
    picture = np.zeros((height, width, 3), np.uint8)
    picture[:] = (110, 170, 235)
    picture[y > height * 0.6] = (70, 150, 60)
    sun = (y - height * 0.25) ** 2 + (x - width * 0.75) ** 2 < (height * 0.15) ** 2
    picture[sun] = (250, 210, 40)
    house = (y > height * 0.45) & (y < height * 0.85) & (x > width * 0.12) & (x < width * 0.35)
    picture[house] = (190, 40, 40)
    return picture


@pytest.fixture(scope="module")
def vlm_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[attnscope.AttentionTrace, Path]:
    model, processor = vlm_models.idefics3()
    trace = attnscope.capture(model, TEXT, images=scene(), processor=processor, max_new_tokens=3)
    path = attnscope.save_html(trace, tmp_path_factory.mktemp("vlm") / "vlm.html")
    return trace, path


# Per panel, in the canvas's pixels: how many pixels carry colour (not the background) and
# how many distinct colours there are; and a hash of the whole canvas.
_INK = """(el) => {
    const c = el.getContext("2d");
    const ratio = el.width / el.getBoundingClientRect().width;
    const bg = Array.from(c.getImageData(el.width - 1, 0, 1, 1).data.slice(0, 3));
    const panels = JSON.parse(el.dataset.panels).map(([x, y, w, h]) => {
        const px = c.getImageData(Math.round(x * ratio), Math.round(y * ratio),
                                  Math.round(w * ratio), Math.round(h * ratio)).data;
        const colours = new Set();
        let inked = 0;
        for (let i = 0; i < px.length; i += 4) {
            const off = Math.abs(px[i] - bg[0]) + Math.abs(px[i + 1] - bg[1])
                + Math.abs(px[i + 2] - bg[2]);
            if (off >= 6) inked++;
            colours.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
        }
        return { inked: inked / (px.length / 4), colours: colours.size };
    });
    const all = c.getImageData(0, 0, el.width, el.height).data;
    let hash = 2166136261;
    for (let i = 0; i < all.length; i++) hash = Math.imul(hash ^ all[i], 16777619) >>> 0;
    return { panels, hash };
}"""


def ink(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.locator(CANVAS).evaluate(_INK)
    return result


def panels(page: Any) -> list[list[float]]:
    found: list[list[float]] = json.loads(page.locator(CANVAS).get_attribute("data-panels"))
    return found


def test_image_view_heatmap_hover_click_and_steps_screenshot(
    page: Any, vlm_page: tuple[attnscope.AttentionTrace, Path], screenshots: Screenshots
) -> None:
    trace, path = vlm_page
    exported = ExportedPage(page, path.as_uri()).open()
    page.click('[data-testid="tab-image"]')
    view = page.locator(VIEW)
    page.wait_for_function(
        "(el) => el.dataset.ready === 'true'", arg=view.element_handle(), timeout=30_000
    )
    # Two grids: the tiled whole image (4 x 4 tokens in 2 x 2 tiles) and its 2 x 2 overview.
    grids = panels(page)
    assert [(g[4], g[5]) for g in grids] == [(4, 4), (2, 2)]
    first = ink(page)
    for panel in first["panels"]:
        assert panel["inked"] > 0.95  # the picture under its heatmap fills the panel
        assert panel["colours"] > 8  # the scene and the heat, not one flat colour
    expect(page.locator('[data-testid="image-info"]')).to_contain_text("query")

    # Hover a patch: the text tokens that attend to it most, by name.
    x, y, w, h = grids[0][:4]
    before = int(view.get_attribute("data-draws") or 0)
    page.locator(CANVAS).hover(position={"x": x + w * 0.8, "y": y + h * 0.2})
    page.wait_for_function(
        "([el, n]) => Number(el.dataset.draws) > n", arg=[view.element_handle(), before]
    )
    hover = page.locator('[data-testid="image-hover"]')
    expect(hover).to_contain_text("img0 r0c3")
    expect(hover).to_contain_text("most attended by")
    named = [int(t) for t in (hover.get_attribute("data-tokens") or "").split(",") if t]
    assert named
    shown = {p for region in trace.images for p in region.all_positions()}
    assert not shown & set(named)  # text tokens only
    expect(hover).to_contain_text(trace.tokens[named[0]])

    # Click another text token: it becomes the query and the heatmap changes.
    query = int(view.get_attribute("data-query") or -1)
    other = trace.tokens.index("sky")  # after the image: a causal model's token sees it
    assert other != query
    before = int(view.get_attribute("data-draws") or 0)
    page.locator(f'[data-testid="image-tokens"] [data-query="{other}"]').click()
    page.wait_for_function(
        "([el, n]) => Number(el.dataset.draws) > n", arg=[view.element_handle(), before]
    )
    expect(view).to_have_attribute("data-query", str(other))
    expect(page.locator('[data-testid="image-info"]')).to_contain_text("query \u201csky\u201d")
    assert ink(page)["hash"] != first["hash"]

    # One colour scale for both grids: the same query, other colours.
    clicked = ink(page)["hash"]
    before = int(view.get_attribute("data-draws") or 0)
    page.select_option('[data-testid="image-scale"]', "shared")
    page.wait_for_function(
        "([el, n]) => Number(el.dataset.draws) > n", arg=[view.element_handle(), before]
    )
    assert ink(page)["hash"] != clicked
    page.select_option('[data-testid="image-scale"]', "grid")

    # Generation: each step's query is the token before the one generated.
    prompt = trace.metadata["generation"]["prompt_length"]
    page.click('[data-testid="step-next"]')
    expect(view).to_have_attribute("data-query", str(prompt - 1))
    page.click('[data-testid="step-next"]')
    expect(view).to_have_attribute("data-query", str(prompt))
    expect(page.locator('[data-testid="step-caption"]')).to_contain_text("step 2/3")
    page.locator(CANVAS).hover(position={"x": x + w * 0.3, "y": y + h * 0.7})
    expect(hover).to_contain_text("img0 r2c1")
    screenshots.take("page-image-view", exported.picture())

    # The PNG export is the same picture: the panels' pixels under a caption naming the query.
    with page.expect_download() as got:
        page.click('[data-testid="save-png"]')
    png = Path(got.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    canvas = page.locator(CANVAS).bounding_box()
    assert width == 2 * round(canvas["width"])  # twice the CSS size
    assert height > 2 * round(canvas["height"])  # and a caption above it
    with page.expect_download() as got:
        page.click('[data-testid="save-svg"]')
    svg = Path(got.value.path()).read_text(encoding="utf-8")
    assert svg.count("<image ") == len(grids)  # one raster per grid
    assert "img0 · 4×4 patches in 2×2 tiles" in svg
