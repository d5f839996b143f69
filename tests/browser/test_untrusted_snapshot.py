"""An untrusted notebook in JupyterLab says why an attnscope output is not drawn.

A notebook run by nbclient (or received from someone) and then opened in
JupyterLab is not trusted: each output is drawn from its highest *safe* mime
type, the ``text/html`` snapshot, through JupyterLab's sanitizer, which drops
the snapshot's ``<iframe>`` and keeps the frame's fallback text
(``snapshot.undrawn_text``). That text shows there, readable, instead of a
blank output; after "Trust Notebook" the widget draws from the saved widget
state and the text is gone, also when the trusted notebook is reopened and
when its cells are run again. The nbconvert page that draws the snapshot
never shows it (``test_saved_notebook.py``). Notebook 7 shows the same text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_kit import Screenshots, wait_for_widget
from jupyter_driver import JupyterPage
from jupyter_server_process import JupyterServer
from page_kit import VIEW_ROOTS, canvas_stats
from test_saved_notebook import CELLS, NOT_DRAWN, run_and_convert

from attnscope.display.offline_note import NOTE_CLASS

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

TRUST_COMMAND = "Trust Notebook"  # the message names the command palette's label
HEAD = VIEW_ROOTS["head"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """MiniLM's head view, run as `jupyter nbconvert --execute` runs it (widget state kept)."""
    return run_and_convert(
        tmp_path_factory.mktemp("untrusted"), store_widget_state=True, cells=CELLS[:2]
    )


def output_rows(output: Any) -> list[dict[str, Any]]:
    """Each output of a cell: its text, its height and its text's font size (px)."""
    return list(
        output.evaluate(
            """area => [...area.querySelectorAll('.jp-OutputArea-output')].map(o => ({
                text: o.innerText,
                height: o.getBoundingClientRect().height,
                font: parseFloat(getComputedStyle(o).fontSize),
                note: !!o.querySelector('.attnscope-offline-note'),
            }))"""
        )
    )


def trust_notebook(lab: JupyterPage) -> None:
    """Run "Trust Notebook" and accept its dialog, as a user does from the palette."""
    lab.page.evaluate(
        """() => { window.__attnscopeTrust = "running";
            window.jupyterapp.commands.execute("notebook:trust").then(
                () => { window.__attnscopeTrust = "done"; },
                (e) => { window.__attnscopeTrust = String(e); }); }"""
    )
    lab.page.locator(".jp-Dialog .jp-mod-accept").click()
    lab.page.wait_for_function("() => window.__attnscopeTrust !== 'running'")
    assert lab.page.evaluate("() => window.__attnscopeTrust") == "done"


def test_untrusted_it_says_why_then_trusted_it_draws(
    lab: JupyterPage,
    jupyter_server: JupyterServer,
    converted: tuple[Any, Path],
    screenshots: Screenshots,
) -> None:
    notebook, _ = converted
    nbformat.write(notebook, str(jupyter_server.notebook_path("untrusted.ipynb")))
    lab.open("untrusted.ipynb")
    output = lab.cell_output(1)
    message = output.get_by_text(NOT_DRAWN)
    message.wait_for(state="visible")
    assert lab.page.evaluate("() => window.jupyterapp.commands.label('notebook:trust')") == (
        TRUST_COMMAND
    )
    rows = output_rows(output)
    assert len(rows) == 2  # the sanitized snapshot and the (hidden) offline note
    shown, note = rows
    assert not shown["note"]
    assert note["note"]
    assert NOT_DRAWN in shown["text"]
    assert f"\u201c{TRUST_COMMAND}\u201d" in shown["text"]
    assert "all-MiniLM-L6-v2" in shown["text"]  # says which output this is
    assert "layer 3" in shown["text"]
    assert shown["height"] > 2 * shown["font"], f"the message takes {shown['height']} px"
    assert shown["font"] >= 12
    assert output.locator("iframe, script").count() == 0  # sanitized: nothing to draw
    assert not output.locator(f".{NOTE_CLASS}").is_visible()
    print(f"\nthe message in the untrusted notebook: {shown['height']:.0f} px, {shown['font']} px")
    if screenshots.enabled:
        screenshots.take("jupyterlab-untrusted-snapshot", lab.page)

    trust_notebook(lab)  # the outputs are drawn again, trusted: the widget, from saved state
    root = wait_for_widget(output, root=HEAD)
    assert canvas_stats(root.locator('[data-testid="head-canvas"]').first).painted > 1000
    assert "saved widget state" in output.locator(".attnscope-notes").inner_text()
    assert NOT_DRAWN not in output.inner_text()
    if screenshots.enabled:
        screenshots.take("jupyterlab-trusted-snapshot", lab.page)

    lab.open("untrusted.ipynb")  # reopened, now trusted (the trust was saved with it)
    output = lab.cell_output(1)
    root = wait_for_widget(output, root=HEAD)
    assert canvas_stats(root.locator('[data-testid="head-canvas"]').first).painted > 1000
    assert NOT_DRAWN not in output.inner_text()

    lab.run_all()  # re-run: the live widget, never the message
    output = lab.cell_output(1)
    root = wait_for_widget(output, root=HEAD)
    assert "saved widget state" not in output.inner_text()
    assert NOT_DRAWN not in output.inner_text()


def test_notebook7_shows_the_same_message_untrusted(
    nb7: JupyterPage, jupyter_server: JupyterServer, converted: tuple[Any, Path]
) -> None:
    notebook, _ = converted
    nbformat.write(notebook, str(jupyter_server.notebook_path("untrusted_nb7.ipynb")))
    nb7.open("untrusted_nb7.ipynb")
    output = nb7.cell_output(1)
    output.get_by_text(NOT_DRAWN).wait_for(state="visible")
    assert nb7.page.evaluate("() => window.jupyterapp.commands.label('notebook:trust')") == (
        TRUST_COMMAND
    )
    shown = output_rows(output)[0]
    assert shown["height"] > 2 * shown["font"], f"the message takes {shown['height']} px"
    assert output.locator("iframe, script").count() == 0
