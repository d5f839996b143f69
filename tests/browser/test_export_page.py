"""The exported page (``save_html``) of a real MiniLM run, opened from disk in offline chromium.

One session fixture captures all-MiniLM-L6-v2 on a 64-token sentence pair and
writes the page; every test opens it through ``file://`` in a fresh page whose
non-local requests are aborted and whose console errors fail the test. Each
interaction waits for the view's next draw (``data-draws``) and then checks
the DOM or the canvas pixels.

``make screenshots`` runs the ``screenshot`` tests with
``--screenshots=docs/images`` to make the README's pictures.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from page_kit import ExportedPage, canvas_stats, css_luminance

import attnscope

pytestmark = pytest.mark.browser

SENTENCE_A = (
    "The quick brown fox jumped over the lazy dog while the old farmer watched "
    "quietly from the porch of his small wooden house on the hill."
)
SENTENCE_B = (
    "Later that evening, the tired dog chased the fox back into the dark woods behind "
    "the red barn, close to the cold river where the ducks sleep in the tall grass."
)
# The only absolute URL in the page: the SVG namespace the image export writes
# into its files. It is an identifier, never fetched.
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


@pytest.fixture(scope="session")
def pair_trace(minilm: tuple[Any, Any]) -> attnscope.AttentionTrace:
    """MiniLM's trace of a sentence pair (64 tokens, with q and k)."""
    model, tokenizer = minilm
    trace = attnscope.capture(model, SENTENCE_A, tokenizer=tokenizer, text_pair=SENTENCE_B)
    assert len(trace.tokens) == 64
    assert trace.queries is not None
    return trace


@pytest.fixture(scope="session")
def page_file(
    pair_trace: attnscope.AttentionTrace, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The exported page of ``pair_trace``, written once for the session."""
    return attnscope.save_html(pair_trace, tmp_path_factory.mktemp("export") / "minilm-pair")


@pytest.fixture
def exported(page: Any, page_file: Path) -> ExportedPage:
    """The exported page, open and drawn (head view first)."""
    return ExportedPage(page, page_file.as_uri()).open()


def token(exported: ExportedPage, side: str, i: int) -> Any:
    """Token row ``i`` of the head view's query or key column."""
    return exported.page.locator(f'.attnscope-hv-col[data-side="{side}"] [data-i="{i}"]')


def lines(exported: ExportedPage) -> int:
    """How many lines the head view drew last."""
    return int(exported.attr("head", "data-lines") or 0)


def first_of_b(trace: attnscope.AttentionTrace) -> int:
    """Index of sentence B's first token."""
    segments = trace.source.segments
    assert segments is not None
    return list(segments).index(1)


# 1. Every view renders.


@pytest.mark.parametrize("name", ["head", "model", "neuron"])
def test_each_view_renders_without_console_errors(
    exported: ExportedPage, page_watch: Any, name: str
) -> None:
    view = exported.show(name)
    assert view.get_attribute("data-ready") == "true"
    assert (
        exported.page.locator(f'[data-testid="tab-{name}"]').get_attribute("aria-selected")
        == "true"
    )
    stats = canvas_stats(exported.canvas(name))
    assert stats.painted > stats.total // 10, f"the {name} view's canvas is nearly empty"
    assert not exported.page.locator(".attnscope-status[data-kind='error']:not([hidden])").count()
    assert page_watch.problems() == []


# 2. Head swatches.


def test_head_swatch_click_changes_the_drawing(exported: ExportedPage) -> None:
    swatch = exported.page.locator('.attnscope-swatch[data-head="3"]')
    assert swatch.get_attribute("aria-pressed") == "true"
    before, drawn = canvas_stats(exported.canvas("head")), lines(exported)
    exported.redraw_after("head", swatch.click)
    assert swatch.get_attribute("aria-pressed") == "false"
    assert canvas_stats(exported.canvas("head")).hash != before.hash
    assert 0 < lines(exported) < drawn
    exported.redraw_after("head", swatch.click)
    assert swatch.get_attribute("aria-pressed") == "true"
    assert lines(exported) == drawn


# 3. Token hover and lock.


def test_token_hover_and_click_focus_the_lines_and_lock_the_query(exported: ExportedPage) -> None:
    canvas = exported.canvas("head")
    unfocused, drawn = canvas_stats(canvas), lines(exported)
    fox = token(exported, "query", 4)
    assert fox.inner_text() == "fox"

    exported.redraw_after("head", fox.hover)
    hovered = canvas_stats(canvas)
    assert hovered.hash != unfocused.hash
    assert 0 < lines(exported) < drawn  # only the hovered query's lines
    focused = lines(exported)

    exported.redraw_after("head", fox.click)
    assert "is-selected" in (fox.get_attribute("class") or "")
    # Off the tokens, the locked query keeps the focus the hover gave.
    box = canvas.bounding_box()
    exported.redraw_after(
        "head", lambda: exported.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)
    )
    assert lines(exported) == focused
    assert canvas_stats(canvas).hash == hovered.hash
    # The lock is the widget's `query` state: the neuron view explains that query.
    exported.show("neuron")
    assert exported.page.locator('[data-testid="neuron-query"]').input_value() == "4"
    assert "query “fox” (#4)" in exported.page.locator('[data-testid="neuron-info"]').inner_text()


