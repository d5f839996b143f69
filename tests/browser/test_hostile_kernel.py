"""The widget of hostile tokens in a real JupyterLab with a real kernel.

The notebook builds a trace whose tokens are tests/hostile_tokens.py's
strings (lone surrogates included, which once broke the kernel's messages)
and displays the widget. In chromium: it renders, no script ran and no label
became an element, every label shows its text, no bidi control leaks out of
a tooltip, a click on a hostile token reaches Python, and the neuron view's
info line keeps its reading order after a hostile query label.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from browser_kit import draw_count, wait_for_next_draw, wait_for_widget
from hostile_kit import FOREIGN, READING_ORDER, RECORDER, ROWS
from jupyter_driver import JupyterPage, write_notebook
from jupyter_server_process import JupyterServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hostile_tokens
from hostile_tokens import BIDI_CONTROLS, HOSTILE, PWNED, bidi_leaks, shown, without_bidi

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEAD_VIEW = '[data-testid="head-view"]'
NEURON_VIEW = '[data-testid="neuron-view"]'
CELL = """\
import torch
from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention
from hostile_tokens import HOSTILE

torch.manual_seed(0)
x = torch.randn(1, len(HOSTILE), 8)
w = AttentionWidget(AttentionTrace.from_module(MultiHeadAttention(8, 2), x, HOSTILE))
w"""


@pytest.fixture(scope="module")
def notebook(jupyter_server: JupyterServer) -> str:
    shutil.copy(hostile_tokens.__file__, jupyter_server.notebook_path("hostile_tokens.py"))
    write_notebook(jupyter_server.notebook_path("hostile.ipynb"), [CELL])
    return "hostile.ipynb"


def test_hostile_widget_in_jupyterlab(lab: JupyterPage, notebook: str) -> None:
    lab.page.add_init_script(RECORDER)
    lab.open(notebook)
    lab.run_all()
    assert lab.errors() == ""
    output = lab.cell_output(0)
    wait_for_widget(output, root=HEAD_VIEW)

    rows = output.locator('.attnscope-hv-col[data-side="query"]').evaluate(ROWS)
    assert len(rows) >= 10
    for row in rows:
        label = shown(HOSTILE[row["i"]])
        assert without_bidi(row["text"]) == without_bidi(label)
        assert row["bdi"]
        assert row["isolated"]
        assert not bidi_leaks(row["title"])

    # A click on a token whose label holds bidi controls reaches Python.
    first_bidi = next(i for i, t in enumerate(HOSTILE) if any(c in BIDI_CONTROLS for c in t))
    viewport = output.locator('[data-testid="head-viewport"]')
    # Rows are recycled as the view scrolls: find the token only once the scrolled view has
    # drawn, or the locator can catch a row about to show another token.
    before = draw_count(output, HEAD_VIEW)
    viewport.evaluate(f"v => {{ v.scrollTop = {first_bidi * 18}; }}")
    wait_for_next_draw(output, before, root=HEAD_VIEW)
    token = output.locator(
        f'.attnscope-hv-col[data-side="query"] [data-i="{first_bidi}"]:not([hidden])'
    )
    token.wait_for()
    token.click()
    printed = lab.output_text(lab.run_code("print(w.query)")).strip()
    assert printed == str(first_bidi)

    # The neuron view opens on that query: its label stays inside its isolate.
    output.locator('[data-testid="tab-neuron"]').click()
    neuron = wait_for_widget(output, root=NEURON_VIEW)
    info = neuron.locator('[data-testid="neuron-info"]')
    order: dict[str, Any] = info.evaluate(READING_ORDER)
    assert without_bidi(order["label"]) == without_bidi(shown(HOSTILE[first_bidi]))
    for xs in order["lines"]:
        assert xs == sorted(xs)

    # Python moves the query to a lone surrogate's token: it shows U+FFFD.
    surrogate = HOSTILE.index("\ud800")
    before = int(neuron.get_attribute("data-draws") or 0)
    lab.run_code(f"w.query = {surrogate}")
    wait_for_next_draw(output, before, root=NEURON_VIEW)
    assert info.evaluate(READING_ORDER)["label"] == "\ufffd"

    assert lab.page.evaluate(f"() => window.{PWNED}") is None
    widget = output.locator('[data-testid="attnscope-root"]')
    assert widget.count() == 1
    assert widget.locator(FOREIGN).count() == 0
    assert [t for t in lab.page.evaluate("() => window.__drawnText") if bidi_leaks(t)] == []
    assert lab.errors() == ""
