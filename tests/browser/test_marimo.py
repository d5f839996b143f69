"""The widget in marimo: ``marimo run`` on 127.0.0.1, the widget inside ``mo.ui.anywidget``.

The app (``marimo_app.py``) shows a trace, a cell that prints the layer
Python sees (it re-runs when the widget's value changes), and a button whose
Python callback sets ``widget.layer``. A layer picked in the browser reaches
that cell; the button moves the view. marimo renders the widget in a shadow
root, which Playwright's CSS locators pierce.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_kit import PageWatch, wait_for_widget
from jupyter_server_process import free_port
from page_kit import VIEW_ROOTS
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

APP = Path(__file__).with_name("marimo_app.py")
START_TIMEOUT_S = 90.0
POLL_INTERVAL_S = 0.2  # between polls of the server; the wait itself is bounded


@pytest.fixture(scope="module")
def marimo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    home = tmp_path_factory.mktemp("marimo-home")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config")}
    command = [sys.executable, "-m", "marimo", "run", str(APP), "--headless"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-token"]
    log = home / "marimo.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"marimo did not start:\n{log.read_text(errors='replace')}")
            time.sleep(POLL_INTERVAL_S)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def test_marimo_click_reaches_a_reactive_cell_and_python_moves_the_view(
    marimo_url: str, page: Any, page_watch: PageWatch
) -> None:
    page.goto(marimo_url)
    wait_for_widget(page, root=VIEW_ROOTS["head"], timeout_ms=90_000)
    layer = page.locator('[data-testid="layer-select"]')
    expect(page.get_by_text("python sees layer 0")).to_be_visible()

    layer.select_option("1")  # the browser's choice reaches Python and re-runs the cell
    expect(page.get_by_text("python sees layer 1")).to_be_visible(timeout=30_000)

    page.get_by_role("button", name="python moves the view").click()
    expect(layer).to_have_value("2", timeout=30_000)
    # (marimo re-runs cells on the browser's changes, not on Python's own assignments)