# 4. Model view → head view.


def test_model_cell_click_opens_that_layer_and_head(exported: ExportedPage) -> None:
    exported.show("model")
    layer, head = 3, 7
    canvas = exported.canvas("model")
    box = canvas.bounding_box()
    # The grid: 34 px of layer labels, 16 px of head labels, cells with a 2 px gap.
    heads = 12
    step = (box["width"] - 34) / heads
    canvas.click(position={"x": 34 + step * (head + 0.5), "y": 16 + step * (layer + 0.5)})
    exported.page.wait_for_selector('[data-testid="head-view"][data-ready="true"]')
    assert exported.page.locator('[data-testid="layer-select"]').input_value() == str(layer)
    pressed = exported.page.locator('.attnscope-swatch[aria-pressed="true"]')
    assert pressed.count() == 1
    assert pressed.get_attribute("data-head") == str(head)
    assert (
        exported.page.locator('[data-testid="tab-head"]').get_attribute("aria-selected") == "true"
    )


# 5. Neuron view dimension hover.


def test_neuron_dimension_hover_highlights_it(exported: ExportedPage) -> None:
    exported.show("neuron")
    strip = exported.canvas("neuron")
    before = canvas_stats(strip)
    box = strip.bounding_box()
    dims = 32  # MiniLM's head size
    dim = 9
    exported.redraw_after(
        "neuron",
        lambda: strip.hover(
            position={"x": box["width"] / dims * (dim + 0.5), "y": box["height"] / 2}
        ),
    )
    assert exported.attr("neuron", "data-hover-dim") == str(dim)
    assert canvas_stats(strip).hash != before.hash
    assert exported.page.locator(".attnscope-nv-readout").inner_text().startswith(f"dim {dim}: q=")


# 6. Neuron view numbers match Python.


def test_neuron_qk_matches_the_trace(
    exported: ExportedPage, pair_trace: attnscope.AttentionTrace
) -> None:
    layer, head, query, key = 2, 5, 38, 4  # the second "fox" and the first
    exported.show("model")
    canvas = exported.canvas("model")
    step = (canvas.bounding_box()["width"] - 34) / 12
    # Shift-click opens the cell in the neuron view.
    canvas.click(
        position={"x": 34 + step * (head + 0.5), "y": 16 + step * (layer + 0.5)},
        modifiers=["Shift"],
    )
    exported.page.wait_for_selector('[data-testid="neuron-view"][data-ready="true"]')
    query_in = exported.page.locator('[data-testid="neuron-query"]')
    exported.redraw_after("neuron", lambda: (query_in.fill(str(query)), query_in.press("Enter")))
    row = exported.page.locator(f'.attnscope-nv-body [data-key="{key}"]')
    exported.redraw_after("neuron", row.click)
    assert row.get_attribute("aria-selected") == "true"
    info = exported.page.locator('[data-testid="neuron-info"]').inner_text()
    assert f"layer {layer} · head {head} · query “fox” (#{query})" in info

    q = pair_trace.queries[layer, head].astype(np.float64)
    k = pair_trace.keys[layer, pair_trace.stream.kv_head(head)].astype(np.float64)
    # The page sends q and k as float16 (each value within 2^-11 of itself): a product
    # moves by at most 2^-10 of its size, a dot product by 2^-10 of sum |q_d k_d|.
    bound = np.abs(q[query]) @ np.abs(k).T * 2.0**-10 + 1e-6
    expected = q[query] @ k[key]
    assert abs(float(row.get_attribute("data-qk")) - expected) <= bound[key]
    # Every row drawn, not only the selected one.
    rows = exported.page.locator(".attnscope-nv-body [data-key]:not([hidden])")
    shown = rows.evaluate_all("rs => rs.map(r => [Number(r.dataset.key), Number(r.dataset.qk)])")
    assert len(shown) >= 20
    for j, qk in shown:
        assert abs(qk - q[query] @ k[j]) <= bound[j]
    assert "matches the model's own weights" in info


