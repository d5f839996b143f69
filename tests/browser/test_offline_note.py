"""nbconvert's page of a notebook with saved widget state says why it is blank offline.

``jupyter nbconvert --execute --to html`` stores the widgets' state, so the page
renders each attnscope output through the widget manager it fetches from a CDN;
opened from disk offline nothing loads. The hidden note attnscope displays after
each widget shows itself there, naming ``python -m attnscope share``; it stays
hidden where the manager loads, on ``attnscope share``'s page, and in a live
(or reopened, untrusted) JupyterLab and in Notebook 7, where it takes no height.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_kit import PageWatch, Screenshots, wait_for_widget
from jupyter_driver import JupyterPage, write_notebook
from jupyter_server_process import JupyterServer
from page_kit import VIEW_ROOTS, canvas_stats
from test_saved_notebook import NBCONVERT_CDN, run_and_convert
from test_saved_widget_state import LOADER_LOCAL_TRY, serve_cdn_from_node_modules

from attnscope.display.offline_note import NOTE_CLASS, SHARE_COMMAND

pytestmark = pytest.mark.browser

NOTE = f".{NOTE_CLASS}"
CELLS = [
    "import numpy as np\nfrom attnscope import show_head_view\n"
    "att = (np.full((1, 2, 4, 4), 0.25, np.float32),) * 2",
    "show_head_view(att, tokens=['The', 'cat', 'sat', '.'])",
]
# The manager's address on the page nbconvert writes (blocked offline: that is the point).
MANAGER_CDN = "@jupyter-widgets/html-manager"
HEAD = VIEW_ROOTS["head"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """The notebook run as `jupyter nbconvert --execute` runs it (widget state stored)."""
    return run_and_convert(tmp_path_factory.mktemp("note"), store_widget_state=True, cells=CELLS)


def loaded(page: Any) -> None:
    page.wait_for_function("document.readyState === 'complete'")


def test_each_widget_output_is_followed_by_its_note(converted: tuple[Any, Path]) -> None:
    notebook, _ = converted
    outputs = notebook.cells[1].outputs
    assert len(outputs) == 2
    widget, note = outputs
    assert "application/vnd.jupyter.widget-view+json" in widget["data"]
    assert list(note["data"]) == ["text/html"]
    assert (
        widget["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        in (note["data"]["text/html"])
    )


def test_offline_the_page_says_why_it_is_blank_and_what_to_run(
    converted: tuple[Any, Path], page: Any, page_watch: PageWatch, screenshots: Screenshots
) -> None:
    _, html_file = converted
    page_watch.allowed.extend([*NBCONVERT_CDN, MANAGER_CDN])  # blocked: the page is offline
    page.goto(html_file.as_uri())
    loaded(page)
    note = page.locator(NOTE)
    note.wait_for(state="visible", timeout=5_000)
    text = note.inner_text()
    assert SHARE_COMMAND in text
    assert "could not load the Jupyter widget manager" in text
    assert page.locator(HEAD).count() == 0  # nothing drew: the note is right
    # the note sits right after the blank widget output, not elsewhere on the page
    assert note.evaluate(
        "n => !!n.closest('.jp-OutputArea-child').previousElementSibling"
        ".querySelector('script[type=\"application/vnd.jupyter.widget-view+json\"]')"
    )
    assert any(MANAGER_CDN in u for u in page_watch.blocked)
    if screenshots.enabled:
        screenshots.take("nbconvert-offline-note", page)


def test_where_the_manager_loads_the_note_stays_hidden(
    converted: tuple[Any, Path], page: Any, page_watch: PageWatch
) -> None:
    _, html_file = converted
    page_watch.allowed.extend([*NBCONVERT_CDN, LOADER_LOCAL_TRY])
    served = serve_cdn_from_node_modules(page)
    page.goto(html_file.as_uri())
    root = wait_for_widget(page, root=f".jupyter-widgets {HEAD}")
    assert canvas_stats(root.locator('[data-testid="head-canvas"]').first).painted > 1000
    loaded(page)
    assert any(MANAGER_CDN in u for u in served)
    assert page.locator(NOTE).count() == 1
    assert not page.locator(NOTE).is_visible()


def test_the_share_commands_page_draws_and_keeps_the_note_hidden(
    converted: tuple[Any, Path], page: Any, tmp_path: Path
) -> None:
    from attnscope.display.share import share_notebook

    _, html_file = converted
    shared = share_notebook(html_file.with_suffix(".ipynb"), tmp_path / "page.html")
    assert shared.live
    page.goto(shared.path.as_uri())
    wait_for_widget(page, root=f".jupyter-widgets {HEAD}")
    loaded(page)
    assert page.locator(NOTE).count() == 1
    assert not page.locator(NOTE).is_visible()


def note_box(output: Any) -> dict[str, float]:
    """The note's output row in JupyterLab: its height and the note's own visibility."""
    return dict(
        output.locator(NOTE).evaluate(
            """n => {
                const row = n.closest('.jp-OutputArea-child');
                return {row: row.getBoundingClientRect().height,
                        note: n.getBoundingClientRect().height,
                        hidden: n.hidden ? 1 : 0};
            }"""
        )
    )


def run_live(host: JupyterPage, server: JupyterServer, name: str) -> tuple[Any, dict[str, Any]]:
    """Run :data:`CELLS` live in ``host``; the widget cell's output, its note hidden and 0 px."""
    write_notebook(server.notebook_path(name), CELLS)
    host.open(name)
    host.run_all()
    output = host.cell_output(1)
    wait_for_widget(output, root=HEAD)
    assert not output.locator(NOTE).is_visible()
    box = note_box(output)
    assert box["hidden"] == 1
    assert box["row"] <= 1, f"the hidden note's output takes {box['row']} px"
    return output, box


@pytest.mark.jupyter
def test_in_jupyterlab_the_note_is_invisible_and_takes_no_room(
    lab: JupyterPage,
    jupyter_server: JupyterServer,
    converted: tuple[Any, Path],
    screenshots: Screenshots,
) -> None:
    output, live = run_live(lab, jupyter_server, "note_live.ipynb")
    assert output.locator(NOTE).count() == 1
    if screenshots.enabled:
        screenshots.take("jupyterlab-note-live", output)

    # The notebook nbclient ran, reopened: not trusted, so JupyterLab sanitizes the note's
    # HTML: its script goes, `hidden="hidden"` stays (a bare `hidden` is dropped as empty).
    notebook, _ = converted
    nbformat.write(notebook, str(jupyter_server.notebook_path("note_reopened.ipynb")))
    lab.open("note_reopened.ipynb")
    output = lab.cell_output(1)
    # Untrusted, the output is drawn from its sanitized HTML (the snapshot's iframe goes).
    output.locator(NOTE).wait_for(state="attached")
    assert output.locator(f"{NOTE} + script, {NOTE} ~ script").count() == 0  # sanitized
    assert not output.locator(NOTE).is_visible()
    reopened = note_box(output)
    assert reopened["hidden"] == 1
    assert reopened["row"] <= 1, f"the hidden note's output takes {reopened['row']} px"
    print(f"\nthe hidden note's output row: live {live['row']} px, reopened {reopened['row']} px")


@pytest.mark.jupyter
def test_in_notebook7_the_note_is_invisible_and_takes_no_room(
    nb7: JupyterPage, jupyter_server: JupyterServer
) -> None:
    run_live(nb7, jupyter_server, "note_nb7.ipynb")
