"""``python -m attnscope share``: a user's notebook as one page that draws offline (issue 39, 3).

A notebook of two cells (a trace and its head view) is executed and shared by
the command line; opened from disk in the offline chromium (every request off
the page is blocked and fails the test), its widget must draw from the saved
state through the inlined widget manager, and with ``--snapshots`` from the
output's own snapshot. Without saved state (no ``--execute``) the snapshot draws.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
from browser_kit import Screenshots, wait_for_widget

CODE = """import numpy as np, attnscope
rng = np.random.default_rng(0)
weights = rng.dirichlet(np.ones(6), size=(2, 3, 6)).astype("float32")
trace = attnscope.AttentionTrace(["The", "cat", "sat", "on", "the", "mat"], weights)
attnscope.show_head_view(trace)"""


def _share(folder: Path, *options: str, ran: bool = False) -> tuple[Path, str]:
    """Share a new notebook; ``ran``: one run here first, its outputs kept, no widget state."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CODE)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    if ran:
        from nbclient import NotebookClient

        NotebookClient(notebook, kernel_name="python3", store_widget_state=False).execute()
    source = folder / "mine.ipynb"
    nbformat.write(notebook, source)
    page = folder / f"mine{len(options)}{'-'.join(o.strip('-') for o in options)}.html"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "attnscope", "share", str(source), "-o", str(page), *options],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # No warning from the tools it runs: ipykernel's over TCP (the kernel runs on unix
    # sockets) and nbconvert's for an output it cannot represent.
    for warning in ("without encryption", "not able to be represented"):
        assert warning not in done.stderr, done.stderr
    return page, done.stdout


def test_a_shared_notebook_draws_its_widget_offline(
    page: Any, tmp_path: Path, screenshots: Screenshots
) -> None:
    shared, said = _share(tmp_path, "--execute")
    assert "inlined widget manager" in said, said
    page.goto(shared.as_uri())
    view = wait_for_widget(page, root='[data-testid="head-view"]', timeout_ms=60_000)
    assert view.locator(".attnscope-tok").first.inner_text() == "The"
    assert page.locator("iframe").count() == 0  # the live widget, not its snapshot
    screenshots.take("share-live", page)


def test_snapshots_draw_without_the_manager_and_without_saved_state(
    page: Any, tmp_path: Path
) -> None:
    for options, ran in ((("--execute", "--snapshots"), False), ((), True)):
        shared, said = _share(tmp_path, *options, ran=ran)
        assert "snapshots" in said, said
        assert shared.stat().st_size < 2_000_000  # no 4.7 MB manager inlined
        page.goto(shared.as_uri())
        frame = page.locator("iframe").first.element_handle().content_frame()
        view = wait_for_widget(frame, root='[data-testid="head-view"]', timeout_ms=60_000)
        assert view.locator(".attnscope-tok").first.inner_text() == "The"
