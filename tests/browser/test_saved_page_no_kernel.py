"""A page from a saved notebook has no kernel: it says "run the cell" at once (issue 40, item 4).

nbconvert's HTML renders each widget from the notebook's saved widget state
through ``@jupyter-widgets/html-manager`` and anywidget (served here from
``node_modules``): no comm, no kernel. Three widgets' states are written the
way nbclient stores them, without running a kernel: a head view with its
first screen saved, one whose ``_saved`` is ``{}`` (what attnscope wrote when
the first chunk passed the budget: the neuron view at 8192 tokens), and a
neuron view whose q/k did not fit, so its state holds the model view's first
screen. Each must say "run the cell to explore further" within a few seconds
(not after the 30 s request timeout), say in its note what the saved state
holds, and never blame a "busy or lost" kernel.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
import torch
from browser_kit import PageWatch, wait_for_widget
from test_saved_notebook import NBCONVERT_CDN
from test_saved_widget_state import LOADER_LOCAL_TRY, STATE_MIME, serve_cdn_from_node_modules

from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention, show_neuron_view
from attnscope.display.snapshot import saved_chunks

pytestmark = pytest.mark.browser

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
RUN_THE_CELL = "run the cell to explore further"
AT_ONCE_MS = 5_000  # the request timeout it must not wait for is 30 s


def widgets() -> list[AttentionWidget]:
    rng = np.random.default_rng(0)
    weights = rng.random((3, 2, 6, 6)).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    shown = AttentionWidget(AttentionTrace(list("abcdef"), weights))
    shown._repr_mimebundle_()  # displayed: its first screen saved
    empty = AttentionWidget(AttentionTrace(list("abcdef"), weights))
    empty._repr_mimebundle_()
    empty._saved = {}  # as attnscope wrote it when the first chunk passed the budget
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2)
    neuron = show_neuron_view(mha, torch.randn(1, 6, 16), tokens=list("abcdef"), display=False)
    neuron._repr_mimebundle_()
    # No room for its q/k: the model view's first screen (display/snapshot.py), thumbnails here.
    neuron._saved = saved_chunks(neuron, max_bytes=300)
    assert list(neuron._saved) == ["thumbs:self"]
    return [shown, empty, neuron]


def write_saved_notebook(path: Path) -> Any:
    """Write :func:`widgets` as a notebook with their saved widget state, as nbclient stores it."""
    from ipywidgets.embed import embed_data

    shown = widgets()
    data = embed_data(views=shown, drop_defaults=False)  # as nbclient stores it
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook.metadata["widgets"] = {STATE_MIME: data["manager_state"]}
    for widget, spec in zip(shown, data["view_specs"], strict=True):
        cell = nbformat.v4.new_code_cell("widget")
        cell.outputs = [
            nbformat.v4.new_output(
                "display_data", data={WIDGET_MIME: spec, "text/plain": repr(widget)}
            )
        ]
        notebook.cells.append(cell)
    nbformat.write(notebook, str(path))
    return notebook


@pytest.fixture(scope="module")
def saved_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nbconvert import HTMLExporter

    folder = tmp_path_factory.mktemp("no_kernel")
    notebook = write_saved_notebook(folder / "saved.ipynb")
    body, _ = HTMLExporter().from_notebook_node(notebook)
    page = folder / "saved.html"
    page.write_text(body, encoding="utf-8")
    return page


def text_of(root: Any) -> str:
    return str(root.evaluate("el => el.innerText"))


def test_a_page_with_no_kernel_says_run_the_cell_at_once(
    saved_page: Path, page: Any, page_watch: PageWatch
) -> None:
    page_watch.allowed.extend([*NBCONVERT_CDN, LOADER_LOCAL_TRY])
    serve_cdn_from_node_modules(page)
    page.goto(saved_page.as_uri())
    roots = page.locator('.jupyter-widgets [data-testid="attnscope-root"]')
    roots.nth(2).wait_for()
    assert roots.count() == 3
    shown, empty, neuron = (roots.nth(i) for i in range(3))

    # The head view drew its saved first screen; its note says so and what it holds.
    wait_for_widget(page, root='.jupyter-widgets [data-testid="head-view"]')
    note = shown.locator(".attnscope-notes").inner_text()
    assert "saved widget state" in note
    assert RUN_THE_CELL in note
    assert "It holds the head view's lines of layer 0" in note
    # Another layer is not saved: the answer comes at once, not after the 30 s timeout.
    started = time.monotonic()
    shown.locator('[data-testid="layer-select"]').select_option("2")
    page.wait_for_function(
        f"el => el.innerText.includes({RUN_THE_CELL!r})",
        arg=shown.element_handle(),
        timeout=AT_ONCE_MS,
    )
    assert time.monotonic() - started < AT_ONCE_MS / 1000

    # Nothing saved at all: the view and the note say so at once.
    page.wait_for_function(
        f"el => el.innerText.includes({RUN_THE_CELL!r})",
        arg=empty.element_handle(),
        timeout=AT_ONCE_MS,
    )
    assert "holds none of this widget's data" in empty.locator(".attnscope-notes").inner_text()

    # A neuron view whose q/k did not fit: the message, and a note naming what the state holds.
    page.wait_for_function(
        f"el => el.innerText.includes({RUN_THE_CELL!r})",
        arg=neuron.element_handle(),
        timeout=AT_ONCE_MS,
    )
    assert "It holds the model view's thumbnails" in neuron.locator(".attnscope-notes").inner_text()
    neuron.locator('[data-testid="tab-model"]').click()
    wait_for_widget(page, root='.jupyter-widgets [data-testid="model-view"]')

    for root in (shown, empty, neuron):
        text = text_of(root)
        assert "busy or lost" not in text
        assert "no answer from the kernel" not in text
