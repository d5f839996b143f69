"""A ranked model view's badges never cover a thumbnail (issue 39, point 1), offline chromium.

MiniLM's 20-token sentence, ranked by entropy: every thumbnail of the ranked
grid must hold exactly the pixels of one thumbnail of the same layer in the
unranked grid (the badges sit in a band under each row, outside the cells),
and the grid states what its bars run over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_kit import Screenshots
from page_kit import ExportedPage
from playwright.sync_api import expect

import attnscope

TEXT = "The quick brown fox jumps over the lazy dog while the farmer sleeps under an old oak."

# A hash of each cell's pixels, at the grid's geometry (model_grid.ts: LABEL_W 34, LABEL_H 16,
# GAP 2; data-cell-px and data-row-px say the cell and the row step), in canvas pixels.
_CELL_HASHES = """(canvas, [layers, heads]) => {
    const view = canvas.closest('[data-testid="model-view"]');
    const cell = Number(view.dataset.cellPx), row = Number(view.dataset.rowPx);
    const dpr = canvas.width / canvas.getBoundingClientRect().width;
    const ctx = canvas.getContext("2d");
    const out = [];
    for (let l = 0; l < layers; l++) {
        const hashes = [];
        for (let c = 0; c < heads; c++) {
            const x = Math.round((34 + c * (cell + 2)) * dpr), y = Math.round((16 + l * row) * dpr);
            const px = ctx.getImageData(x, y, Math.floor(cell * dpr), Math.floor(cell * dpr)).data;
            let hash = 2166136261;
            for (let i = 0; i < px.length; i++) hash = Math.imul(hash ^ px[i], 16777619) >>> 0;
            hashes.push(hash);
        }
        out.push(hashes);
    }
    return out;
}"""


def _grid(page: Any, path: Path) -> tuple[list[list[int]], Any]:
    exported = ExportedPage(page, path.as_uri()).open()
    exported.show("model")
    canvas = exported.canvas("model")
    return canvas.evaluate(_CELL_HASHES, [6, 12]), exported


def test_badges_sit_under_the_cells_and_state_their_scale(
    page: Any, minilm: tuple[Any, Any], tmp_path: Path, screenshots: Screenshots
) -> None:
    model, tokenizer = minilm
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    plain = attnscope.AttentionWidget(trace).save_html(tmp_path / "plain")
    ranked = attnscope.AttentionWidget(trace, rank_by="entropy")
    ranked_path = ranked.save_html(tmp_path / "ranked")
    unranked_cells, _ = _grid(page, plain)
    ranked_cells, exported = _grid(page, ranked_path)
    expect(exported.view("model")).to_have_attribute("data-ranked-by", "entropy")
    screenshots.take("model-view-ranked", exported.picture())
    moved = 0
    for layer, (ranked_row, plain_row) in enumerate(zip(ranked_cells, unranked_cells, strict=True)):
        # Each ranked cell is one of the layer's thumbnails, untouched: a permutation of them.
        assert sorted(ranked_row) == sorted(plain_row), f"layer {layer}: a badge covers a cell"
        moved += ranked_row != plain_row
    assert moved, "the ranking reordered no layer: the test saw no badges at work"
    view = exported.view("model")
    assert int(view.get_attribute("data-row-px")) > int(view.get_attribute("data-cell-px")) + 2
