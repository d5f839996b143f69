"""capture(..., images=...) on a tiny random LLaVA-OneVision: anyres tiles, unpadding, pooling."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
import vlm_models
from attnscope.sources.hf import image_anyres
from vlm_models import TEXT, check_overview_then_rows, eager_attention, halves, image

# (height, width) -> (grid, tiles, kept), by hand from the pinpoints (32/64 px tiles of 4 x 4
# SigLIP patches): the best resolution picks the tiles; the grid is cut back to the image's
# aspect (wide: 30 * 8 / 70 = 3.4 -> 3, padding (4 - 3) // 2 = 0, all 4 rows kept; letterbox:
# 20 * 8 / 64 = 2.5 -> 2 rows, one cut at top and bottom). "kept" is that unpadded grid.
SHAPES = {
    "square": ((40, 40), (8, 8), (2, 2)),
    "wide": ((30, 70), (4, 8), (1, 2)),
    "tall": ((70, 30), (8, 4), (2, 1)),
    "letterbox": ((20, 64), (2, 8), (1, 2)),
}
# anyres_max_1: more than 1.1 x one tile's 16 tokens shrinks by ratio = sqrt(h * w / 16):
# 8 x 8 -> ratio 2 -> 4 x 4; 4 x 8 -> ratio 1.41 -> 4 // 1.41 = 2, 8 // 1.41 = 5.
POOLED = {"square": (4, 4), "wide": (2, 5), "tall": (5, 2), "letterbox": (2, 8)}


def _image_tokens(model: Any, enc: Any) -> list[int]:
    token = model.config.image_token_index
    return [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]


@pytest.mark.parametrize("aspect", ["anyres_max_9", "anyres_max_1"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_onevision_grid_newlines_and_attention(shape: str, aspect: str) -> None:
    model, processor = vlm_models.llava_onevision(aspect)
    size, kept, tiles = SHAPES[shape]
    grid = kept if aspect == "anyres_max_9" else POOLED[shape]
    picture = image(*size)
    trace = attnscope.capture(model, TEXT["llava_onevision"], images=picture, processor=processor)
    enc = processor(text=TEXT["llava_onevision"], images=picture, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    assert enc["image_sizes"][0].tolist() == list(size)
    [region] = trace.images
    assert region.grid == grid
    assert region.tiles == tiles
    placed = _image_tokens(model, enc)
    check_overview_then_rows(region, placed)
    assert region.pixels.shape == (kept[0] * 8, kept[1] * 8, 3)  # the unpadded tiles' pixels
    [weights] = attnscope.image_attention(trace, layer=1, head=2)
    np.testing.assert_allclose(
        weights, trace.attention[1, 2, -1, list(region.positions)].reshape(grid), atol=1e-7
    )


def test_onevision_two_images_each_tiled() -> None:
    model, processor = vlm_models.llava_onevision()
    text = "Look <image> and <image> here"
    pictures = [image(30, 70), image(70, 30, seed=1)]
    trace = attnscope.capture(model, text, images=pictures, processor=processor)
    enc = processor(text=text, images=pictures, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    assert [r.grid for r in trace.images] == [(4, 8), (8, 4)]
    placed = _image_tokens(model, enc)
    first = 16 + 4 * 9
    assert trace.images[0].extra["overview"] == tuple(placed[:16])
    assert trace.images[1].extra["overview"] == tuple(placed[first : first + 16])
    assert trace.images[1].positions[0] == placed[first + 16]


def test_onevision_picture_from_tiles() -> None:
    model, processor = vlm_models.llava_onevision()
    text = TEXT["llava_onevision"]
    trace = attnscope.capture(model, text, images=halves(32, 64), processor=processor)
    [region] = trace.images
    assert region.tiles == (1, 2)
    vlm_models.assert_red_left_blue_right(region.pixels)


def test_onevision_settings_that_disagree_are_a_reason() -> None:
    model = vlm_models.llava_onevision()[0]
    other = vlm_models.llava_onevision("anyres_max_1")[1]  # the model would refuse its count
    enc = other(text=TEXT["llava_onevision"], images=image(40, 40), return_tensors="pt")
    why = image_anyres.llava_onevision(model, other, enc, [image(40, 40)])
    assert why == "the processor's vision_aspect_ratio differs from the config's"
