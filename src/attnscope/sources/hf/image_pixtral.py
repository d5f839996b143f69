"""Layout readers for Pixtral's vision encoder: Mistral 3 and LLaVA with a Pixtral tower.

Pixtral reads each image at its own resolution (``image_sizes``, multiples of
the patch size times the merge size) and gives one token per patch, or per
``merge x merge`` patches in Mistral 3, in raster order. The processor
writes an ``[IMG_BREAK]`` after each row and an ``[IMG_END]`` after the last;
those are tokens of their own (not the image token), so they stay plain
tokens between the rows of the grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attnscope.sources.hf.image_grids import llava
from attnscope.sources.hf.image_layout import Layout, first, setting
from attnscope.sources.hf.image_pixels import to_picture


def pixtral(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Pixtral (Mistral 3, LLaVA with a Pixtral tower): ``image_sizes`` over patch x merge.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> pixtral(NS(config=NS()), NS(image_processor=NS()), {}, [])
    'the processor or config does not say the patch size, merge size and image_sizes'
    """
    config = model.config
    vision = getattr(config, "vision_config", None)
    patch = setting(getattr(processor, "patch_size", None))
    merge = setting(getattr(processor, "spatial_merge_size", None))
    sizes = encoding.get("image_sizes")
    if patch is None or merge is None or sizes is None:
        return "the processor or config does not say the patch size, merge size and image_sizes"
    model_patch = first(getattr(vision, "patch_size", None))
    # Mistral 3 merges patches (spatial_merge_size); LLaVA over Pixtral does not
    model_merge = setting(getattr(config, "spatial_merge_size", 1))
    if (model_patch, model_merge) != (patch, merge):
        return (
            f"the processor reads {patch}-px patches merged {merge} x {merge} but the model "
            f"{model_patch}-px patches merged {model_merge} x {model_merge}"
        )
    if getattr(config, "vision_feature_select_strategy", "full") != "full":
        return "the model drops each image's first patch (vision_feature_select_strategy)"
    step = patch * merge
    layouts: list[Layout] = []
    for pixels, size in zip(encoding["pixel_values"], sizes, strict=True):
        height, width = (int(v) for v in size)
        if height % step or width % step:
            return f"an image of {height} x {width} px is not whole {step}-px cells"
        grid = (height // step, width // step)
        count = grid[0] * grid[1]
        picture = pixels[:, :height, :width].float().numpy()
        layouts.append(
            Layout(count, grid, list(range(count)), to_picture(processor.image_processor, picture))
        )
    return layouts


def llava_any(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """LLaVA: :func:`pixtral` where its vision tower is Pixtral, else one CLIP-style grid.

    Examples
    --------
    >>> from types import SimpleNamespace as NS  # settings missing: the reason
    >>> vision = NS(model_type="pixtral")
    >>> llava_any(NS(config=NS(vision_config=vision)), NS(image_processor=NS()), {}, [])
    'the processor or config does not say the patch size, merge size and image_sizes'
    """
    vision = getattr(model.config, "vision_config", None)
    if getattr(vision, "model_type", None) == "pixtral":
        return pixtral(model, processor, encoding, images)
    return llava(model, processor, encoding, images)
