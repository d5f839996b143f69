"""capture(..., images=...) on tiny random Qwen2/2.5/3-VL and GLM-4V: dynamic resolution, merges."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
import vlm_models
from vlm_models import TEXT, eager_attention, halves, image

# (height, width) -> the processor resizes to multiples of 16 within 256..4096 pixels
SHAPES = {"square": (48, 48), "wide": (32, 96), "tall": (96, 32)}


@pytest.fixture(scope="module")
def qwen() -> tuple[Any, Any]:
    return vlm_models.qwen2_vl()


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "glm4v"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_qwen_vl_attention_and_merged_grid(family: str, shape: str) -> None:
    model, processor = getattr(vlm_models, family)()
    picture = image(*SHAPES[shape])
    text = TEXT.get(family, TEXT["qwen2_vl"])  # GLM-4V reads images as Qwen2-VL does
    trace = attnscope.capture(model, text, images=picture, processor=processor)
    enc = processor(text=text, images=picture, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    # The grid by hand: image_grid_thw counts 8-pixel patches; each token merges 2 x 2 of them.
    t, h, w = enc["image_grid_thw"][0].tolist()
    merge = processor.image_processor.merge_size
    [region] = trace.images
    assert t == 1
    assert region.grid == (h // merge, w // merge)
    height, width = SHAPES[shape]
    assert (region.grid[0] > region.grid[1]) == (height > width)
    assert (region.grid[0] < region.grid[1]) == (height < width)
    token = model.config.image_token_id
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert list(region.positions) == placed
    assert len(placed) == h * w // merge**2
    assert region.pixels.shape == (h * 8, w * 8, 3)
    rows, cols = region.grid  # GLM-4V resizes 32 x 96 to 16 x 64: one row of merges
    assert trace.tokens[placed[-1]] == f"img0 r{rows - 1}c{cols - 1}"
    assert trace.tokens[placed[1]] == f"img0 r{1 // cols}c{1 % cols}"


def test_qwen2_vl_pixels_are_the_right_way_round(qwen: tuple[Any, Any]) -> None:
    model, processor = qwen
    trace = attnscope.capture(model, TEXT["qwen2_vl"], images=halves(32, 96), processor=processor)
    pixels = trace.images[0].pixels.astype(int)
    width = pixels.shape[1]
    assert (pixels[:, : width // 2 - 2, 0] > 200).all()
    assert (pixels[:, : width // 2 - 2, 2] < 60).all()
    assert (pixels[:, width // 2 + 2 :, 2] > 200).all()
    assert (pixels[:, width // 2 + 2 :, 0] < 60).all()


def test_glm4v_pixels_are_the_right_way_round() -> None:
    model, processor = vlm_models.glm4v()
    trace = attnscope.capture(model, TEXT["glm4v"], images=halves(48, 96), processor=processor)
    assert trace.images[0].grid == (2, 4)
    vlm_models.assert_red_left_blue_right(trace.images[0].pixels)


def test_qwen2_vl_image_attention(qwen: tuple[Any, Any]) -> None:
    model, processor = qwen
    trace = attnscope.capture(model, TEXT["qwen2_vl"], images=image(32, 96), processor=processor)
    region = trace.images[0]
    [got] = attnscope.image_attention(trace, layer=1, head=[1, 2], query=[-1, -2])
    att = trace.attention[1][[1, 2]][:, [-1, -2]][:, :, list(region.positions)]
    np.testing.assert_allclose(got, att.sum(1).mean(0).reshape(region.grid), atol=1e-6)


def test_qwen2_vl_generation_with_an_image(qwen: tuple[Any, Any]) -> None:
    model, processor = qwen
    picture = image(48, 48)
    trace = attnscope.capture(
        model, TEXT["qwen2_vl"], images=picture, processor=processor, max_new_tokens=3
    )
    enc = processor(text=TEXT["qwen2_vl"], images=picture, return_tensors="pt")
    enc.pop("token_type_ids")
    with torch.no_grad():
        ids = model.generate(**enc, max_new_tokens=3, do_sample=False)
    length = enc["input_ids"].shape[1]
    assert trace.generated_ids == ids[0, length:].tolist()
    types = enc["mm_token_type_ids"]
    full = {
        **enc,
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "mm_token_type_ids": torch.cat([types, types.new_zeros(1, 3)], dim=1),
    }
    assert np.abs(trace.attention - eager_attention(model, full)).max() <= 1e-5
    assert trace.prompt_length == length


def test_qwen2_vl_generated_rows_are_what_each_step_computed(qwen: tuple[Any, Any]) -> None:
    model, processor = qwen
    picture = image(32, 96)
    steps = 4
    trace = attnscope.capture(
        model, TEXT["qwen2_vl"], images=picture, processor=processor, max_new_tokens=steps
    )
    enc = processor(text=TEXT["qwen2_vl"], images=picture, return_tensors="pt")
    enc.pop("token_type_ids")
    ids, rows = vlm_models.stepwise_rows(model, enc, steps)
    assert trace.generated_ids == ids
    n = len(trace.tokens)
    assert np.abs(trace.attention[:, :, n - steps : n - 1] - rows).max() <= 1e-5
