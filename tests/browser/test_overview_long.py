"""The overview at 32768 tokens, in the exported page opened from disk in offline chromium.

A random causal GPT-2 (2 layers x 2 heads, n_embd 32, 32768 positions) captured
over 32768 tokens, saved with the default ``save_html``. The model view's
overview derives its tiles from the page's q/k: it must draw the whole causal
triangle, zoom to finer tiles, open the head view at the query a click lands
on, and find the one "needle" token.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from browser_kit import wait_for_next_draw, wait_for_widget
from page_kit import VIEW_ROOTS, ExportedPage, derived_where
from playwright.sync_api import expect

import attnscope

pytestmark = pytest.mark.browser

TOKENS = 32768
NEEDLE = 20000
WARRANTY = 25000  # "warranty": MiniLM's "warrant ##y", tokens 25000 and 25001
ROW = 18  # js/views/head/head_lines.ts: a head-view row's height in CSS pixels
OVERVIEW = '[data-testid="overview"]'
WORDS = ["the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", "far", "away"]
# Main-thread tasks over 50 ms, as the browser reports them (printed, not held to a time).
LONG_TASKS = """
window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longTasks.push(e.duration);
}).observe({ type: "longtask", buffered: true });
"""
SLOW_MS = 180_000  # tiles of 32768-token rows are computed in the page, on a loaded machine

# Share of the canvas's pixels whose colour is not the one at its top right (causal: empty).
_INK = """(el) => {
    const g = el.getContext("2d");
    const px = g.getImageData(0, 0, el.width, el.height).data;
    const bg = g.getImageData(el.width - 2, 1, 1, 1).data;
    let ink = 0;
    const off = (i) => [0, 1, 2].reduce((s, c) => s + Math.abs(px[i + c] - bg[c]), 0);
    for (let i = 0; i < px.length; i += 4) if (off(i) > 6) ink++;
    return ink / (px.length / 4);
}"""


@pytest.fixture(scope="module")
def page_32k(minilm: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default ``save_html`` of a random causal GPT-2's 32768-token trace."""
    import torch
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=TOKENS)
    model = GPT2Model(config).eval()
    words = [WORDS[i % len(WORDS)] for i in range(TOKENS - 2)]
    words[NEEDLE - 1] = "needle"  # token NEEDLE ([CLS] is token 0)
    words[WARRANTY - 1] = "warranty"  # two tokens: one word less at the end keeps TOKENS
    words.pop()
    trace = attnscope.capture(model, " ".join(words), tokenizer=minilm[1])
    assert len(trace.tokens) == TOKENS
    return attnscope.save_html(trace, tmp_path_factory.mktemp("overview") / "gpt2-32768")


def _number(panel: Any, name: str) -> float:
    return float(panel.get_attribute(f"data-{name}") or "nan")


def _show(scope: Any, view: str) -> Any:
    scope.locator(f'[data-testid="tab-{view}"]').click()
    return wait_for_widget(scope, root=VIEW_ROOTS[view], timeout_ms=SLOW_MS)


def _redraw(scope: Any, panel: Any, action: Any) -> Any:
    before = int(panel.get_attribute("data-draws") or 0)
    action()
    wait_for_next_draw(scope, before, root=OVERVIEW, timeout_ms=SLOW_MS)
    return wait_for_widget(scope, root=OVERVIEW, timeout_ms=SLOW_MS)


def _query_in_view(scope: Any, query: int) -> None:
    viewport = scope.locator('[data-testid="head-viewport"]')
    top = float(viewport.evaluate("(el) => el.scrollTop"))
    height = float(viewport.evaluate("(el) => el.clientHeight"))
    assert top <= query * ROW <= top + height, (query, top, height)


