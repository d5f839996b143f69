"""The Jupyter fixtures, proven on a trivial anywidget defined inside the notebook.

A counter button synced to a ``count`` traitlet shows the round trip the
real widget needs: Python -> browser (a new cell sets the trait) and
browser -> Python (a click, then a new cell prints the trait), in a real
JupyterLab 4 and in Notebook 7, plus JupyterLab's dark theme reaching the
widget through the ``--jp-*`` variables.
"""

from __future__ import annotations

from typing import Any

import pytest
from jupyter_driver import JupyterPage, write_notebook
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

COUNTER_CELL = '''
import anywidget
import traitlets


class Counter(anywidget.AnyWidget):
    _esm = """
    export default {
      render({ model, el }) {
        const button = document.createElement("button");
        button.className = "test-counter";
        button.style.color = "var(--jp-ui-font-color1, black)";
        button.style.background = "var(--jp-layout-color1, white)";
        const show = () => { button.textContent = `count ${model.get("count")}`; };
        button.addEventListener("click", () => {
          model.set("count", model.get("count") + 1);
          model.save_changes();
        });
        model.on("change:count", show);
        show();
        el.append(button);
        return () => model.off("change:count", show);
      },
    };
    """
    count = traitlets.Int(0).tag(sync=True)


w = Counter(count=5)
w
'''


@pytest.fixture(scope="module")
def counter_notebook(jupyter_server: JupyterServer) -> str:
    write_notebook(jupyter_server.notebook_path("counter.ipynb"), [COUNTER_CELL])
    return "counter.ipynb"


def open_counter(host: JupyterPage, name: str) -> Any:
    host.open(name)
    host.run_all()
    button = host.cell_output(0).locator("button.test-counter")
    expect(button).to_have_text("count 5")
    return button


def test_lab_counter_syncs_both_ways_and_follows_dark_theme(
    lab: JupyterPage, counter_notebook: str
) -> None:
    button = open_counter(lab, counter_notebook)

    lab.run_code("w.count = 41")
    expect(button).to_have_text("count 41")

    button.click()
    expect(button).to_have_text("count 42")
    cell = lab.run_code("print(w.count)")
    assert lab.output_text(cell).strip() == "42"

    light = button.evaluate("(b) => getComputedStyle(b).backgroundColor")
    lab.set_theme("JupyterLab Dark")
    assert lab.page.evaluate("() => document.body.dataset.jpThemeLight") == "false"
    dark = button.evaluate("(b) => getComputedStyle(b).backgroundColor")
    assert dark != light


def test_notebook7_counter_renders_and_syncs(nb7: JupyterPage, counter_notebook: str) -> None:
    button = open_counter(nb7, counter_notebook)
    button.click()
    expect(button).to_have_text("count 6")
    cell = nb7.run_code("print(w.count)")
    assert nb7.output_text(cell).strip() == "6"