# 7. Dark theme.


def assert_dark(exported: ExportedPage) -> None:
    """Root background dark, token text light, the model grid's pixels dark."""
    root = exported.root
    assert root.get_attribute("data-theme") == "dark"
    assert css_luminance(root) < 0.05
    assert css_luminance(token(exported, "query", 1), "color") > 0.5
    # The widget covers the window: no light page around a dark widget.
    assert exported.page.evaluate(
        "() => [[1, 1], [innerWidth - 1, innerHeight - 1]].every(([x, y]) =>"
        " !!document.elementFromPoint(x, y)?.closest('.attnscope'))"
    )
    exported.show("model")
    assert canvas_stats(exported.canvas("model")).luminance < 0.15
    exported.show("head")


def test_theme_select_dark_renders_dark(exported: ExportedPage) -> None:
    assert exported.root.get_attribute("data-theme") == "light"
    assert css_luminance(exported.root) > 0.9
    exported.redraw_after(
        "head",
        lambda: exported.page.select_option('[data-testid="theme-select"]', "dark"),
    )
    assert_dark(exported)


def test_auto_theme_follows_prefers_color_scheme_dark(page: Any, page_file: Path) -> None:
    page.emulate_media(color_scheme="dark")
    exported = ExportedPage(page, page_file.as_uri()).open()
    assert page.locator('[data-testid="theme-select"]').input_value() == "auto"
    assert_dark(exported)


# 8. Pair filter.


def test_pair_filter_a_to_b_keeps_only_lines_from_a_to_b(
    exported: ExportedPage, pair_trace: attnscope.AttentionTrace
) -> None:
    b0 = first_of_b(pair_trace)
    viewport = exported.page.locator('[data-testid="head-viewport"]')
    height = int(viewport.evaluate("v => v.clientHeight"))
    # Scroll the boundary between A and B to the middle of the view.
    exported.redraw_after(
        "head", lambda: viewport.evaluate(f"v => {{ v.scrollTop = {b0 * 18 - height // 2}; }}")
    )
    top = int(viewport.evaluate("v => v.scrollTop"))
    boundary = b0 * 18 - top
    canvas = exported.canvas("head")
    width = int(canvas.evaluate("c => c.width"))
    x0, x1 = 130, width - 130  # where lines start (queries) and end (keys)

    def from_b_queries() -> int:
        return canvas_stats(canvas, (x0 + 1, boundary + 4, 1, height - boundary - 6)).painted

    def to_a_keys() -> int:
        return canvas_stats(canvas, (x1 - 2, 2, 1, boundary - 6)).painted

    every = lines(exported)
    assert from_b_queries() > 0
    assert to_a_keys() > 0
    exported.redraw_after(
        "head", lambda: exported.page.select_option('[data-testid="pair-filter"]', "AB")
    )
    assert 0 < lines(exported) < every
    assert from_b_queries() == 0
    assert to_a_keys() == 0


# 9. Offline.


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [f"<{tag} {name}>" for name, _ in attrs if name in {"src", "href", "action"}]
        if tag in {"link", "iframe", "img", "object", "embed"}:
            self.found.append(f"<{tag}>")


