"""examples/quickstart.ipynb as users meet it: in a real JupyterLab 4 and in Notebook 7."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from browser_kit import Screenshots, draw_count, wait_for_next_draw, wait_for_widget
from jupyter_driver import JupyterPage
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"
HEAD_VIEW = '[data-testid="head-view"]'


@pytest.fixture(scope="module")
def quickstart(jupyter_server: JupyterServer) -> str:
    shutil.copy(QUICKSTART, jupyter_server.notebook_path("quickstart.ipynb"))
    return "quickstart.ipynb"


def first_widget(host: JupyterPage) -> tuple[int, object]:
    """(index of the cell that displays `w`, its output area), after the run."""
    index = int(
        host.page.evaluate(
            """() => window.jupyterapp.shell.currentWidget.content.widgets
                .findIndex((c) => c.model.sharedModel.getSource().trim().endsWith("\\nw"))"""
        )
    )
    assert index >= 0, "the quickstart has no cell that ends by displaying `w`"
    output = host.cell_output(index)
    # Views draw once they are on screen; run-all left the notebook scrolled to its end.
    output.locator(HEAD_VIEW).first.scroll_into_view_if_needed(timeout=60_000)
    return index, output


def test_quickstart_in_jupyterlab_syncs_and_follows_theme_screenshot(
    lab: JupyterPage, quickstart: str, screenshots: Screenshots
) -> None:
    lab.open(quickstart)
    lab.run_all()
    _, output = first_widget(lab)
    # The notebook loads SmolLM2 (a GGUF file, dequantised: ~25 s, more on a loaded machine).
    head = wait_for_widget(output, root=HEAD_VIEW, timeout_ms=180_000)
    layer_select = output.locator('[data-testid="layer-select"]')
    expect(layer_select).to_have_value("16")  # the notebook set w.layer = 16
    screenshots.take("jupyterlab-head-view", output)

    # Python -> browser: a new cell moves the layer; the view redraws with it.
    before = draw_count(output, HEAD_VIEW)
    lab.run_code("w.layer = 1")
    expect(layer_select).to_have_value("1")
    wait_for_next_draw(output, before, root=HEAD_VIEW)
    expect(head).to_have_attribute("data-ready", "true")

    # Browser -> Python: toggling head 2 on shows up in w.heads.
    assert lab.output_text(lab.run_code("print(w.heads)")).strip() == "[0]"
    swatch = output.locator('.attnscope-swatch[data-head="2"]')
    swatch.click()
    expect(swatch).to_have_attribute("aria-pressed", "true")
    assert lab.output_text(lab.run_code("print(w.heads)")).strip() == "[0, 2]"

    # JupyterLab's dark theme reaches the widget (theme "auto").
    # The server is shared by the session and another test may have left it dark.
    root = output.locator('[data-testid="attnscope-root"]')
    lab.set_theme("JupyterLab Light")
    expect(root).to_have_attribute("data-theme", "light")
    lab.set_theme("JupyterLab Dark")
    expect(root).to_have_attribute("data-theme", "dark")
    lab.page.mouse.move(0, 0)  # no hover left over from the click in the picture
    screenshots.take("jupyterlab-head-view-dark", output)


def test_quickstart_renders_in_notebook7(nb7: JupyterPage, quickstart: str) -> None:
    nb7.open(quickstart)
    nb7.run_all()
    _, output = first_widget(nb7)
    wait_for_widget(output, root=HEAD_VIEW, timeout_ms=180_000)  # SmolLM2 loads first
    expect(output.locator('[data-testid="layer-select"]')).to_have_value("16")
