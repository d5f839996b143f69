"""examples/minimal_pairs.ipynb in a real JupyterLab: A / B / A − B switch, synced both ways."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from browser_kit import Screenshots, wait_for_widget
from jupyter_driver import JupyterPage
from jupyter_server_process import JupyterServer
from page_kit import canvas_stats
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "minimal_pairs.ipynb"


def head_view_of(side: str) -> str:
    """The head view once it shows ``side`` (the view host names the side it draws)."""
    return f'.attnscope-viewhost[data-side="{side}"] [data-testid="head-view"]'


@pytest.fixture(scope="module")
def minimal_pairs(jupyter_server: JupyterServer) -> str:
    shutil.copy(NOTEBOOK, jupyter_server.notebook_path("minimal_pairs.ipynb"))
    return "minimal_pairs.ipynb"


def test_minimal_pair_toggles_a_b_and_difference_screenshot(
    lab: JupyterPage, minimal_pairs: str, screenshots: Screenshots
) -> None:
    lab.open(minimal_pairs)
    lab.run_all()
    index = int(
        lab.page.evaluate(
            """() => window.jupyterapp.shell.currentWidget.content.widgets
                .findIndex((c) => c.model.sharedModel.getSource().trim().endsWith("\\nw"))"""
        )
    )
    output = lab.cell_output(index)
    # Python -> browser: the notebook ended on input A, its top head, from "she | he".
    # Views draw once they are on screen (never at a guessed width), as a reader scrolls.
    output.locator(head_view_of("a")).first.scroll_into_view_if_needed(timeout=60_000)
    wait_for_widget(output, root=head_view_of("a"))
    toggle = output.locator('[data-testid="compare-toggle"]')
    expect(toggle.locator('[aria-pressed="true"]')).to_have_attribute("data-side", "a")
    expect(output.locator('[data-testid="compare-summary"] mark').first).to_have_text("she")

    # All heads, every query, on A - B: the switch follows the trait.
    lab.set_theme("JupyterLab Light")
    lab.run_code("w.heads = None; w.query = None; w.compare_side = 'diff'")
    wait_for_widget(output, root=head_view_of("diff"))
    expect(output.locator('[data-testid="diff-legend"]')).to_be_visible()

    pictures = {}
    for side in ("a", "b", "diff"):
        output.locator(f'[data-testid="compare-{side}"]').click()
        wait_for_widget(output, root=head_view_of(side))
        expect(toggle.locator('[aria-pressed="true"]')).to_have_attribute("data-side", side)
        stats = canvas_stats(output.locator('[data-testid="head-canvas"]'))
        assert stats.painted > 0, side
        pictures[side] = stats.hash
        lab.page.mouse.move(0, 0)
        screenshots.take(f"jupyterlab-compare-{side}", output)
        # Browser -> Python: the click reached the trait.
        assert lab.output_text(lab.run_code("print(w.compare_side)")).strip() == side
    # A, B and A - B are three different drawings.
    assert len(set(pictures.values())) == 3, pictures

    # The model view of A - B, cells ranked by divergence, each cell's divergence on hover.
    output.locator('[data-testid="tab-model"]').click()
    model_view = '.attnscope-viewhost[data-side="diff"] [data-testid="model-view"]'
    wait_for_widget(output, root=model_view)
    output.locator('[data-testid="grid-order"]').select_option("divergence")
    canvas = output.locator('[data-testid="model-canvas"]')
    canvas.hover(position={"x": 40, "y": 22})  # the first cell: the most changed head
    expect(output.locator('[data-testid="model-preview"]')).to_contain_text("rank 1 of 270")
    lab.set_theme("JupyterLab Dark")
    expect(output.locator('[data-testid="attnscope-root"]')).to_have_attribute("data-theme", "dark")
    screenshots.take("jupyterlab-compare-model-dark", output)
    lab.set_theme("JupyterLab Light")
