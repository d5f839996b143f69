"""capture(..., images=...) on tiny random Idefics3 and SmolVLM: tiles plus an overview."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
import vlm_models
from vlm_models import TEXT, eager_attention, halves, image

SHAPES = {"square": (40, 40), "wide": (30, 70), "tall": (70, 30)}
SIDE = 2  # 32-px tiles of 8-px patches, pixel-shuffled 2 x 2: 2 x 2 tokens per tile


@pytest.fixture(scope="module")
def idefics3() -> tuple[Any, Any]:
    return vlm_models.idefics3()


def _processed(processor: Any, images: Any) -> Any:
    enc = processor(text=TEXT["idefics3"], images=images, return_tensors="pt")
    enc.pop("token_type_ids")
    return enc


def _tiles_by_hand(
    tokens: list[str], token: str
) -> tuple[dict[tuple[int, int], list[int]], list[int]]:
    """Each tile's image token positions, read from the processor's own <row_r_col_c> tags."""
    tiles: dict[tuple[int, int], list[int]] = {}
    overview: list[int] = []
    current: list[int] | None = None
    for i, text in enumerate(tokens):
        if found := re.fullmatch(r"<row_(\d+)_col_(\d+)>", text):
            current = tiles.setdefault((int(found[1]) - 1, int(found[2]) - 1), [])
        elif text == "<global-img>":
            current = overview
        elif text == token and current is not None:
            current.append(i)
    return tiles, overview


@pytest.mark.parametrize("family", ["idefics3", "smolvlm"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_idefics3_tiles_grid_and_attention(family: str, shape: str) -> None:
    model, processor = getattr(vlm_models, family)()
    picture = image(*SHAPES[shape])
    trace = attnscope.capture(model, TEXT["idefics3"], images=picture, processor=processor)
    enc = _processed(processor, picture)
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    raw = processor.tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    tiles, overview = _tiles_by_hand(raw, processor.image_token)
    rows = 1 + max(r for r, _ in tiles)
    cols = 1 + max(c for _, c in tiles)
    height, width = SHAPES[shape]
    assert (rows > cols) == (height > width)
    assert (rows < cols) == (height < width)
    [region] = trace.images
    assert region.tiles == (rows, cols)
    assert region.grid == (rows * SIDE, cols * SIDE)
    for (r, c), positions in tiles.items():
        assert len(positions) == SIDE * SIDE
        for i, p in enumerate(positions):
            cell = (r * SIDE + i // SIDE) * region.grid[1] + c * SIDE + i % SIDE
            assert region.positions[cell] == p
    assert list(region.extra["overview"]) == overview
    assert region.extra_grids["overview"] == (SIDE, SIDE)
    assert region.pixels.shape == (rows * 32, cols * 32, 3)
    [weights] = attnscope.image_attention(trace, layer=1, head=0)
    expected = trace.attention[1, 0, -1, list(region.positions)].reshape(region.grid)
    np.testing.assert_allclose(weights, expected, atol=1e-7)


def test_idefics3_tiles_assemble_the_picture(idefics3: tuple[Any, Any]) -> None:
    model, processor = idefics3
    trace = attnscope.capture(model, TEXT["idefics3"], images=halves(32, 64), processor=processor)
    [region] = trace.images
    assert region.tiles == (1, 2)  # the left tile is red, the right one blue
    vlm_models.assert_red_left_blue_right(region.pixels)


def test_idefics3_two_images(idefics3: tuple[Any, Any]) -> None:
    model, processor = idefics3
    text = "One <image> two <image> end"
    pictures = [image(40, 40, seed=1), image(30, 70, seed=2)]
    trace = attnscope.capture(model, text, images=pictures, processor=processor)
    enc = processor(text=text, images=pictures, return_tensors="pt")
    enc.pop("token_type_ids")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    assert [r.tiles for r in trace.images] == [(2, 2), (1, 2)]
    ids = enc["input_ids"][0].tolist()
    placed = [i for i, t in enumerate(ids) if t == model.config.image_token_id]
    first = trace.images[0].all_positions()
    assert sorted(first) == placed[: len(first)]
    assert sorted(trace.images[1].all_positions()) == placed[len(first) :]


def test_idefics3_generation_with_an_image(idefics3: tuple[Any, Any]) -> None:
    model, processor = idefics3
    picture = image(30, 70)
    trace = attnscope.capture(
        model, TEXT["idefics3"], images=picture, processor=processor, max_new_tokens=3
    )
    enc = _processed(processor, picture)
    with torch.no_grad():
        ids = model.generate(**enc, max_new_tokens=3, do_sample=False)
    length = enc["input_ids"].shape[1]
    assert trace.generated_ids == ids[0, length:].tolist()
    full = {**enc, "input_ids": ids, "attention_mask": torch.ones_like(ids)}
    assert np.abs(trace.attention - eager_attention(model, full)).max() <= 1e-5
    assert trace.images[0].tiles == (1, 2)
