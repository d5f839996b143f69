"""capture(model, text, images=...) on a tiny random LLaVA: exact attention, image grids, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
import vlm_models
from attnscope.errors import AttnscopeError, TraceFileError
from attnscope.sources.hf import image_readers
from vlm_models import TEXT, eager_attention, halves, image

SHAPES = {"square": (40, 40), "wide": (30, 70), "tall": (70, 30)}


@pytest.fixture(scope="module")
def llava() -> tuple[Any, Any]:
    return vlm_models.llava()


def _processed(processor: Any, text: str, images: Any) -> Any:
    return processor(text=text, images=images, return_tensors="pt")


@pytest.mark.parametrize("shape", list(SHAPES))
def test_llava_attention_and_grid(llava: tuple[Any, Any], shape: str) -> None:
    model, processor = llava
    picture = image(*SHAPES[shape])
    trace = attnscope.capture(model, TEXT["llava"], images=picture, processor=processor)
    enc = _processed(processor, TEXT["llava"], picture)
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    # The grid by hand: CLIP crops to 32 x 32 pixels, 8-pixel patches, "default" drops [CLS].
    height, width = enc["pixel_values"].shape[2:]
    assert (height, width) == (32, 32)
    [region] = trace.images
    assert region.grid == (height // processor.patch_size, width // processor.patch_size)
    token = model.config.image_token_index
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert list(region.positions) == placed
    assert len(placed) == 16
    assert region.tiles is None
    assert region.extra == {}
    assert trace.tokens[placed[5]] == "img0 r1c1"  # cell 5 of a 4-wide grid
    assert region.pixels.shape == (32, 32, 3)
    assert region.pixels.dtype == np.uint8
    assert trace.notes == []


def test_llava_full_strategy_keeps_the_class_token_apart() -> None:
    model, processor = vlm_models.llava("full")
    picture = image(40, 40)
    trace = attnscope.capture(model, TEXT["llava"], images=picture, processor=processor)
    enc = _processed(processor, TEXT["llava"], picture)
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    token = model.config.image_token_index
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert len(placed) == 17  # CLIP's [CLS] first, then the 4 x 4 patches
    [region] = trace.images
    assert region.extra == {"class": (placed[0],)}
    assert list(region.positions) == placed[1:]
    assert region.grid == (4, 4)
    assert trace.tokens[placed[0]] == "img0 class"


def test_llava_pixels_are_what_the_model_saw(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    trace = attnscope.capture(model, TEXT["llava"], images=halves(32, 48), processor=processor)
    pixels = trace.images[0].pixels.astype(int)
    # the centre crop of a red | blue image keeps red on the left, blue on the right
    assert (pixels[:, :12, 0] > 200).all()
    assert (pixels[:, :12, 2] < 50).all()
    assert (pixels[:, 20:, 2] > 200).all()
    assert (pixels[:, 20:, 0] < 50).all()


def test_image_attention_is_the_rows_on_the_grid(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    trace = attnscope.capture(model, TEXT["llava"], images=image(40, 40), processor=processor)
    att = trace.attention
    positions = list(trace.images[0].positions)
    last = len(trace.tokens) - 1
    [one] = attnscope.image_attention(trace, layer=1, head=2, query=last)
    assert one.shape == (4, 4)
    assert one.dtype == np.float32
    np.testing.assert_allclose(one, att[1, 2, last, positions].reshape(4, 4), atol=1e-7)
    [mean] = attnscope.image_attention(trace, layer=0, head="mean", query=[last, last - 1])
    expected = att[0][:, [last, last - 1]][:, :, positions].sum(1).mean(0).reshape(4, 4)
    np.testing.assert_allclose(mean, expected, atol=1e-6)
    [some] = attnscope.image_attention(trace, layer=-1, head=[0, 3])
    np.testing.assert_allclose(
        some, att[1][[0, 3], -1][:, positions].mean(0).reshape(4, 4), atol=1e-7
    )
    with pytest.raises(AttnscopeError, match="query=99 is out of range"):
        attnscope.image_attention(trace, layer=0, query=99)


def test_two_images_in_order(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    text = "First <image> then <image> end"
    pictures = [image(40, 40, seed=1), image(40, 60, seed=2)]
    trace = attnscope.capture(model, text, images=pictures, processor=processor)
    enc = _processed(processor, text, pictures)
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    token = model.config.image_token_index
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert [list(r.positions) for r in trace.images] == [placed[:16], placed[16:]]
    assert len(attnscope.image_attention(trace, layer=0)) == 2


def test_generation_with_an_image(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    picture = image(40, 40)
    trace = attnscope.capture(
        model, TEXT["llava"], images=picture, processor=processor, max_new_tokens=3
    )
    enc = _processed(processor, TEXT["llava"], picture)
    enc.pop("token_type_ids")  # LLaVA's generate refuses them (MiniLM's tokenizer adds them)
    with torch.no_grad():
        ids = model.generate(**enc, max_new_tokens=3, do_sample=False)
    assert trace.generated_ids == ids[0, enc["input_ids"].shape[1] :].tolist()
    full = {**enc, "input_ids": ids, "attention_mask": torch.ones_like(ids)}
    assert np.abs(trace.attention - eager_attention(model, full)).max() <= 1e-5
    assert trace.images[0].positions[0] == 2  # [CLS] Look <image>...
    assert len(attnscope.image_attention(trace, layer=1, query=-1)[0].ravel()) == 16


def test_images_survive_save_and_load(llava: tuple[Any, Any], tmp_path: Path) -> None:
    model, processor = llava
    trace = attnscope.capture(model, TEXT["llava"], images=image(40, 40), processor=processor)
    loaded = attnscope.AttentionTrace.load(trace.save(tmp_path / "t"))
    [before], [after] = trace.images, loaded.images
    assert after.positions == before.positions
    assert after.grid == before.grid
    np.testing.assert_array_equal(after.pixels, before.pixels)
    np.testing.assert_allclose(
        attnscope.image_attention(loaded, layer=1)[0], attnscope.image_attention(trace, layer=1)[0]
    )


def test_a_family_without_a_layout_reader_is_captured_with_plain_image_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, processor = vlm_models.llava_onevision()
    monkeypatch.delitem(image_readers.READERS, "llava_onevision")  # as a family with none
    text = "Look <image> at it"
    picture = image(30, 70)
    trace = attnscope.capture(model, text, images=picture, processor=processor)
    enc = _processed(processor, text, picture)
    assert np.abs(trace.attention - eager_attention(model, enc)).max() <= 1e-5
    assert trace.images == []
    [note] = trace.notes
    assert note.startswith("image tokens are shown as plain tokens: attnscope has no layout")
    assert "llava_onevision" in note
    token = model.config.image_token_index
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert {trace.tokens[i] for i in placed} == {"<image>"}


def test_a_layout_without_a_reader_leaves_plain_tokens_and_a_note(
    llava: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, processor = llava
    monkeypatch.delitem(image_readers.READERS, "llava")
    trace = attnscope.capture(model, TEXT["llava"], images=image(40, 40), processor=processor)
    assert trace.images == []
    assert any("image tokens are shown as plain tokens" in n and "llava" in n for n in trace.notes)
    assert trace.tokens.count("<image>") == 16
    with pytest.raises(AttnscopeError, match="has no images"):
        attnscope.image_attention(trace, layer=0)


class _Counted:
    """Counts forward calls of a model's submodules (to prove bad input stops before work)."""

    def __init__(self, model: Any) -> None:
        self.calls = 0
        self.handle = model.register_forward_pre_hook(lambda *_: self._count())

    def _count(self) -> None:
        self.calls += 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"images": [image(8, 8)] * 2}, AttnscopeError, "1 image placeholder.*2 image"),
        ({"images": "cat.png"}, TypeError, "images= takes a PIL image"),
        ({"images": []}, TypeError, "got an empty list"),
        ({"images": image(8, 8), "text_pair": "b"}, TypeError, "text_pair="),
        ({"images": image(8, 8), "max_tokens": 5}, AttnscopeError, "image tokens cannot be cut"),
        ({"images": np.zeros((0, 0, 3), np.uint8)}, AttnscopeError, r"images\[0\] is empty"),
        ({"images": np.zeros((8, 8, 5))}, AttnscopeError, r"expected 1 \(grey\) or 3 \(RGB\)"),
        ({"images": np.zeros((8, 8, 4))}, AttnscopeError, r"RGBA: drop the alpha channel"),
        ({"images": "truncated"}, AttnscopeError, r"images\[0\] could not be read .* truncated"),
    ],
)
def test_bad_input_is_refused_before_work(
    llava: tuple[Any, Any], kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    model, processor = llava
    if isinstance(kwargs["images"], str) and kwargs["images"] == "truncated":
        kwargs = {"images": _truncated_png()}
    counted = _Counted(model)
    try:
        with pytest.raises(error, match=match):
            attnscope.capture(model, TEXT["llava"], processor=processor, **kwargs)
    finally:
        counted.handle.remove()
    assert counted.calls == 0


def _truncated_png() -> Any:
    import io

    from PIL import Image

    data = io.BytesIO()
    Image.fromarray(image(64, 64)).save(data, format="PNG")
    return Image.open(io.BytesIO(data.getvalue()[:300]))


def test_grey_images_are_taken_as_rgb(llava: tuple[Any, Any]) -> None:
    from PIL import Image

    model, processor = llava
    grey = image(40, 60)[..., 0]
    as_pil = attnscope.capture(
        model, TEXT["llava"], images=Image.fromarray(grey).convert("RGB"), processor=processor
    )
    for given in (grey, grey[..., None], torch.from_numpy(grey)[None]):
        trace = attnscope.capture(model, TEXT["llava"], images=given, processor=processor)
        np.testing.assert_allclose(trace.attention, as_pil.attention, rtol=1e-5, atol=1e-6)


def test_a_huge_image_is_scaled_down_with_a_note(
    llava: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnscope.sources.hf import image_input

    monkeypatch.setattr(image_input, "MAX_PIXELS", 32 * 32)
    model, processor = llava
    trace = attnscope.capture(model, TEXT["llava"], images=image(64, 128), processor=processor)
    assert any("images[0] (128 x 64 px) was scaled down to 45 x 22" in n for n in trace.notes)


def test_a_processor_that_takes_no_images_is_refused(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    with pytest.raises(AttnscopeError, match="has no image processor, so it cannot take images"):
        attnscope.capture(model, TEXT["llava"], images=image(8, 8), processor=processor.tokenizer)


def test_a_text_model_takes_no_images() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=50)).eval()
    with pytest.raises(AttnscopeError, match="GPT2LMHeadModel takes no images"):
        attnscope.capture(model, "a <image>", images=image(8, 8), processor=object())


def test_processor_alone_tokenizes_text(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    trace = attnscope.capture(model, "Look at this cat", processor=processor)
    assert trace.tokens == ["[CLS]", "Look", "at", "this", "cat", "[SEP]"]
    assert trace.images == []


def test_model_and_processor_load_from_a_saved_folder(
    llava: tuple[Any, Any], tmp_path: Path
) -> None:
    model, processor = llava
    model.save_pretrained(tmp_path)
    processor.save_pretrained(tmp_path)
    picture = image(40, 40)
    # a path: the model loads with its image-text head (it can generate), the processor beside it
    trace = attnscope.capture(str(tmp_path), TEXT["llava"], images=picture, max_new_tokens=2)
    assert trace.metadata["model_class"] == "LlavaForConditionalGeneration"
    assert len(trace.generated_ids or []) == 2
    assert trace.images[0].grid == (4, 4)
    # a loaded model: its processor comes from its name_or_path
    from transformers import AutoModelForImageTextToText

    loaded = AutoModelForImageTextToText.from_pretrained(tmp_path).eval()
    again = attnscope.capture(loaded, TEXT["llava"], images=picture)
    enc = _processed(processor, TEXT["llava"], picture)
    assert np.abs(again.attention - eager_attention(loaded, enc)).max() <= 1e-5


def test_a_model_built_in_memory_needs_its_processor(llava: tuple[Any, Any]) -> None:
    model, _ = llava
    with pytest.raises(AttnscopeError, match=r"has no name_or_path .* pass processor="):
        attnscope.capture(model, TEXT["llava"], images=image(8, 8))


CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
)


def test_chat_messages_with_an_image(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}
    ]
    picture = image(40, 40)
    processor.chat_template = CHAT_TEMPLATE
    try:
        trace = attnscope.capture(
            model, messages, images=picture, processor=processor, max_new_tokens=2
        )
    finally:
        processor.chat_template = None
    rendered = "user: <image>What is it?\nassistant:"
    enc = _processed(processor, rendered, picture)
    length = enc["input_ids"].shape[1]
    assert trace.prompt_length == length
    token = model.config.image_token_index
    placed = [i for i, t in enumerate(enc["input_ids"][0].tolist()) if t == token]
    assert list(trace.images[0].positions) == placed
    prompt = {k: v for k, v in enc.items() if k != "token_type_ids"}
    assert (
        np.abs(trace.attention[:, :, :length, :length] - eager_attention(model, prompt)).max()
        <= 1e-5
    )


