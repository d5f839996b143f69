"""capture(..., images=...) on tiny random InternVL and Aya Vision: tiles on a matched canvas."""

from __future__ import annotations

import numpy as np
import pytest

import attnscope
import vlm_models
from vlm_models import TEXT, eager_attention, halves, image

SIDE = 2  # 32-px tiles of 8-px patches, pixel-shuffled 2 x 2
# (height, width) -> tiles (rows, cols), by hand from the canvases of 1..4 tiles: the one whose
# width / height is nearest the image's (70/30 = 2.3 -> 2:1; 90/20 = 4.5 -> 4:1); the square
# ties 1 x 1 with 2 x 2 and keeps 1 x 1 (its area is under half of 2 x 2 tiles' 4096 px).
SHAPES = {
    "square": ((40, 40), (1, 1)),
    "wide": ((30, 70), (1, 2)),
    "tall": ((70, 30), (2, 1)),
    "panorama": ((20, 90), (1, 4)),
}


FAMILIES = ["internvl", "aya_vision"]  # Aya Vision tiles as InternVL does (GotOcr2's processor)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_internvl_tiles_grid_and_attention(shape: str, family: str) -> None:
    model, processor = getattr(vlm_models, family)()
    size, (rows, cols) = SHAPES[shape]
    picture = image(*size)
    trace = attnscope.capture(model, TEXT[family], images=picture, processor=processor)
    enc = processor(text=TEXT[family], images=picture, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    tiles = rows * cols
    thumbnail = 1 if tiles > 1 else 0
    assert enc["pixel_values"].shape[0] == tiles + thumbnail
    token = model.config.image_token_id
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert len(placed) == (tiles + thumbnail) * SIDE * SIDE
    [region] = trace.images
    assert region.grid == (rows * SIDE, cols * SIDE)
    assert region.tiles == ((rows, cols) if tiles > 1 else None)
    for t in range(tiles):  # tile t's tokens, in raster order within the tile
        r0, c0 = (t // cols) * SIDE, (t % cols) * SIDE
        for i in range(SIDE * SIDE):
            cell = (r0 + i // SIDE) * region.grid[1] + c0 + i % SIDE
            assert region.positions[cell] == placed[t * SIDE * SIDE + i]
    overview = placed[tiles * SIDE * SIDE :]
    assert list(region.extra.get("overview", ())) == overview
    assert region.pixels.shape == (rows * 32, cols * 32, 3)


@pytest.mark.parametrize("family", FAMILIES)
def test_internvl_tiles_assemble_the_picture(family: str) -> None:
    model, processor = getattr(vlm_models, family)()
    trace = attnscope.capture(model, TEXT[family], images=halves(32, 64), processor=processor)
    [region] = trace.images
    assert region.tiles == (1, 2)
    vlm_models.assert_red_left_blue_right(region.pixels)
