"""capture(..., images=...) on tiny random Gemma 3 and PaliGemma: images attending both ways."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
import vlm_models
from vlm_models import TEXT, eager_attention, image

SHAPES = {"square": (40, 40), "wide": (30, 70), "tall": (70, 30)}


@pytest.fixture(scope="module")
def gemma3() -> tuple[Any, Any]:
    return vlm_models.gemma3()


@pytest.mark.parametrize("shape", list(SHAPES))
def test_gemma3_attention_and_pooled_grid(gemma3: tuple[Any, Any], shape: str) -> None:
    model, processor = gemma3
    picture = image(*SHAPES[shape])
    trace = attnscope.capture(model, TEXT["gemma3"], images=picture, processor=processor)
    enc = processor(text=TEXT["gemma3"], images=picture, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    # The grid by hand: mm_tokens_per_image = 4 pooled tokens, a square of side 2.
    side = int(model.config.mm_tokens_per_image**0.5)
    [region] = trace.images
    assert region.grid == (side, side)
    token = model.config.image_token_id
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert list(region.positions) == placed
    # image tokens see each other both ways (token_type_ids), so the first one attends forward
    first, last = placed[0], placed[-1]
    assert trace.attention[0, 0, first, last] > 0


def test_gemma3_generation_with_an_image(gemma3: tuple[Any, Any]) -> None:
    model, processor = gemma3
    picture = image(40, 40)
    trace = attnscope.capture(
        model, TEXT["gemma3"], images=picture, processor=processor, max_new_tokens=3
    )
    enc = processor(text=TEXT["gemma3"], images=picture, return_tensors="pt")
    with torch.no_grad():
        ids = model.generate(**enc, max_new_tokens=3, do_sample=False)
    length = enc["input_ids"].shape[1]
    assert trace.generated_ids == ids[0, length:].tolist()
    types = enc["token_type_ids"]
    full = {
        **enc,
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "token_type_ids": torch.cat([types, types.new_zeros(1, 3)], dim=1),
    }
    assert np.abs(trace.attention - eager_attention(model, full)).max() <= 1e-5
    [weights] = attnscope.image_attention(trace, layer=1, head="mean", query=-1)
    assert weights.shape == (2, 2)


def test_gemma3_generated_rows_are_what_each_step_computed(gemma3: tuple[Any, Any]) -> None:
    model, processor = gemma3
    picture = image(40, 40)
    steps = 4
    trace = attnscope.capture(
        model, TEXT["gemma3"], images=picture, processor=processor, max_new_tokens=steps
    )
    enc = processor(text=TEXT["gemma3"], images=picture, return_tensors="pt")
    ids, rows = vlm_models.stepwise_rows(model, enc, steps)
    assert trace.generated_ids == ids
    n = len(trace.tokens)
    assert np.abs(trace.attention[:, :, n - steps : n - 1] - rows).max() <= 1e-5


def test_paligemma_grid_prefix_and_generation() -> None:
    model, processor = vlm_models.paligemma()
    picture = image(30, 70)
    enc = processor(text=TEXT["paligemma"], images=picture, return_tensors="pt")
    enc.pop("labels")
    trace = attnscope.capture(model, TEXT["paligemma"], images=picture, processor=processor)
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    [region] = trace.images
    assert region.grid == (4, 4)  # SigLIP: 32 / 8 patches a side, as many tokens
    assert list(region.positions) == list(range(16))  # the image comes first
    assert trace.attention[0, 0, 0, -1] > 0  # the prefix attends both ways
    # generated tokens are the causal suffix (token type 1), as in PaliGemma's own generate
    steps = 4
    generated = attnscope.capture(
        model, TEXT["paligemma"], images=picture, processor=processor, max_new_tokens=steps
    )
    ids, rows = vlm_models.stepwise_rows(model, enc, steps)
    assert generated.generated_ids == ids
    n = len(generated.tokens)
    assert np.abs(generated.attention[:, :, n - steps : n - 1] - rows).max() <= 1e-5
