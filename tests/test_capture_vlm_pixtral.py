"""capture(..., images=...) on tiny random Mistral 3 and LLaVA-over-Pixtral models.

Pixtral reads each image at its own size: the grid is ``image_sizes`` over the patch size
times the merge size, a row of ``[IMG]`` tokens per grid row, each row closed by
``[IMG_BREAK]`` and the last by ``[IMG_END]`` (plain tokens, not part of the grid).
"""

from __future__ import annotations

import numpy as np
import pytest

import attnscope
import vlm_models
from attnscope.sources.hf import image_pixtral
from vlm_models import TEXT, eager_attention, halves, image

# (height, width) -> image_sizes (the processor's resize to at most 64 px a side, rounded up to
# whole cells), by hand: 40 x 40 fits and rounds up to 48 (16-px cells) or stays 40 (8-px);
# 30 x 70 scales by 64 / 70 to 27.4 x 64 and rounds up to 32 x 64.
SIZES = {
    "mistral3": {  # 8-px patches merged 2 x 2: 16-px cells
        "square": ((40, 40), (48, 48)),
        "wide": ((30, 70), (32, 64)),
        "tall": ((70, 30), (64, 32)),
    },
    "llava_pixtral": {  # 8-px patches, no merge
        "square": ((40, 40), (40, 40)),
        "wide": ((30, 70), (32, 64)),
        "tall": ((70, 30), (64, 32)),
    },
}
CELL = {"mistral3": 16, "llava_pixtral": 8}


@pytest.mark.parametrize("shape", ["square", "wide", "tall"])
@pytest.mark.parametrize("family", ["mistral3", "llava_pixtral"])
def test_pixtral_grid_rows_and_attention(family: str, shape: str) -> None:
    model, processor = getattr(vlm_models, family)()
    size, resized = SIZES[family][shape]
    picture = image(*size)
    trace = attnscope.capture(model, TEXT["mistral3"], images=picture, processor=processor)
    enc = processor(text=TEXT["mistral3"], images=picture, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    assert enc["image_sizes"][0].tolist() == list(resized)
    grid = (resized[0] // CELL[family], resized[1] // CELL[family])
    [region] = trace.images
    assert region.grid == grid
    assert region.tiles is None
    ids = enc["input_ids"][0].tolist()
    placed = [i for i, t in enumerate(ids) if t == model.config.image_token_index]
    assert list(region.positions) == placed
    rows, cols = grid
    marks = processor.tokenizer.convert_tokens_to_ids(["[IMG_BREAK]", "[IMG_END]"])
    ends = [ids[region.positions[r * cols + cols - 1] + 1] for r in range(rows)]
    assert ends == [marks[0]] * (rows - 1) + [marks[1]]  # each grid row is a row of tokens
    assert region.pixels.shape == (*resized, 3)
    [weights] = attnscope.image_attention(trace, layer=1, head=3)
    np.testing.assert_allclose(weights, trace.attention[1, 3, -1, placed].reshape(grid), atol=1e-7)


def test_mistral3_two_images_and_the_picture() -> None:
    model, processor = vlm_models.mistral3()
    text = "Look [IMG] and [IMG] here"
    pictures = [halves(32, 64), image(70, 30)]
    trace = attnscope.capture(model, text, images=pictures, processor=processor)
    enc = processor(text=text, images=pictures, return_tensors="pt")
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    assert [r.grid for r in trace.images] == [(2, 4), (4, 2)]
    ids = enc["input_ids"][0].tolist()
    placed = [i for i, t in enumerate(ids) if t == model.config.image_token_index]
    assert trace.images[0].positions + trace.images[1].positions == tuple(placed)
    vlm_models.assert_red_left_blue_right(trace.images[0].pixels)


def test_mistral3_generation_with_an_image(monkeypatch: pytest.MonkeyPatch) -> None:
    model, processor = vlm_models.mistral3()
    # this random model's first word is always [SEP], its end of sequence: generate past it
    monkeypatch.setattr(model.generation_config, "eos_token_id", None)
    picture = image(30, 70)
    trace = attnscope.capture(
        model, TEXT["mistral3"], images=picture, processor=processor, max_new_tokens=3
    )
    [region] = trace.images
    assert region.grid == (2, 4)
    steps = len(trace.generated_ids)
    assert steps == 3
    enc = processor(text=TEXT["mistral3"], images=picture, return_tensors="pt")
    enc.pop("token_type_ids")  # Mistral 3's generate refuses them (MiniLM's tokenizer adds them)
    ids, rows = vlm_models.stepwise_rows(model, enc, steps)
    assert trace.generated_ids == ids
    n = trace.attention.shape[-1]
    assert np.abs(trace.attention[:, :, n - steps : n - 1] - rows).max() <= 1e-5


def test_a_merge_the_model_does_not_make_is_a_reason() -> None:
    model = vlm_models.mistral3()[0]
    processor = vlm_models.llava_pixtral()[1]  # no merge (the model would refuse the count)
    enc = processor(text=TEXT["mistral3"], images=image(32, 32), return_tensors="pt")
    why = image_pixtral.pixtral(model, processor, enc, [image(32, 32)])
    assert (
        why
        == "the processor reads 8-px patches merged 1 x 1 but the model 8-px patches merged 2 x 2"
    )
