"""Layout readers for models that tile each image: LLaVA-NeXT, Idefics3, InternVL.

Each gives the whole tiled grid in raster order (tiles row by row), the tile
layout, and the model's downscaled whole-image view as the ``overview`` run.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from attnscope.sources.hf.image_layout import (
    Layout,
    assembled,
    first,
    overview_then_rows,
    setting,
    tiled_cells,
    unpadded_picture,
)
from attnscope.sources.hf.image_pixels import to_picture


def llava_next(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """LLaVA-NeXT (anyres): a whole-image overview, then the unpadded grid of tiles.

    A newline token closes each row of the grid; the sizes follow the
    processor's own rules (best resolution, unpadding).

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> llava_next(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the processor or config does not say the patch size and feature strategy'
    """
    from transformers.image_processing_utils import select_best_resolution

    config = model.config
    patch = setting(getattr(processor, "patch_size", None))
    added = setting(getattr(processor, "num_additional_image_tokens", None))
    strategy = getattr(config, "vision_feature_select_strategy", None)
    pinpoints = getattr(processor.image_processor, "image_grid_pinpoints", None)
    unpadded = getattr(processor, "_get_unpadded_features", None)
    if patch is None or added is None or strategy not in ("default", "full"):
        return "the processor or config does not say the patch size and feature strategy"
    if not pinpoints or unpadded is None:
        return "the processor does not say its tile resolutions (image_grid_pinpoints)"
    kept = added if strategy == "full" else 0
    layouts: list[Layout] = []
    for tiles, size in zip(encoding["pixel_values"], encoding["image_sizes"], strict=True):
        orig_h, orig_w = (int(v) for v in size)
        height, width = (int(v) for v in tiles.shape[-2:])
        best_h, best_w = select_best_resolution((orig_h, orig_w), pinpoints)
        rows, cols = best_h // height, best_w // width
        side_h, side_w = height // patch, width // patch
        cells, newlines = unpadded(orig_h, orig_w, side_h, side_w, rows, cols)
        grid = (int(newlines), int(cells) // int(newlines))
        base = side_h * side_w + kept
        whole = assembled(tiles[1 : 1 + rows * cols].float().numpy(), rows, cols)
        picture = unpadded_picture(whole, grid, (side_h * rows, side_w * cols), patch)
        layouts.append(
            overview_then_rows(
                base,
                grid,
                overview=list(range(kept, base)),
                overview_grid=(side_h, side_w),
                tiles=(rows, cols),
                pixels=to_picture(processor.image_processor, picture),
                before={"class": list(range(kept))} if kept else None,
            )
        )
    return layouts


def idefics3(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Idefics3: tiles row by row, then a downscaled whole image; each tile pixel-shuffled.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> idefics3(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the config or processor does not say its tile size, patch size and scale factor'
    """
    config = model.config
    vision = getattr(config, "vision_config", None)
    size = setting(getattr(vision, "image_size", None))
    patch = setting(getattr(vision, "patch_size", None))
    scale = setting(getattr(config, "scale_factor", None))
    seq_len = setting(getattr(processor, "image_seq_len", None))
    if size is None or patch is None or scale is None or seq_len is None:
        return "the config or processor does not say its tile size, patch size and scale factor"
    side = size // patch // scale
    if side * side != seq_len:
        return f"the processor gives {seq_len} tokens per tile but the model makes {side * side}"
    info = processor.image_processor(list(images), return_row_col_info=True)
    tiles = encoding["pixel_values"][0].float().numpy()
    layouts: list[Layout] = []
    start = 0
    for rows, cols in zip(info["rows"][0], info["cols"][0], strict=True):
        count = rows * cols
        if count == 0:  # not split: the whole image is one tile
            picture = to_picture(processor.image_processor, tiles[start])
            layouts.append(Layout(seq_len, (side, side), list(range(seq_len)), picture))
            start += 1
            continue
        whole = assembled(tiles[start : start + count], rows, cols)
        start += count + 1
        layouts.append(
            Layout(
                count=(count + 1) * seq_len,
                grid=(rows * side, cols * side),
                cells=tiled_cells(rows, cols, side),
                pixels=to_picture(processor.image_processor, whole),
                tiles=(rows, cols),
                extra={"overview": list(range(count * seq_len, (count + 1) * seq_len))},
                extra_grids={"overview": (side, side)},
            )
        )
    return layouts


def original_size(image: Any) -> tuple[int, int]:
    """``(height, width)`` of a user's image as the image processor reads it."""
    from transformers.image_utils import (
        get_image_size,
        infer_channel_dimension_format,
        to_numpy_array,
    )

    array = to_numpy_array(image)
    height, width = get_image_size(array, infer_channel_dimension_format(array))
    return int(height), int(width)


def internvl(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """InternVL: tiles on the canvas the image processor picks, then a thumbnail.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> internvl(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the image processor or config does not say its tiling and patch size'
    """
    vision = getattr(model.config, "vision_config", None)
    size = first(getattr(vision, "image_size", None))
    patch = first(getattr(vision, "patch_size", None))
    ratio = getattr(model.config, "downsample_ratio", None)
    seq_len = setting(getattr(processor, "image_seq_length", None))
    if size is None or patch is None:
        return "the image processor or config does not say its tiling and patch size"
    if not isinstance(ratio, float) or seq_len is None:
        return "the config or processor does not say downsample_ratio and image_seq_length"
    side = int(size // patch * ratio)
    if side * side != seq_len:
        return f"the processor gives {seq_len} tokens per tile but the model makes {side * side}"
    return on_canvas(processor.image_processor, encoding, images, side)


def aya_vision(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Aya Vision: InternVL's tiles and thumbnail (``TILE_<n>``, ``TILE_GLOBAL``), pixel-shuffled.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> aya_vision(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the config or processor does not say the tile size, patch size and downsample factor'
    """
    config = model.config
    vision = getattr(config, "vision_config", None)
    size = first(getattr(vision, "image_size", None))
    patch = first(getattr(vision, "patch_size", None))
    factor = setting(getattr(config, "downsample_factor", None))
    tile = setting(getattr(processor, "img_size", None))
    step = setting(getattr(processor, "patch_size", None))  # the processor's: patch x factor
    if size is None or patch is None or factor is None or tile is None or step is None:
        return (
            "the config or processor does not say the tile size, patch size and downsample factor"
        )
    side = size // patch // factor
    if tile // step != side:
        return f"the processor gives {tile // step} tokens a tile side but the model makes {side}"
    if getattr(config, "vision_feature_select_strategy", "full") != "full":
        return "the model drops each tile's first patch (vision_feature_select_strategy)"
    return on_canvas(processor.image_processor, encoding, images, side)


def on_canvas(
    image_processor: Any, encoding: Mapping[str, Any], images: Sequence[Any], side: int
) -> list[Layout] | str:
    """Tiles (``side x side`` tokens each) on the image processor's canvas, then a thumbnail."""
    canvas = getattr(
        sys.modules[type(image_processor).__module__], "get_optimal_tiled_canvas", None
    )
    tile = getattr(image_processor, "size", None)
    if canvas is None or tile is None:
        return "the image processor does not say its tiling (get_optimal_tiled_canvas, size)"
    tiles = encoding["pixel_values"].float().numpy()
    crops = bool(getattr(image_processor, "crop_to_patches", False))
    low = int(getattr(image_processor, "min_patches", 1))
    high = int(getattr(image_processor, "max_patches", 1))
    layouts: list[Layout] = []
    start = 0
    for image in images:
        cols, rows = (1, 1)
        if crops and high > 1:
            cols, rows = canvas(original_size(image), (tile.height, tile.width), low, high)
        count = rows * cols
        whole = assembled(tiles[start : start + count], rows, cols)
        start += count + (1 if count > 1 else 0)
        layouts.append(
            Layout(
                count=(count + (1 if count > 1 else 0)) * side * side,
                grid=(rows * side, cols * side),
                cells=tiled_cells(rows, cols, side),
                pixels=to_picture(image_processor, whole),
                tiles=(rows, cols) if count > 1 else None,
                extra={"overview": list(range(count * side * side, (count + 1) * side * side))}
                if count > 1
                else {},
                extra_grids={"overview": (side, side)} if count > 1 else {},
            )
        )
    return layouts
