"""A notebook reopened in JupyterLab: its widgets come back from saved state, with no live comm.

JupyterLab's widget manager restores every model from the notebook's saved
widget state when it opens it, while a fresh kernel holds no Python object
behind them. The widget must draw its saved first screen with the saved-state
note, and a layer it does not hold must say "run the cell to explore further"
at once, never wait 30 s on the idle kernel and blame it (issue 40, item 4).
The notebook is the one ``test_saved_page_no_kernel`` converts, trusted here
(``jupyter trust`` with the server's data folder).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from browser_kit import wait_for_widget
from jupyter_driver import JupyterPage
from jupyter_server_process import JupyterServer
from test_saved_page_no_kernel import AT_ONCE_MS, RUN_THE_CELL, write_saved_notebook

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEAD_VIEW = '[data-testid="head-view"]'


@pytest.fixture(scope="module")
def notebook(jupyter_server: JupyterServer) -> str:
    path = jupyter_server.notebook_path("reopened.ipynb")
    write_saved_notebook(path)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "trust", str(path)],
        env=jupyter_server.environment(),
        check=True,
        capture_output=True,
    )
    return "reopened.ipynb"


def test_a_reopened_notebook_says_run_the_cell_at_once(lab: JupyterPage, notebook: str) -> None:
    lab.open(notebook)  # a kernel starts; nothing runs
    output = lab.cell_output(0)
    wait_for_widget(output, root=HEAD_VIEW)
    root = output.locator('[data-testid="attnscope-root"]')
    note = root.locator(".attnscope-notes").inner_text()
    assert "saved widget state" in note
    assert RUN_THE_CELL in note

    started = time.monotonic()
    root.locator('[data-testid="layer-select"]').select_option("2")
    lab.page.wait_for_function(
        f"el => el.innerText.includes({RUN_THE_CELL!r})",
        arg=root.element_handle(),
        timeout=AT_ONCE_MS,
    )
    assert time.monotonic() - started < AT_ONCE_MS / 1000

    empty = lab.cell_output(1).locator('[data-testid="attnscope-root"]')
    lab.page.wait_for_function(
        f"el => el.innerText.includes({RUN_THE_CELL!r})",
        arg=empty.element_handle(),
        timeout=AT_ONCE_MS,
    )
    for i in range(3):
        assert "busy or lost" not in lab.cell_output(i).inner_text()
