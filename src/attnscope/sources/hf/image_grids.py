"""Layout readers for models that give each image one grid: LLaVA, Qwen-VL, Gemma 3, PaliGemma."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attnscope.sources.hf.image_layout import Layout, first, setting
from attnscope.sources.hf.image_pixels import qwen_patches_to_chw, to_picture


def llava(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """LLaVA: one CLIP-style grid per image, ``pixel_values`` (images, 3, H, W).

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> llava(NS(config=NS()), NS(image_processor=NS()), {}, [])  # doctest: +ELLIPSIS
    'the processor or config does not say the patch size, the vi...'
    """
    config = model.config
    patch = setting(getattr(processor, "patch_size", None)) or setting(
        getattr(getattr(config, "vision_config", None), "patch_size", None)
    )
    strategy = getattr(config, "vision_feature_select_strategy", None)
    added = setting(getattr(processor, "num_additional_image_tokens", None))
    pixels = encoding.get("pixel_values")
    if patch is None or strategy not in ("default", "full") or added is None:
        return (
            "the processor or config does not say the patch size, the vision feature "
            f"strategy ({strategy!r}) and the number of class tokens"
        )
    if not isinstance(pixels, torch.Tensor) or pixels.ndim != 4:
        return "pixel_values is not one (channels, height, width) image per image"
    rows, cols = int(pixels.shape[2]) // patch, int(pixels.shape[3]) // patch
    kept = added if strategy == "full" else 0
    return [
        Layout(
            count=rows * cols + kept,
            grid=(rows, cols),
            cells=list(range(kept, kept + rows * cols)),
            pixels=to_picture(processor.image_processor, image.float().numpy()),
            extra={"class": list(range(kept))} if kept else {},
        )
        for image in pixels
    ]


def qwen2_vl(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Qwen2-VL, 2.5-VL, 3-VL: dynamic resolution, ``merge x merge`` patches per token.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> qwen2_vl(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the processor does not say its merge size, patch size and image_grid_thw'
    """
    image_processor = processor.image_processor
    merge = setting(getattr(image_processor, "merge_size", None))
    patch = setting(getattr(image_processor, "patch_size", None))
    temporal = setting(getattr(image_processor, "temporal_patch_size", None))
    vision = getattr(model.config, "vision_config", None)
    model_merge = setting(getattr(vision, "spatial_merge_size", None))
    grids = encoding.get("image_grid_thw")
    if merge is None or patch is None or temporal is None or grids is None:
        return "the processor does not say its merge size, patch size and image_grid_thw"
    if model_merge is not None and model_merge != merge:
        return f"the processor merges {merge} x {merge} patches but the model {model_merge}"
    flat = encoding["pixel_values"].float().numpy()
    layouts: list[Layout] = []
    start = 0
    for t, h, w in (tuple(int(v) for v in row) for row in grids):
        if t != 1 or h % merge or w % merge:
            return f"an image has a patch grid {t} x {h} x {w} that is not one frame of merges"
        chw = qwen_patches_to_chw(flat[start : start + h * w], (t, h, w), patch, temporal, merge)
        start += t * h * w
        grid = (h // merge, w // merge)
        count = grid[0] * grid[1]
        layouts.append(Layout(count, grid, list(range(count)), to_picture(image_processor, chw)))
    return layouts


def gemma3(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Gemma 3: each image's patches average-pooled to ``mm_tokens_per_image`` (a square).

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> gemma3(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the config does not say mm_tokens_per_image, image_size and patch_size'
    """
    config = model.config
    vision = getattr(config, "vision_config", None)
    tokens = setting(getattr(config, "mm_tokens_per_image", None))
    size = setting(getattr(vision, "image_size", None))
    patch = setting(getattr(vision, "patch_size", None))
    if tokens is None or size is None or patch is None:
        return "the config does not say mm_tokens_per_image, image_size and patch_size"
    side = math.isqrt(tokens)
    if side * side != tokens or (size // patch) % side:
        return f"{tokens} tokens per image do not pool {size // patch} patches a side evenly"
    if setting(getattr(processor, "image_seq_length", None)) != tokens:
        return "the processor's image_seq_length differs from the config's mm_tokens_per_image"
    pixels = encoding["pixel_values"].float().numpy()
    if getattr(processor.image_processor, "do_pan_and_scan", False) or len(pixels) != len(images):
        return "pan and scan crops images into several views, which attnscope cannot place yet"
    picture = processor.image_processor
    return [
        Layout(tokens, (side, side), list(range(tokens)), to_picture(picture, p)) for p in pixels
    ]


def paligemma(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """PaliGemma: one SigLIP grid per image, its image tokens before the text.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> paligemma(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the config or processor does not say image_size, patch_size and image_seq_length'
    """
    vision = getattr(model.config, "vision_config", None)
    size = first(getattr(vision, "image_size", None))
    patch = first(getattr(vision, "patch_size", None))
    tokens = setting(getattr(processor, "image_seq_length", None))
    if size is None or patch is None or tokens is None:
        return "the config or processor does not say image_size, patch_size and image_seq_length"
    side = size // patch
    if side * side != tokens:
        return f"the processor gives {tokens} tokens per image but the model makes {side * side}"
    pixels = encoding["pixel_values"].float().numpy()
    picture = processor.image_processor
    return [
        Layout(tokens, (side, side), list(range(tokens)), to_picture(picture, p)) for p in pixels
    ]
