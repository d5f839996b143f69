"""capture(..., images=...) on a tiny random LLaVA-NeXT: anyres tiles, unpadding, newline tokens."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
import vlm_models
from vlm_models import TEXT, check_overview_then_rows, eager_attention, halves, image

# (height, width) -> (grid, tiles), worked out by hand from the pinpoints (32/64 px, 4 patches
# a tile side): the best resolution picks the tiles; the grid is cut back to the image's aspect
# (letterbox: 20 * 8 / 64 = 2.5 -> 2 rows of 4, one padding row cut at top and bottom; wide:
# 30 * 8 / 70 = 3.4 -> 3, padding (4 - 3) // 2 = 0, all 4 rows kept).
SHAPES = {
    "square": ((40, 40), (8, 8), (2, 2)),
    "wide": ((30, 70), (4, 8), (1, 2)),
    "tall": ((70, 30), (8, 4), (2, 1)),
    "letterbox": ((20, 64), (2, 8), (1, 2)),
}


@pytest.fixture(scope="module")
def llava_next() -> tuple[Any, Any]:
    return vlm_models.llava_next()


@pytest.mark.parametrize("family", ["llava_next", "llava_next_video"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_llava_next_tiles_unpadded_grid(family: str, shape: str) -> None:
    model, processor = getattr(vlm_models, family)()
    size, grid, tiles = SHAPES[shape]
    picture = image(*size)
    trace = attnscope.capture(model, TEXT["llava_next"], images=picture, processor=processor)
    enc = processor(text=TEXT["llava_next"], images=picture, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    [region] = trace.images
    assert region.grid == grid
    assert region.tiles == tiles
    token = model.config.image_token_index
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    rows, cols = grid
    check_overview_then_rows(region, placed)
    assert region.pixels.shape == (rows * 8, cols * 8, 3)
    [weights] = attnscope.image_attention(trace, layer=0, head=1)
    np.testing.assert_allclose(
        weights, trace.attention[0, 1, -1, list(region.positions)].reshape(grid), atol=1e-7
    )


def test_llava_next_picture_from_tiles(llava_next: tuple[Any, Any]) -> None:
    model, processor = llava_next
    trace = attnscope.capture(model, TEXT["llava_next"], images=halves(32, 64), processor=processor)
    [region] = trace.images
    assert region.tiles == (1, 2)
    vlm_models.assert_red_left_blue_right(region.pixels)
