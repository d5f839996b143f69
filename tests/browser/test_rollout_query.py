"""The live head view over a long input draws the rollout of its locked query.

Past 1024 tokens no page holds every query's rollout; the widget offers the
locked query's (``pseudo:<stream>:<layer>:<query>``, computed by Python a
block of rows at a time). The real bundle runs in chromium on the Colab-like
glue of test_colab_like_host.py, answered by a real :class:`AttentionWidget`.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from browser_kit import wait_for_widget
from page_kit import VIEW_ROOTS
from test_colab_like_host import ORIGIN, initial_state, notebook_files, serve

from attnscope import AttentionWidget
from test_rollout_row import causal_trace

pytestmark = pytest.mark.browser

ONE = """<!doctype html><html><body>
<iframe id="out0" src="output.html?i=0" style="width:1000px;height:700px"></iframe>
</body></html>"""
QUERY = 1090


def test_locked_query_rollout_is_drawn_past_1024_tokens(page: Any, screenshots: Any) -> None:
    widget = AttentionWidget(causal_trace(1100, layers=2), view="head", layer=1)
    served: list[str] = []

    def send(_source: Any, _index: int, content: Any) -> dict[str, Any]:
        served.extend(content["keys"])
        replies = widget.answer(content)
        encoded = [[r, [base64.b64encode(b).decode() for b in bufs]] for r, bufs in replies]
        return {"replies": encoded}

    page.expose_binding("colabSend", send)
    page.expose_binding("colabSave", lambda _source, _index, _changes: None)
    state = initial_state(widget)
    assert state["_meta"]["streams"]["self"]["rollout_query"] is True
    serve(page, notebook_files(ONE, [state]))
    page.goto(f"{ORIGIN}/notebook.html")
    frame = page.frame(url=f"{ORIGIN}/output.html?i=0")
    view = wait_for_widget(frame, root=VIEW_ROOTS["head"])
    toggle = frame.locator('[data-testid="head-rollout"]')
    assert toggle.is_visible()
    search = frame.locator('[data-testid="head-search"]')
    search.fill(f"w{QUERY}")
    search.press("Enter")  # locks the query (and scrolls to it)
    frame.wait_for_function(
        "(el) => el.querySelector('.is-selected') !== null", arg=view.element_handle()
    )
    toggle.check()
    frame.wait_for_function(
        "(el) => Number(el.dataset.rolloutLines) > 0", arg=view.element_handle(), timeout=60_000
    )
    assert f"pseudo:self:1:{QUERY}" in served
    assert "Could not load" not in view.inner_text()
    screenshots.take("long-1100-rollout-of-locked-query", page)
