"""The exported page (save_html) in offline chromium: every view renders and answers.

MiniLM on a sentence pair. Each interaction is checked on what the view drew
(its ``data-lines`` / ``data-draws`` / rows), never on timing; the neuron
view's q·k is checked against the trace's own vectors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from browser_kit import Screenshots, draw_count, wait_for_next_draw, wait_for_widget
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat because it was tired."
PAIR = "It fell asleep at once."
HEAD = '[data-testid="head-view"]'
MODEL = '[data-testid="model-view"]'
NEURON = '[data-testid="neuron-view"]'
NEURON_AT = {"layer": 2, "head": 1, "query": 3}  # "sat" attending, in layer 2 head 1
# Model-view grid geometry (js/views/model.ts): label column, label row, gap between cells.
GRID_LABEL_W, GRID_LABEL_H, GRID_GAP = 34, 16, 2


@pytest.fixture(scope="module")
def exported(minilm: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import attnscope

    model, tokenizer = minilm
    widget = attnscope.show_neuron_view(
        model, TEXT, tokenizer=tokenizer, text_pair=PAIR, **NEURON_AT
    )
    folder = tmp_path_factory.mktemp("exported")
    neuron_page = attnscope.save_html(widget, folder / "neuron.html")
    widget.view = "head"
    widget.query = None
    head_page = attnscope.save_html(widget, folder / "head.html")
    return {"trace": widget.trace, "head": head_page.as_uri(), "neuron": neuron_page.as_uri()}


def lines(page: Any) -> int:
    return int(page.locator(HEAD).get_attribute("data-lines"))


def after_next_draw(page: Any, root: str, action: Any) -> None:
    before = draw_count(page, root)
    action()
    wait_for_next_draw(page, before, root=root)


def test_head_view_heads_and_tokens_change_what_is_drawn(
    page: Any, exported: dict[str, Any]
) -> None:
    page.goto(exported["head"])
    wait_for_widget(page, root=HEAD)
    all_lines = lines(page)
    assert all_lines > 0

    swatch = page.locator('.attnscope-swatch[data-head="0"]')
    expect(swatch).to_have_attribute("aria-pressed", "true")
    after_next_draw(page, HEAD, swatch.click)
    expect(swatch).to_have_attribute("aria-pressed", "false")
    fewer_heads = lines(page)
    assert 0 < fewer_heads < all_lines

    token = page.locator('.attnscope-hv-q .attnscope-tok[data-i="3"]')
    after_next_draw(page, HEAD, token.hover)
    one_query = lines(page)
    assert 0 < one_query < fewer_heads

    after_next_draw(page, HEAD, token.click)  # lock the query ...
    after_next_draw(page, HEAD, lambda: page.mouse.move(0, 0))  # ... leaving keeps its lines
    assert lines(page) == one_query


def test_model_view_cell_click_opens_that_head(page: Any, exported: dict[str, Any]) -> None:
    trace = exported["trace"]
    page.goto(exported["head"])
    wait_for_widget(page, root=HEAD)
    page.locator('[data-testid="tab-model"]').click()
    wait_for_widget(page, root=MODEL)

    grid = page.locator('[data-testid="model-canvas"]')
    box = grid.bounding_box()
    heads = trace.stream.num_heads
    cell = (box["width"] - GRID_LABEL_W) / heads - GRID_GAP
    layer, head = 4, 7
    grid.click(
        position={
            "x": GRID_LABEL_W + head * (cell + GRID_GAP) + cell / 2,
            "y": GRID_LABEL_H + layer * (cell + GRID_GAP) + cell / 2,
        }
    )
    wait_for_widget(page, root=HEAD)
    expect(page.locator('[data-testid="layer-select"]')).to_have_value(str(layer))
    pressed = page.locator('.attnscope-swatch[aria-pressed="true"]')
    expect(pressed).to_have_count(1)
    expect(pressed).to_have_attribute("data-head", str(head))


def test_neuron_view_qk_matches_python_and_dimension_hover_draws(
    page: Any, exported: dict[str, Any]
) -> None:
    page.goto(exported["neuron"])
    view = wait_for_widget(page, root=NEURON)
    stream = exported["trace"].stream
    layer, head, query = NEURON_AT["layer"], NEURON_AT["head"], NEURON_AT["query"]
    kv_head = head // (stream.num_heads // stream.keys.shape[1])
    expected = stream.keys[layer, kv_head] @ stream.queries[layer, head, query]
    rows = page.locator(f"{NEURON} [data-key]")
    expect(rows.first).to_be_attached()
    shown = {
        int(r.get_attribute("data-key")): float(r.get_attribute("data-qk")) for r in rows.all()
    }
    assert shown
    for key, qk in shown.items():
        np.testing.assert_allclose(qk, expected[key], rtol=1e-4, atol=1e-4)

    strip = page.locator('[data-testid="neuron-q"]')
    box = strip.bounding_box()
    after_next_draw(page, NEURON, lambda: strip.hover(position={"x": box["width"] / 2, "y": 2}))
    assert view.get_attribute("data-hover-dim") is not None


def luminance(rgb: str) -> float:
    r, g, b = (int(v) for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_screenshot_views_light_and_dark(
    page: Any, exported: dict[str, Any], screenshots: Screenshots
) -> None:
    page.goto(exported["head"])
    wait_for_widget(page, root=HEAD)
    root = page.locator('[data-testid="attnscope-root"]')
    screenshots.take("head-view", root)
    page.locator('[data-testid="tab-model"]').click()
    wait_for_widget(page, root=MODEL)
    screenshots.take("model-view", root)
    page.locator('[data-testid="tab-neuron"]').click()
    wait_for_widget(page, root=NEURON)
    screenshots.take("neuron-view", root)

    page.locator('[data-testid="tab-head"]').click()
    wait_for_widget(page, root=HEAD)
    light = luminance(root.evaluate("(el) => getComputedStyle(el).backgroundColor"))
    page.locator('[data-testid="theme-select"]').select_option("dark")
    expect(root).to_have_attribute("data-theme", "dark")
    wait_for_widget(page, root=HEAD)
    dark = luminance(root.evaluate("(el) => getComputedStyle(el).backgroundColor"))
    assert dark < 80 < light
    screenshots.take("head-view-dark", root)