def test_chat_messages_need_a_chat_template(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    messages = [{"role": "user", "content": [{"type": "image"}]}]
    with pytest.raises(AttnscopeError, match="need the processor's chat template"):
        attnscope.capture(model, messages, images=image(8, 8), processor=processor)


def test_pil_numpy_and_tensor_images_give_one_trace(llava: tuple[Any, Any]) -> None:
    from PIL import Image

    model, processor = llava
    array = image(40, 60)
    as_pil = attnscope.capture(
        model, TEXT["llava"], images=Image.fromarray(array), processor=processor
    )
    as_numpy = attnscope.capture(model, TEXT["llava"], images=[array], processor=processor)
    as_tensor = attnscope.capture(
        model, TEXT["llava"], images=torch.from_numpy(array).permute(2, 0, 1), processor=processor
    )
    for other in (as_numpy, as_tensor):
        np.testing.assert_allclose(other.attention, as_pil.attention, atol=1e-6)
        np.testing.assert_array_equal(other.images[0].pixels, as_pil.images[0].pixels)


def test_image_attention_with_some_layers_captured(llava: tuple[Any, Any]) -> None:
    model, processor = llava
    trace = attnscope.capture(
        model, TEXT["llava"], images=image(40, 40), processor=processor, layers=[1]
    )
    full = attnscope.capture(model, TEXT["llava"], images=image(40, 40), processor=processor)
    np.testing.assert_allclose(
        attnscope.image_attention(trace, layer=1)[0], attnscope.image_attention(full, layer=1)[0]
    )
    with pytest.raises(IndexError, match="layer 0 was not captured"):
        attnscope.image_attention(trace, layer=0)


def test_a_trace_file_missing_its_pixels_is_refused(llava: tuple[Any, Any], tmp_path: Path) -> None:
    import zipfile

    model, processor = llava
    trace = attnscope.capture(model, TEXT["llava"], images=image(40, 40), processor=processor)
    path = trace.save(tmp_path / "t")
    damaged = tmp_path / "damaged.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
        for info in source.infolist():
            if not info.filename.startswith("image/"):
                target.writestr(info, source.read(info))
    with pytest.raises(TraceFileError, match="does not check out"):
        attnscope.AttentionTrace.load(damaged)
