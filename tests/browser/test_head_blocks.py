"""The live head view over a long input: it asks Python for blocks of query rows, not layers.

The real bundle in chromium, mounted twice on a JSON-state model (the Colab-like
glue of test_colab_like_host.py), each output answered by a real
:class:`AttentionWidget` over the same 600-token trace: one as the widget
describes it (``top_block`` rows per block), one told to read whole layers
(``top_block`` null, as an exported page). Both must draw the same lines.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from browser_kit import wait_for_widget
from page_kit import VIEW_ROOTS
from test_colab_like_host import ORIGIN, initial_state, notebook_files, serve

from attnscope import AttentionStream, AttentionTrace, AttentionWidget, Tokens
from attnscope.encode.meta import stream_top_block

pytestmark = pytest.mark.browser

N = 600
TWO = """<!doctype html><html><body>
<iframe id="out0" src="output.html?i=0" style="width:900px;height:700px"></iframe>
<iframe id="out1" src="output.html?i=1" style="width:900px;height:700px"></iframe>
</body></html>"""


# Each head-view draw as (ready, lines, lines off screen), logged in each frame from its start.
LOG_DRAWS = """window.attnscopeDraws = [];
new MutationObserver((records) => {
  for (const r of records) {
    const v = r.target;
    if (v.dataset.testid !== "head-view") continue;
    window.attnscopeDraws.push([v.dataset.ready, v.dataset.lines, v.dataset.offscreen].join(" "));
  }
}).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-draws"] });"""


def drawn_with_data(frame: Any) -> list[str]:
    """The pictures a frame drew while saying it was ready, each once in a row."""
    log = [e for e in frame.evaluate("() => window.attnscopeDraws") if e.startswith("true ")]
    return [e for i, e in enumerate(log) if i == 0 or log[i - 1] != e]


def long_trace() -> AttentionTrace:
    rng = np.random.default_rng(2)
    q = rng.normal(size=(2, 3, N, 8)).astype(np.float32) * 2
    k = rng.normal(size=(2, 3, N, 8)).astype(np.float32)
    stop = np.arange(1, N + 1, dtype=np.int32)
    causal = np.stack([np.zeros(N, np.int32), stop], 1)[None]
    stream = AttentionStream(queries=q, keys=k, scaling=np.float32(8**-0.5), key_spans=causal)
    return AttentionTrace.from_streams(Tokens([f"w{i}" for i in range(N)]), [stream])


def seen(frame: Any) -> dict[str, Any]:
    """What the reader sees: lines, lines to keys off screen, key bars (their lengths), legend."""
    view = frame.locator(VIEW_ROOTS["head"])
    shown = {
        name: view.get_attribute(f"data-{name}")
        for name in ("ready", "lines", "offscreen", "width")
    }
    bars = view.locator('[data-side="key"] [data-i]').evaluate_all(
        "(rows) => rows.filter((r) => r.style.boxShadow)"
        ".map((r) => r.dataset.i + r.style.boxShadow)"
    )
    legend = view.locator('[data-testid="head-scale"]').text_content()
    return {**shown, "bars": str(len(bars)), "bar_styles": bars, "legend": legend}


def redrawn(frame: Any, draws: int) -> None:
    frame.wait_for_function(
        """([sel, n]) => { const v = document.querySelector(sel);
           return v.dataset.ready === "true" && Number(v.dataset.draws) > n; }""",
        arg=[VIEW_ROOTS["head"], draws],
    )


def draws(frame: Any) -> int:
    return int(frame.locator(VIEW_ROOTS["head"]).get_attribute("data-draws") or 0)


def test_the_view_asks_for_the_rows_it_draws_and_draws_what_whole_layers_draw(page: Any) -> None:
    trace = long_trace()
    block = stream_top_block(trace.stream)
    assert block < N  # several blocks, or this test tests nothing
    widgets = [AttentionWidget(trace, view="head", layer=1) for _ in range(2)]
    served: list[list[str]] = [[], []]

    def send(_source: Any, index: int, content: Any) -> dict[str, Any]:
        served[index] += content["keys"]
        replies = widgets[index].answer(content)
        encoded = [[r, [base64.b64encode(b).decode() for b in bufs]] for r, bufs in replies]
        return {"replies": encoded}

    page.expose_binding("colabSend", send)
    page.expose_binding("colabSave", lambda _source, _index, _changes: None)
    states = [initial_state(w) for w in widgets]
    states[1]["_meta"]["streams"]["self"]["top_block"] = None  # read whole layers
    serve(page, notebook_files(TWO, states))
    page.add_init_script(LOG_DRAWS)
    page.goto(f"{ORIGIN}/notebook.html")
    blocks, whole = (page.frame(url=f"{ORIGIN}/output.html?i={i}") for i in range(2))
    for frame in (blocks, whole):
        wait_for_widget(frame, root=VIEW_ROOTS["head"])

    assert served[0][0] == "top:self:1:0"  # the rows on screen, first
    assert served[1][0] == "top:self:1"
    # 600 tokens open on the row scale; the weight scale draws fewer, fainter lines.
    for frame in (blocks, whole):
        n = draws(frame)
        frame.locator('[data-testid="head-scale-select"]').select_option("weight")
        redrawn(frame, n)
        frame.evaluate("() => { window.attnscopeDraws = []; }")
    assert seen(blocks) == seen(whole)
    assert int(seen(blocks)["lines"]) > 0

    # Scrolled down to rows of two blocks not asked for yet; then a query picked there.
    row = 2 * block - 10
    for frame in (blocks, whole):
        n = draws(frame)
        frame.evaluate(
            "(y) => { document.querySelector('[data-testid=\"head-viewport\"]').scrollTop = y; }",
            row * 18,
        )
        redrawn(frame, n)
    assert seen(blocks) == seen(whole)
    assert {f"top:self:1:{block}", f"top:self:1:{2 * block}"} <= set(served[0])
    for frame in (blocks, whole):
        n = draws(frame)
        frame.locator(f'[data-side="query"] [data-i="{row + 3}"]').click()
        redrawn(frame, n)
    assert seen(blocks) == seen(whole)
    assert int(seen(blocks)["bars"]) > 0  # the picked query's weights on its keys
    # Never a picture from rows not loaded yet: every ready draw is one the whole layer drew.
    assert drawn_with_data(blocks) == drawn_with_data(whole)
    assert len(drawn_with_data(blocks)) == 2  # scrolled, and with the picked query
    assert "top:self:1" not in served[0]
    assert all(key.startswith("top:self:") for key in served[0])
