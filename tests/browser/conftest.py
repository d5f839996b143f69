"""Fixtures for the browser tier: offline Debian chromium and a real Jupyter server.

- ``browser``: one headless chromium for the session (Playwright).
- ``page``: a fresh context and page per test; requests that are not local
  are aborted; any console error, uncaught exception or blocked request
  fails the test at teardown (``page_watch.allowed`` lists explained ones).
- ``screenshots``: ``screenshots.take(name, page_or_locator)`` writes
  ``<DIR>/<name>.png`` when pytest runs with ``--screenshots=DIR``.
- ``jupyter_server``: one JupyterLab 4 server (which also serves Notebook 7)
  for the session, on 127.0.0.1 with temporary folders.
- ``lab`` / ``nb7``: a page opened on that server, driven through
  ``window.jupyterapp`` (see ``jupyter_driver.py``).

The option must be passed with ``tests/browser`` on the command line (as
``make screenshots`` does): pytest reads options only from the conftests it
loads at start-up.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_kit import PageWatch, Screenshots, chromium_path, launch_chromium, new_watched_page
from jupyter_driver import JupyterPage
from jupyter_server_process import JupyterServer

REPO = Path(__file__).resolve().parents[2]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--screenshots",
        metavar="DIR",
        default=None,
        help="write the browser tests' named screenshots (PNG) to DIR",
    )


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Debian chromium, shared by the session."""
    if chromium_path() is None:
        # Never a skip: a missing browser is a broken setup, not a passing test.
        pytest.fail("chromium is not on PATH: apt-get install -y chromium (.ci/run does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        yield browser
        browser.close()


@pytest.fixture
def page_watch() -> PageWatch:
    """The current test's record of console errors and blocked requests."""
    return PageWatch()


@pytest.fixture
def page(browser: Any, page_watch: PageWatch) -> Iterator[Any]:
    """A fresh offline page; the test fails at teardown on any console error."""
    context, page, _ = new_watched_page(browser, page_watch)
    yield page
    context.close()
    problems = page_watch.problems()
    if problems:
        pytest.fail("the page reported problems:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def screenshots(request: pytest.FixtureRequest) -> Screenshots:
    """Named screenshots, written only with ``--screenshots=DIR``."""
    folder = request.config.getoption("screenshots", default=None)
    return Screenshots(Path(folder).resolve() if folder else None)


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    """A real JupyterLab 4 server on 127.0.0.1 with temporary folders, for the session."""
    server = JupyterServer(tmp_path_factory.mktemp("jupyter"), python=Path(sys.executable))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def lab(page: Any, page_watch: PageWatch, jupyter_server: JupyterServer) -> JupyterPage:
    """A JupyterLab page on the session's server (open a notebook with ``lab.open``)."""
    page_watch.allowed.extend(WIDGET_MANAGER_OWN_ERRORS)
    return JupyterPage(page, jupyter_server, app="lab")


# @jupyter-widgets/jupyterlab-manager's Lumino wrapper of a DOM widget view sets its view to
# null on dispose and reads it unchecked in processMessage (its box and tab wrappers check
# first): a Lumino message that reaches a just-disposed view throws this, from the manager's
# own code, whichever view it wrapped. It was seen once in CI, in the teardown of the
# generation test (whose cells remove progress-bar widgets), on a loaded machine; the views
# on the page kept working.
WIDGET_MANAGER_OWN_ERRORS = ["Cannot read properties of null (reading 'processLuminoMessage')"]


# Notebook 7.6.5 itself throws these while it loads (also under `python -m
# notebook`, with empty user settings and no notebook open): its shortcuts
# extension reads `.schema` of a plugin it has not loaded, and a plugin asks
# for a file-browser command that Notebook's notebook page does not register.
NOTEBOOK7_OWN_ERRORS = [
    "Cannot read properties of undefined (reading 'schema')",
    "Command 'filebrowser:open-path' not registered",
]


@pytest.fixture
def nb7(page: Any, page_watch: PageWatch, jupyter_server: JupyterServer) -> JupyterPage:
    """A Notebook 7 page on the session's server (open a notebook with ``nb7.open``)."""
    page_watch.allowed.extend([*NOTEBOOK7_OWN_ERRORS, *WIDGET_MANAGER_OWN_ERRORS])
    return JupyterPage(page, jupyter_server, app="notebook")
