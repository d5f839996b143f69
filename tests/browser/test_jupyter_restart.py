"""A lost kernel is said, not hung: after a kernel restart, asking for new data says so.

The widget's model outlives its kernel in JupyterLab: after a restart the view
is still on the page but its messages cannot be sent. Picking a layer it never
fetched must end, within the wait below, in the view saying the connection
is lost, instead of "Loading layer 4…" for ever.
"""

from __future__ import annotations

import pytest
from browser_kit import wait_for_widget
from jupyter_driver import JupyterPage, write_notebook
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEAD_VIEW = '[data-testid="head-view"]'
CELL = """
import numpy as np
from attnscope import AttentionTrace, show_head_view

weights = np.random.default_rng(0).dirichlet(np.ones(6), size=(6, 2, 6)).astype("float32")
w = show_head_view(AttentionTrace(["a", "b", "c", "d", "e", "f"], weights))
w
"""
LOST = "kernel connection lost — re-run the cell"
SAY_IT_MS = 10_000  # seconds, not the 30 s a silent kernel gets

_RESTART = """async () => {
    const session = window.jupyterapp.shell.currentWidget.sessionContext.session;
    await session.kernel.restart();
}"""


@pytest.fixture(scope="module")
def notebook(jupyter_server: JupyterServer) -> str:
    write_notebook(jupyter_server.notebook_path("restart.ipynb"), [CELL])
    return "restart.ipynb"


def test_after_a_kernel_restart_a_new_layer_says_the_kernel_is_lost(
    lab: JupyterPage, notebook: str
) -> None:
    lab.open(notebook)
    lab.run_all()
    output = lab.cell_output(0)
    view = wait_for_widget(output, root=HEAD_VIEW)
    lab.page.evaluate(_RESTART)
    lab.wait_kernel_idle()

    output.locator('[data-testid="layer-select"]').select_option("4")
    expect(view.get_by_text(LOST)).to_be_visible(timeout=SAY_IT_MS)
    expect(view.get_by_text("Loading layer")).to_have_count(0)

    output.locator('[data-testid="layer-select"]').select_option("5")  # asks again, same answer
    expect(view.get_by_text(LOST)).to_be_visible(timeout=SAY_IT_MS)
