"""The browser tier's own machinery on plain local pages: blocking, errors, readiness, pictures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_kit import (
    PageWatch,
    Screenshots,
    is_local_url,
    new_watched_page,
    wait_for_next_draw,
    wait_for_widget,
)

pytestmark = pytest.mark.browser

# A stand-in for the widget's readiness contract: data-ready once data is in,
# data-draws counting finished draws; a click draws again.
FAKE_WIDGET = """<!doctype html><html><body>
<div class="attnscope-view" data-draws="0"><button id="redraw">redraw</button></div>
<script>
const root = document.querySelector(".attnscope-view");
const draw = () => requestAnimationFrame(() => {
  root.dataset.draws = String(Number(root.dataset.draws) + 1);
  root.dataset.ready = "true";
});
document.getElementById("redraw").addEventListener("click", draw);
draw();
</script></body></html>"""


def write_page(folder: Path, name: str, html: str) -> str:
    path = folder / name
    path.write_text(html)
    return path.as_uri()


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("file:///tmp/x.html", True),
        ("data:text/plain,hi", True),
        ("blob:http://127.0.0.1:8888/abc", True),
        ("http://127.0.0.1:8888/lab", True),
        ("ws://127.0.0.1:8888/api/kernels/x/channels", True),
        ("http://localhost:8888/lab", False),
        ("https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min.js", False),
        ("https://unpkg.com/circuitsvis", False),
    ],
)
def test_only_local_urls_count_as_local(url: str, local: bool) -> None:
    assert is_local_url(url) is local


def test_stray_cdn_request_is_aborted_and_reported(browser: Any, tmp_path: Path) -> None:
    cdn = "https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min.js"
    url = write_page(
        tmp_path,
        "cdn.html",
        f'<!doctype html><script src="{cdn}"></script><p id="after">loaded</p>',
    )
    context, page, watch = new_watched_page(browser)
    try:
        page.goto(url)
        page.locator("#after").wait_for()
    finally:
        context.close()
    assert watch.blocked == [cdn]
    problems = watch.problems()
    assert any(cdn in p for p in problems)


def test_console_errors_and_exceptions_are_collected(browser: Any, tmp_path: Path) -> None:
    url = write_page(
        tmp_path,
        "errors.html",
        """<!doctype html><script>
        console.log("fine"); console.warn("also fine"); console.error("broken thing");
        function explodeLater() { throw new Error("boom"); }
        setTimeout(explodeLater);
        </script>""",
    )
    context, page, watch = new_watched_page(browser)
    try:
        # Events arrive in order: once the exception is in, so is the console error.
        with page.expect_event("pageerror"):
            page.goto(url)
    finally:
        context.close()
    assert watch.console_errors == [f"broken thing ({url})"]
    assert any("boom" in e for e in watch.page_errors)
    # Where it rose is kept, so a flaky exception in CI names its function.
    assert any("explodeLater" in e for e in watch.page_errors), watch.page_errors
    watch.allowed.append("broken thing")
    assert [p for p in watch.problems() if "console error" in p] == []


def test_page_watch_starts_clean() -> None:
    assert PageWatch().problems() == []


def test_readiness_helpers_wait_for_draws(page: Any, tmp_path: Path) -> None:
    page.goto(write_page(tmp_path, "widget.html", FAKE_WIDGET))
    root = wait_for_widget(page)
    assert root.get_attribute("data-ready") == "true"
    before = int(root.get_attribute("data-draws"))
    page.click("#redraw")
    wait_for_next_draw(page, before)
    assert int(root.get_attribute("data-draws")) == before + 1


def test_screenshots_write_named_pngs_only_when_asked(page: Any, tmp_path: Path) -> None:
    page.goto(write_page(tmp_path, "shot.html", FAKE_WIDGET))
    root = wait_for_widget(page)
    assert Screenshots(None).take("widget", root) is None
    shots = Screenshots(tmp_path / "images")
    path = shots.take("fake-widget", root)
    assert path == tmp_path / "images" / "fake-widget.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="screenshot name"):
        shots.take("../escape", root)
