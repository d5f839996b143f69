"""Layout reader for LLaVA-OneVision: anyres tiles, its own unpadding, pooling and newlines.

LLaVA-NeXT's reader (:mod:`~attnscope.sources.hf.image_tiles`) is the model
this follows; OneVision differs in the tile size (the vision config's, with
no class token), and in shrinking a large unpadded grid by bilinear
interpolation to at most ``anyres_max_<n>`` tiles' worth of tokens.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attnscope.sources.hf.image_layout import (
    Layout,
    assembled,
    first,
    overview_then_rows,
    setting,
    unpadded_picture,
)
from attnscope.sources.hf.image_pixels import to_picture


def _settings(model: Any, processor: Any) -> tuple[int, int, list[Any], Any, Any] | str:
    """(tile side in patches, patch size, pinpoints, the processor's and the model's unpad)."""
    config = model.config
    vision = getattr(config, "vision_config", None)
    size = first(getattr(vision, "image_size", None))
    patch = first(getattr(vision, "patch_size", None))
    strategy = getattr(config, "vision_feature_select_strategy", None)
    base = setting(getattr(processor, "num_image_tokens", None))
    pinpoints = getattr(config, "image_grid_pinpoints", None)
    unpadded = getattr(processor, "_get_unpadded_features", None)
    unpad = getattr(sys.modules[type(model).__module__], "unpad_image", None)
    if size is None or patch is None or base is None or strategy not in ("default", "full"):
        return (
            "the config or processor does not say the tile size, patch size, feature strategy "
            "and num_image_tokens"
        )
    if not pinpoints or unpadded is None or unpad is None:
        return "the config or processor does not say its tile resolutions (image_grid_pinpoints)"
    side = size // patch
    if base - (strategy == "default") != side * side:
        return f"the processor gives {base} tokens per tile but the model makes {side * side}"
    if getattr(processor.image_processor, "image_grid_pinpoints", None) != pinpoints:
        return "the processor's image_grid_pinpoints differ from the config's"
    if getattr(processor, "vision_aspect_ratio", None) != getattr(
        config, "vision_aspect_ratio", None
    ):
        return "the processor's vision_aspect_ratio differs from the config's"
    if getattr(processor, "vision_feature_select_strategy", strategy) != strategy:
        return "the processor's vision_feature_select_strategy differs from the config's"
    return side, patch, pinpoints, unpadded, unpad


def llava_onevision(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """LLaVA-OneVision: a whole-image overview, then the unpadded (maybe pooled) tiles' grid.

    A newline token closes each row of the grid. Where the unpadded grid is
    larger than ``vision_aspect_ratio`` allows, the model interpolates it down
    (bilinear): the grid then covers the same picture with fewer, larger cells.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> llava_onevision(NS(config=NS()), NS(image_processor=NS()), {}, [])  # doctest: +ELLIPSIS
    'the config or processor does not say the tile size, patch size, feature strategy and ...'
    """
    from transformers.image_processing_utils import select_best_resolution

    found = _settings(model, processor)
    if isinstance(found, str):
        return found
    side, patch, pinpoints, unpadded, unpad = found
    counts = encoding.get("batch_num_images")
    if counts is not None and any(int(n) != 1 for n in counts):
        return "several images in one batch entry are not tiled (batch_num_images > 1)"
    layouts: list[Layout] = []
    base = side * side
    for tiles, size in zip(encoding["pixel_values"], encoding["image_sizes"], strict=True):
        orig_h, orig_w = (int(v) for v in size)
        tile_h, tile_w = (int(v) for v in tiles.shape[-2:])
        if (tile_h, tile_w) != (side * patch, side * patch):
            return f"the processor's tiles are {tile_h} x {tile_w} px, the model's {side * patch}"
        best_h, best_w = select_best_resolution((orig_h, orig_w), pinpoints)
        rows, cols = best_h // tile_h, best_w // tile_w
        # the model's own unpadding, on a grid of the tiles' shape: what of it the picture covers
        kept_h, kept_w = unpad(torch.empty(0, side * rows, side * cols), (orig_h, orig_w)).shape[1:]
        cells, newlines = unpadded(orig_h, orig_w, side, side, rows, cols)
        grid = (int(newlines), int(cells) // int(newlines))
        whole = assembled(tiles[1 : 1 + rows * cols].float().numpy(), rows, cols)
        picture = unpadded_picture(whole, (kept_h, kept_w), (side * rows, side * cols), patch)
        layouts.append(
            overview_then_rows(
                base,
                grid,
                overview=list(range(base)),
                overview_grid=(side, side),
                tiles=(rows, cols),
                pixels=to_picture(processor.image_processor, picture),
            )
        )
    return layouts