def drive_overview(scope: Any, page: Any, screenshots: Any, shot: Any, name: str) -> int:
    """Zoom, click and search in the overview under ``scope``; return the query clicked."""
    _show(scope, "model")
    panel = wait_for_widget(scope, root=OVERVIEW, timeout_ms=SLOW_MS)
    canvas = panel.locator('[data-testid="overview-canvas"]')
    assert panel.get_attribute("data-level") == "0"
    assert "queries 0–32767" in panel.inner_text()
    whole = float(canvas.evaluate(_INK))
    # causal: about half of the square is the triangle of visible keys
    assert whole > 0.35, f"the whole 32768 x 32768 overview inks {whole:.1%}"
    screenshots.take(f"{name}-whole", shot)

    # Zoom in four times (x16): a quarter pixel a token, tiles of level 4
    for _ in range(4):
        panel = _redraw(scope, panel, panel.locator('[data-testid="overview-zoom-in"]').click)
    assert panel.get_attribute("data-level") == "4"
    assert panel.get_attribute("data-tiles") in {"1/1", "2/2", "4/4"}
    assert _number(panel, "last-row") - _number(panel, "first-row") < 3000
    screenshots.take(f"{name}-zoomed", shot)

    # A click at a point: the head view opens with that query locked and scrolled into view
    box = canvas.bounding_box()
    x, y = box["width"] * 0.3, box["height"] * 0.7
    query = int(_number(panel, "y0") + y / _number(panel, "scale"))
    canvas.click(position={"x": x, "y": y})
    wait_for_widget(scope, root=VIEW_ROOTS["head"], timeout_ms=SLOW_MS)
    _query_in_view(scope, query)
    assert query > 1000

    # Search: the one needle; the map moves to its row, which becomes the query
    _show(scope, "model")
    panel = wait_for_widget(scope, root=OVERVIEW, timeout_ms=SLOW_MS)
    search = panel.locator('[data-testid="overview-search"]')
    search.fill("needle")
    panel = _redraw(scope, panel, lambda: search.press("Enter"))
    assert panel.locator('[data-testid="overview-search-count"]').inner_text() == "1 of 1"
    assert _number(panel, "first-row") <= NEEDLE <= _number(panel, "last-row")
    assert panel.get_attribute("data-level") == "7"  # one weight a cell
    near = float(canvas.evaluate(_INK))
    assert near > 0.2, f"the overview around the needle inks {near:.1%}"
    screenshots.take(f"{name}-needle", shot)
    _show(scope, "head")
    _query_in_view(scope, NEEDLE)

    # The wheel zooms about the pointer; a shift-click opens the neuron view on that query
    _show(scope, "model")
    panel = wait_for_widget(scope, root=OVERVIEW, timeout_ms=SLOW_MS)
    panel = _redraw(scope, panel, panel.locator('[data-testid="overview-fit"]').click)
    assert panel.get_attribute("data-level") == "0"
    y = box["height"] * 0.8
    fit, before = _number(panel, "scale"), _number(panel, "y0") + y / _number(panel, "scale")
    canvas.hover(position={"x": box["width"] * 0.6, "y": y})
    panel = _redraw(scope, panel, lambda: page.mouse.wheel(0, -700))
    assert int(panel.get_attribute("data-level") or 0) >= 2
    zoomed = _number(panel, "scale")
    picked = int(_number(panel, "y0") + y / zoomed)
    assert abs(picked - before) <= 1 / fit  # the row under the pointer stayed under it
    canvas.click(position={"x": box["width"] * 0.6, "y": box["height"] * 0.8}, modifiers=["Shift"])
    neuron = wait_for_widget(scope, root=VIEW_ROOTS["neuron"], timeout_ms=SLOW_MS)
    shown = int(neuron.locator('[data-testid="neuron-query"]').input_value())
    assert abs(shown - picked) <= 2 / zoomed  # within the canvas's border
    return query


def test_overview_in_the_saved_page(page: Any, page_32k: Path, screenshots: Any) -> None:
    page.set_default_timeout(SLOW_MS)
    page.set_viewport_size({"width": 1100, "height": 1400})
    page.add_init_script(LONG_TASKS)
    exported = ExportedPage(page, page_32k.as_uri()).open()
    drive_overview(page, page, screenshots, exported.picture(), "overview-32768-page")
    # Every chunk the page computed from q and k, the overview's tiles and the head view's blocks
    # of top keys, came from the page's derive worker (js/derive_off_thread.ts), none from the
    # main thread: there they took up to half a second of it at a time.
    derived = derived_where(page)
    kinds = Counter((where, key.split(":")[0]) for where, key in derived)
    assert kinds["worker", "tile"] >= 6, kinds  # the whole map, four zooms, the needle, the wheel
    assert kinds["worker", "top"] >= 2, kinds  # the head view at the click and at the needle
    assert not [key for where, key in derived if where != "worker"], kinds
    longest = page.evaluate("() => Math.max(0, ...window.__longTasks)")
    print(f"derived in the worker: {dict(kinds)}; longest main-thread task: {longest:.0f} ms")

    # The dark theme repaints the tiles on the dark background; the map still shows the triangle
    _show(page, "model")
    panel = wait_for_widget(page, root=OVERVIEW, timeout_ms=SLOW_MS)
    panel = _redraw(page, panel, lambda: page.select_option('[data-testid="theme-select"]', "dark"))
    panel = _redraw(page, panel, panel.locator('[data-testid="overview-fit"]').click)
    dark = float(panel.locator('[data-testid="overview-canvas"]').evaluate(_INK))
    screenshots.take("overview-32768-page-dark", exported.picture())
    assert dark > 0.35, f"the whole overview inks {dark:.1%} in the dark theme"


