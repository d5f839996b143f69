"""The docs site (``make docs``) works offline: its pages' widgets draw from saved state.

Two example notebooks (from scratch and minimal pairs: ~10 s together on 2 cores, the
whole site ~1-2 minutes; they show the head, model, neuron and compared neuron views)
are built by ``docs/site/build_site.py`` into a temporary folder, served on
127.0.0.1 and opened from the index page in chromium whose every non-local request
is aborted (a blocked request fails the test): the widget manager, require.js and
anywidget come from the site's ``_static/`` folder, and every widget draws its
current view with no kernel, no "Loading" left and no error notice.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_kit import DEFAULT_VIEW, PageWatch, Screenshots, wait_for_widget
from page_kit import canvas_stats
from static_server import served_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from executed_notebooks import build_site, run_from_session

pytestmark = pytest.mark.browser

BUILD_SITE = Path(__file__).resolve().parents[2] / "docs" / "site" / "build_site.py"
# Every example but the long-context one (its needle runs take ~20 s): the pages that change a
# widget from Python after showing it (quickstart, decoder_and_seq2seq, finding_heads) included.
PAGES = (
    "quickstart.html",
    "decoder_and_seq2seq.html",
    "finding_heads.html",
    "generation.html",
    "mha_from_scratch.html",
    "minimal_pairs.html",
)
CDN = re.compile(r"unpkg\.com|cdn\.jsdelivr\.net|cdnjs\.cloudflare\.com")
WIDGET = '.jupyter-widgets [data-testid="attnscope-root"]'
ATTNSCOPE_VIEWS = """() => {
  const state = JSON.parse(document.querySelector(
    'script[type="application/vnd.jupyter.widget-state+json"]').textContent).state;
  return [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')]
    .map((s) => state[JSON.parse(s.textContent).model_id])
    .filter((m) => m && m.model_module === "anywidget").length;
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # The notebooks as this session ran them once (tests/executed_notebooks.py; test_notebooks
    # reads the same runs), converted the way make docs converts them.
    names = [f"{Path(p).stem}.ipynb" for p in PAGES]
    build_site().build(out, names, run=run_from_session)
    return out


@pytest.fixture(scope="module")
def site_url(site: Path) -> Iterator[str]:
    with served_folder(site) as url:
        yield url


def test_pages_load_their_scripts_from_the_site_not_a_cdn(site: Path) -> None:
    assert sorted(p.name for p in site.glob("*.html")) == sorted([*PAGES, "index.html"])
    for name in PAGES:
        body = (site / name).read_text(encoding="utf-8")
        scripts = re.findall(r"<script[^>]*\ssrc=\"([^\"]*)\"", body)
        assert "_static/require.js" in scripts
        assert "_static/html-manager/embed-amd.js" in body
        assert 'anywidget: "_static/anywidget"' in body
        assert not [s for s in scripts if CDN.search(s)], scripts
        assert "mathjax" not in body.lower()
    for vendored in ("require.js", "anywidget.js", "html-manager/embed-amd.js"):
        assert (site / "_static" / vendored).stat().st_size > 10_000
    index = (site / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{name}"' in index for name in PAGES)
    assert (
        "Minimal pairs: how attention changes between two inputs" in index
    )  # the notebook's first heading


def ink(view: Any) -> int:
    """Painted pixels of the view's most inked canvas (a view draws on one or several)."""
    canvases = view.locator("canvas")
    return max(canvas_stats(canvases.nth(i)).painted for i in range(canvases.count()))


def test_two_pages_from_the_index_draw_every_widget_offline(
    site_url: str, page: Any, page_watch: PageWatch, screenshots: Screenshots
) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    views: list[str] = []
    for name in PAGES:
        page.goto(f"{site_url}/index.html")
        page.locator(f'a[href="{name}"]').click()
        page.wait_for_url(f"{site_url}/{name}")
        # Each attnscope output is one view script nbconvert wrote (other widgets, such as a
        # progress bar, have their own): wait until each has rendered.
        count = page.evaluate(ATTNSCOPE_VIEWS)
        assert count >= 1, f"{name}: no attnscope widget in the page"
        page.wait_for_function(
            "([sel, n]) => document.querySelectorAll(sel).length >= n", arg=[WIDGET, count]
        )
        widgets = page.locator(WIDGET)
        for index in range(count):
            widget = widgets.nth(index)
            view = wait_for_widget(widget, root=DEFAULT_VIEW, timeout_ms=60_000)
            kind = view.get_attribute("data-testid")
            assert ink(view) > 1000, f"{name}: widget {index} ({kind}) drew nothing"
            text = widget.inner_text()
            assert "Loading" not in text, f"{name}: widget {index} ({kind}) still loading"
            alerts = widget.locator('[role="alert"]:visible')
            assert alerts.count() == 0, f"{name}: widget {index}: {alerts.all_inner_texts()}"
            assert "saved widget state" in text  # it says what needs a kernel
            views.append(kind)
        if screenshots.enabled:
            screenshots.take(f"docs-site-{Path(name).stem}", widgets.first)
    assert {"head-view", "model-view", "neuron-view", "compare-neuron-view"} <= set(views)
    local = [u for u in requested if u.startswith(site_url)]
    assert local == requested  # nothing asked of another host (the page fixture aborts it)
    assert f"{site_url}/_static/html-manager/embed-amd.js" in requested
    assert f"{site_url}/_static/anywidget.js" in requested
    assert not page_watch.blocked