def test_page_has_no_external_url_and_requests_nothing(
    page: Any, page_watch: Any, page_file: Path
) -> None:
    text = page_file.read_text(encoding="utf-8")
    links = _Links()
    links.feed(text)
    assert links.found == []
    assert set(re.findall(r"\b(?:https?|wss?|ftp)://[^\s\"'`<>)]*", text)) <= {SVG_NAMESPACE}

    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    exported = ExportedPage(page, page_file.as_uri()).open()
    for name in ("model", "neuron", "head"):
        exported.show(name)
    assert page_watch.blocked == []
    assert [url for url in requested if not url.startswith(("file:", "data:", "blob:"))] == []


# README pictures (`make screenshots`). Without --screenshots they still check the view.


def screenshot_page(
    page: Any, page_file: Path, *, dark: bool = False, width: int = 960
) -> ExportedPage:
    page.set_viewport_size({"width": width, "height": 760})
    exported = ExportedPage(page, page_file.as_uri()).open()
    if dark:
        exported.redraw_after(
            "head", lambda: page.select_option('[data-testid="theme-select"]', "dark")
        )
    return exported


def focus_query(exported: ExportedPage, layer: int, query: int) -> None:
    """Head view on ``layer`` with ``query`` locked: its lines and key bars."""
    exported.redraw_after(
        "head", lambda: exported.page.select_option('[data-testid="layer-select"]', str(layer))
    )
    viewport = exported.page.locator('[data-testid="head-viewport"]')
    exported.redraw_after(
        "head",
        # Whole rows: the query in the middle, no label cut in half at the top.
        lambda: viewport.evaluate(
            f"v => {{ v.scrollTop = 18 * Math.round(({query * 18} - v.clientHeight / 2) / 18); }}"
        ),
    )
    exported.redraw_after("head", token(exported, "query", query).click)
    exported.page.mouse.move(0, 0)
    assert lines(exported) > 0


def test_screenshot_head_view(page: Any, page_file: Path, screenshots: Any) -> None:
    exported = screenshot_page(page, page_file)
    focus_query(exported, layer=2, query=38)
    assert canvas_stats(exported.canvas("head")).painted > 0
    screenshots.take("page-head-view", exported.picture())


def test_screenshot_head_view_dark(page: Any, page_file: Path, screenshots: Any) -> None:
    exported = screenshot_page(page, page_file, dark=True)
    focus_query(exported, layer=2, query=38)
    assert css_luminance(exported.root) < 0.05
    screenshots.take("page-head-view-dark", exported.picture())


def test_screenshot_model_view(page: Any, page_file: Path, screenshots: Any) -> None:
    # Narrower: the grid's cells are noise to a PNG encoder; smaller cells keep the file small.
    exported = screenshot_page(page, page_file, width=720)
    exported.show("model")
    stats = canvas_stats(exported.canvas("model"))
    assert stats.painted > 0.9 * stats.total  # the gaps between cells are left clear
    screenshots.take("page-model-view", exported.picture())


def test_screenshot_neuron_view(
    page: Any, page_file: Path, pair_trace: attnscope.AttentionTrace, screenshots: Any
) -> None:
    layer, query = 2, 38
    # The head in which "fox" looks hardest at a word (not [CLS] or [SEP]), keys by weight.
    words = np.array([kind == "token" for kind in pair_trace.source.kinds])
    head = int(pair_trace.attention[layer, :, query, words].max(axis=0).argmax())
    exported = screenshot_page(page, page_file)
    focus_query(exported, layer=layer, query=query)
    swatch = page.locator(f'.attnscope-swatch[data-head="{head}"]')
    exported.redraw_after("head", swatch.dblclick)
    exported.show("neuron")
    exported.redraw_after(
        "neuron", lambda: page.select_option('[data-testid="neuron-sort"]', "weight")
    )
    assert f"head {head} ·" in page.locator('[data-testid="neuron-info"]').inner_text()
    assert exported.page.locator(".attnscope-nv-body [data-key]:not([hidden])").count() >= 20
    screenshots.take("page-neuron-view", exported.picture())
