"""A notebook saved with its widget state draws in a widget manager with no kernel.

nbclient (like papermill) stores the widgets' state in the notebook; nbconvert's
HTML then renders each widget through ``@jupyter-widgets/html-manager`` and
anywidget, which load from a CDN. Here both come from their npm packages in
``node_modules`` (the CDN URLs are routed to the files), as nbviewer, Jupyter
Book, nbsphinx and mkdocs-jupyter would load them. There is no kernel: the
widget draws its first screen from its ``_saved`` trait and says that the rest
needs a kernel, instead of "Loading layer 0…" forever.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from browser_kit import PageWatch, Screenshots, wait_for_widget
from page_kit import VIEW_ROOTS, canvas_stats
from test_saved_notebook import NBCONVERT_CDN, run_and_convert, widget_outputs

from attnscope.display.snapshot import SAVED_STATE_BYTES

pytestmark = pytest.mark.browser

NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
# The CDN addresses nbconvert's page and html-manager's loader ask for, and the npm files
# that answer them.
CDN_FILES = (
    (re.compile(r"^https://cdnjs\.cloudflare\.com/.*/require(\.min)?\.js"), "requirejs/require.js"),
    (
        re.compile(r"^https://unpkg\.com/@jupyter-widgets/html-manager@[^/]*/dist/(?P<file>.+)$"),
        "@jupyter-widgets/html-manager/dist/{file}",
    ),
    (
        re.compile(r"^https://cdn\.jsdelivr\.net/npm/anywidget@[^/]*/dist/index\.js$"),
        "anywidget/dist/index.js",
    ),
)

# html-manager's loader asks require.js for a widget module by its name first (a file
# beside the page), and only when that fails for the CDN address: one 404 per module.
LOADER_LOCAL_TRY = "/anywidget.js)"


def serve_cdn_from_node_modules(page: Any) -> list[str]:
    """Answer the widget manager's CDN requests from ``node_modules``; returns the URLs served."""
    served: list[str] = []

    def handle(route: Any) -> None:
        url = route.request.url
        for pattern, target in CDN_FILES:
            found = pattern.match(url)
            if found:
                path = NODE_MODULES / target.format(**found.groupdict())
                served.append(url)
                route.fulfill(path=str(path), content_type="text/javascript")
                return
        route.fallback()

    page.route(lambda url: any(p.match(url) for p, _ in CDN_FILES), handle)
    return served


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    return run_and_convert(tmp_path_factory.mktemp("state"), store_widget_state=True)


def our_states(notebook: Any) -> list[dict[str, Any]]:
    states = notebook.metadata["widgets"][STATE_MIME]["state"]
    return [s for s in states.values() if s["model_name"] == "AnyModel" and "_saved" in s["state"]]


def test_saved_state_holds_the_first_screen_as_text(converted: tuple[Any, Path]) -> None:
    notebook, _ = converted
    assert len(widget_outputs(notebook)) == 2
    states = our_states(notebook)
    assert len(states) == 2
    saved = {s["state"]["view"]: s["state"]["_saved"] for s in states}
    assert sorted(saved) == ["head", "model"]
    assert list(saved["head"]) == ["top:self:3"]  # layer 3, as displayed
    assert list(saved["model"]) == ["thumbs:self", "tile:self:0:0:0:0:0"]  # + the overview
    for state in states:
        # base64 text only: Colab drops binary buffers from a widget's initial state
        assert not state.get("buffers")
        chunks = state["state"]["_saved"]
        assert all(isinstance(c["data"], str) and c["data"] for c in chunks.values())
        assert len(json.dumps(chunks)) < SAVED_STATE_BYTES


def test_nbconvert_with_the_widget_manager_draws_from_saved_state(
    converted: tuple[Any, Path], page: Any, page_watch: PageWatch, screenshots: Screenshots
) -> None:
    _, html_file = converted
    page_watch.allowed.extend([*NBCONVERT_CDN, LOADER_LOCAL_TRY])
    served = serve_cdn_from_node_modules(page)
    page.goto(html_file.as_uri())
    for view in ("head", "model"):
        root = wait_for_widget(page, root=f".jupyter-widgets {VIEW_ROOTS[view]}")
        canvas = root.locator(f'[data-testid="{view}-canvas"]').first
        assert canvas_stats(canvas).painted > 1000, f"the {view} view drew nothing"
    assert any("html-manager" in u for u in served)
    assert any("anywidget" in u for u in served)
    widgets = page.locator('.jupyter-widgets [data-testid="attnscope-root"]')
    assert widgets.count() == 2
    head = widgets.nth(0)
    assert head.locator('[data-testid="layer-select"]').input_value() == "3"
    assert "Loading" not in head.inner_text()
    assert "saved widget state" in head.locator(".attnscope-notes").inner_text()
    # Another layer is not in the saved state: the view says so at once, not "Loading…".
    head.locator('[data-testid="layer-select"]').select_option("2")
    page.wait_for_function(
        "el => el.innerText.includes('run the cell to explore further')",
        arg=head.element_handle(),
    )
    if screenshots.enabled:
        screenshots.take("nbconvert-widget-state", page)