def test_a_word_split_into_pieces_is_found_in_the_32k_page(
    page: Any, page_32k: Path, screenshots: Any
) -> None:
    page.set_default_timeout(SLOW_MS)
    page.set_viewport_size({"width": 1100, "height": 1400})
    exported = ExportedPage(page, page_32k.as_uri()).open()
    _show(page, "model")
    panel = wait_for_widget(page, root=OVERVIEW, timeout_ms=SLOW_MS)
    search = panel.locator('[data-testid="overview-search"]')
    count = panel.locator('[data-testid="overview-search-count"]')
    # As tokens, "warranty" is in no label (the tokenizer split it); as words it is found.
    panel.locator('[data-testid="overview-search-mode"]').select_option("tokens")
    search.fill("Warranty")
    search.press("Enter")
    expect(count).to_have_text("no match")
    panel.locator('[data-testid="overview-search-mode"]').select_option("words")
    panel = _redraw(page, panel, lambda: search.press("Enter"))
    expect(count).to_have_text("1 of 1")
    found = search.locator("xpath=..")
    expect(found).to_have_attribute("data-found", f"{WARRANTY}-{WARRANTY + 1}")
    assert _number(panel, "first-row") <= WARRANTY <= _number(panel, "last-row")
    screenshots.take("overview-32768-find-warranty", exported.picture())
    # The head view's box finds it too, and marks both pieces of the word.
    head = _show(page, "head")
    box = head.locator('[data-testid="head-search"]')
    box.fill("WHILE warranty")  # a phrase: the word before it (WORDS[24998 % 11]) and it
    box.press("Enter")
    expect(head.locator('[data-testid="head-search-count"]')).to_have_text("1 of 1")
    marked = head.locator(".attnscope-tok.is-found")
    expect(marked).to_have_text(["while", "warrant", "·y"])
    _query_in_view(page, WARRANTY - 1)
    screenshots.take("head-32768-find-warranty", exported.picture())


CAPTURE = f"""
import os
os.environ["HF_HUB_OFFLINE"] = "1"
import torch, attnscope
from transformers import AutoTokenizer, GPT2Config, GPT2Model
tokenizer = AutoTokenizer.from_pretrained({{path!r}})
torch.manual_seed(0)
model = GPT2Model(GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions={TOKENS})).eval()
words = [{WORDS!r}[i % {len(WORDS)}] for i in range({TOKENS - 2})]
words[{NEEDLE - 1}] = "needle"
trace = attnscope.capture(model, " ".join(words), tokenizer=tokenizer)
print(len(trace.tokens))
"""


@pytest.mark.jupyter
def test_overview_in_the_live_widget_in_jupyterlab(
    lab: Any, jupyter_server: Any, minilm_path: Path, screenshots: Any
) -> None:
    import nbformat

    name = "overview_32k.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import attnscope")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, jupyter_server.notebook_path(name))
    lab.page.set_default_timeout(SLOW_MS)
    lab.page.set_viewport_size({"width": 1300, "height": 1500})
    lab.open(name)
    out = lab.output_text(lab.run_code(CAPTURE.format(path=str(minilm_path)), timeout_ms=600_000))
    assert out.strip().endswith(str(TOKENS)), out
    index = lab.run_code('w = attnscope.AttentionWidget(trace, view="model")\nw')
    output = lab.cell_output(index)
    query = drive_overview(output, lab.page, screenshots, output, "overview-32768-jupyterlab")
    # The browser's selection reached Python: the shift-click's query, key and view.
    state = lab.output_text(lab.run_code("print(w.query, w.view, w.key is not None)")).strip()
    assert state.split()[1:] == ["neuron", "True"], (state, query)
    assert abs(int(state.split()[0]) - 0.8 * TOKENS) < 300, state
