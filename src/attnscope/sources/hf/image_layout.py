"""How a vision-language model lays each image's tokens out: read, never guessed from counts.

One reader per family takes the processor's output and the model's and
processor's own settings (patch size, merge size, feature strategy, tiles) and
says, for each image, how many image tokens it has in the sequence and which
of them is which cell of its grid. A family without a reader, or a reader that
finds a setting missing, gives a reason instead: the image tokens then stay
plain tokens and the trace's notes say why.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from attnscope.sources.hf.image_pixels import qwen_patches_to_chw, to_picture
from attnscope.trace.images import ImageRegion


@dataclass
class Layout:
    """One image's run of image tokens: how many, and which index is which grid cell.

    Examples
    --------
    >>> layout = Layout(5, (2, 2), [1, 2, 3, 4], np.zeros((4, 4, 3), np.uint8),
    ...                 extra={"class": [0]})
    >>> layout.region([10, 11, 12, 13, 14]).positions, layout.region([10, 11, 12, 13, 14]).extra
    ((11, 12, 13, 14), {'class': (10,)})
    """

    count: int
    grid: tuple[int, int]
    cells: list[int]
    pixels: npt.NDArray[np.uint8]
    tiles: tuple[int, int] | None = None
    extra: dict[str, list[int]] = field(default_factory=dict)
    extra_grids: dict[str, tuple[int, int]] = field(default_factory=dict)

    def region(self, positions: Sequence[int]) -> ImageRegion:
        """The :class:`ImageRegion` of this image, given its image tokens' positions in order."""
        return ImageRegion(
            positions=tuple(positions[i] for i in self.cells),
            grid=self.grid,
            pixels=self.pixels,
            tiles=self.tiles,
            extra={k: tuple(positions[i] for i in v) for k, v in self.extra.items()},
            extra_grids=self.extra_grids,
        )


Reader = Callable[[Any, Any, Mapping[str, Any], Sequence[Any]], "list[Layout] | str"]


def _setting(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _llava(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """LLaVA: one CLIP-style grid per image, ``pixel_values`` (images, 3, H, W)."""
    config = model.config
    patch = _setting(getattr(processor, "patch_size", None)) or _setting(
        getattr(getattr(config, "vision_config", None), "patch_size", None)
    )
    strategy = getattr(config, "vision_feature_select_strategy", None)
    added = _setting(getattr(processor, "num_additional_image_tokens", None))
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


def _llava_next(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """LLaVA-NeXT (anyres): a whole-image overview, then the unpadded grid of tiles.

    A newline token closes each row of the grid; the sizes follow the
    processor's own rules (best resolution, unpadding).
    """
    from transformers.image_processing_utils import select_best_resolution

    config = model.config
    patch = _setting(getattr(processor, "patch_size", None))
    added = _setting(getattr(processor, "num_additional_image_tokens", None))
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
        whole = _assembled(tiles[1 : 1 + rows * cols].float().numpy(), rows, cols)
        top = (side_h * rows - grid[0]) // 2 * patch
        left = (side_w * cols - grid[1]) // 2 * patch
        picture = whole[:, top : top + grid[0] * patch, left : left + grid[1] * patch]
        line = grid[1] + 1
        extra = {
            "overview": list(range(kept, base)),
            "newline": [base + r * line + grid[1] for r in range(grid[0])],
        }
        layouts.append(
            Layout(
                count=base + grid[0] * line,
                grid=grid,
                cells=[base + r * line + c for r in range(grid[0]) for c in range(grid[1])],
                pixels=to_picture(processor.image_processor, picture),
                tiles=(rows, cols),
                extra={"class": list(range(kept)), **extra} if kept else extra,
                extra_grids={"overview": (side_h, side_w)},
            )
        )
    return layouts


def _assembled(tiles: npt.NDArray[Any], rows: int, cols: int) -> npt.NDArray[Any]:
    """``rows * cols`` tiles ``(channels, h, w)`` in raster order as one ``(channels, H, W)``."""
    return np.concatenate(
        [np.concatenate(list(tiles[r * cols : (r + 1) * cols]), 2) for r in range(rows)], 1
    )


def _qwen2_vl(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Qwen2-VL, 2.5-VL, 3-VL: dynamic resolution, ``merge x merge`` patches per token."""
    image_processor = processor.image_processor
    merge = _setting(getattr(image_processor, "merge_size", None))
    patch = _setting(getattr(image_processor, "patch_size", None))
    temporal = _setting(getattr(image_processor, "temporal_patch_size", None))
    vision = getattr(model.config, "vision_config", None)
    model_merge = _setting(getattr(vision, "spatial_merge_size", None))
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


def _tiled_cells(rows: int, cols: int, side: int) -> list[int]:
    """For each cell of the whole tiled grid in raster order, its index in the run of tokens.

    Tiles come row by row, each with ``side * side`` tokens in raster order.

    Examples
    --------
    >>> _tiled_cells(1, 2, 2)
    [0, 1, 4, 5, 2, 3, 6, 7]
    """
    cells = []
    for r in range(rows * side):
        for c in range(cols * side):
            tile = (r // side) * cols + c // side
            cells.append(tile * side * side + (r % side) * side + c % side)
    return cells


def _idefics3(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Idefics3: tiles row by row, then a downscaled whole image; each tile pixel-shuffled."""
    config = model.config
    vision = getattr(config, "vision_config", None)
    size = _setting(getattr(vision, "image_size", None))
    patch = _setting(getattr(vision, "patch_size", None))
    scale = _setting(getattr(config, "scale_factor", None))
    seq_len = _setting(getattr(processor, "image_seq_len", None))
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
        whole = _assembled(tiles[start : start + count], rows, cols)
        start += count + 1
        layouts.append(
            Layout(
                count=(count + 1) * seq_len,
                grid=(rows * side, cols * side),
                cells=_tiled_cells(rows, cols, side),
                pixels=to_picture(processor.image_processor, whole),
                tiles=(rows, cols),
                extra={"overview": list(range(count * seq_len, (count + 1) * seq_len))},
                extra_grids={"overview": (side, side)},
            )
        )
    return layouts


def _gemma3(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Gemma 3: each image's patches average-pooled to ``mm_tokens_per_image`` (a square)."""
    config = model.config
    vision = getattr(config, "vision_config", None)
    tokens = _setting(getattr(config, "mm_tokens_per_image", None))
    size = _setting(getattr(vision, "image_size", None))
    patch = _setting(getattr(vision, "patch_size", None))
    if tokens is None or size is None or patch is None:
        return "the config does not say mm_tokens_per_image, image_size and patch_size"
    side = math.isqrt(tokens)
    if side * side != tokens or (size // patch) % side:
        return f"{tokens} tokens per image do not pool {size // patch} patches a side evenly"
    if _setting(getattr(processor, "image_seq_length", None)) != tokens:
        return "the processor's image_seq_length differs from the config's mm_tokens_per_image"
    pixels = encoding["pixel_values"].float().numpy()
    if getattr(processor.image_processor, "do_pan_and_scan", False) or len(pixels) != len(images):
        return "pan and scan crops images into several views, which attnscope cannot place yet"
    picture = processor.image_processor
    return [
        Layout(tokens, (side, side), list(range(tokens)), to_picture(picture, p)) for p in pixels
    ]


def _original_size(image: Any) -> tuple[int, int]:
    """``(height, width)`` of a user's image as the image processor reads it."""
    from transformers.image_utils import (
        get_image_size,
        infer_channel_dimension_format,
        to_numpy_array,
    )

    array = to_numpy_array(image)
    height, width = get_image_size(array, infer_channel_dimension_format(array))
    return int(height), int(width)


def _internvl(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """InternVL: tiles on the canvas the image processor picks, then a thumbnail."""
    image_processor = processor.image_processor
    canvas = getattr(
        sys.modules[type(image_processor).__module__], "get_optimal_tiled_canvas", None
    )
    vision = getattr(model.config, "vision_config", None)
    size = _first(getattr(vision, "image_size", None))
    patch = _first(getattr(vision, "patch_size", None))
    ratio = getattr(model.config, "downsample_ratio", None)
    seq_len = _setting(getattr(processor, "image_seq_length", None))
    tile = getattr(image_processor, "size", None)
    if canvas is None or tile is None or size is None or patch is None:
        return "the image processor or config does not say its tiling and patch size"
    if not isinstance(ratio, float) or seq_len is None:
        return "the config or processor does not say downsample_ratio and image_seq_length"
    side = int(size // patch * ratio)
    if side * side != seq_len:
        return f"the processor gives {seq_len} tokens per tile but the model makes {side * side}"
    tiles = encoding["pixel_values"].float().numpy()
    crops = bool(getattr(image_processor, "crop_to_patches", False))
    low = int(getattr(image_processor, "min_patches", 1))
    high = int(getattr(image_processor, "max_patches", 1))
    layouts: list[Layout] = []
    start = 0
    for image in images:
        cols, rows = (1, 1)
        if crops and high > 1:
            cols, rows = canvas(_original_size(image), (tile.height, tile.width), low, high)
        count = rows * cols
        whole = _assembled(tiles[start : start + count], rows, cols)
        start += count + (1 if count > 1 else 0)
        layouts.append(
            Layout(
                count=(count + (1 if count > 1 else 0)) * side * side,
                grid=(rows * side, cols * side),
                cells=_tiled_cells(rows, cols, side),
                pixels=to_picture(image_processor, whole),
                tiles=(rows, cols) if count > 1 else None,
                extra={"overview": list(range(count * side * side, (count + 1) * side * side))}
                if count > 1
                else {},
                extra_grids={"overview": (side, side)} if count > 1 else {},
            )
        )
    return layouts


def _first(value: Any) -> int | None:
    """A square size's side, from an int or a (height, width) pair."""
    return _setting(value[0] if isinstance(value, list | tuple) and value else value)


READERS: dict[str, Reader] = {
    "internvl": _internvl,
    "gemma3": _gemma3,
    "llava": _llava,
    "llava_next": _llava_next,
    "qwen2_vl": _qwen2_vl,
    "qwen2_5_vl": _qwen2_vl,
    "qwen3_vl": _qwen2_vl,
    "idefics3": _idefics3,
}
"""Layout readers by ``config.model_type``."""


def read_layouts(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Each image's layout from ``processor``'s output ``encoding``, or why it cannot be read.

    Examples
    --------
    >>> class Config:
    ...     model_type = "llava_onevision"
    >>> class Model:
    ...     config = Config()
    >>> read_layouts(Model(), None, {}, [])  # doctest: +ELLIPSIS
    'attnscope has no layout reader for llava_onevision images yet (it reads gemma3, ...)'
    """
    model_type = str(model.config.model_type)
    reader = READERS.get(model_type)
    if reader is None:
        known = ", ".join(sorted(READERS))
        return f"attnscope has no layout reader for {model_type} images yet (it reads {known})"
    return reader(model, processor, encoding, images)
