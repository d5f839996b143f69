"""Which layout reader reads which model type's images."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attnscope.sources.hf.image_anyres import llava_onevision
from attnscope.sources.hf.image_grids import gemma3, paligemma, qwen2_vl
from attnscope.sources.hf.image_layout import Layout, Reader
from attnscope.sources.hf.image_pixtral import llava_any, pixtral
from attnscope.sources.hf.image_tiles import aya_vision, idefics3, internvl, llava_next

READERS: dict[str, Reader] = {
    "aya_vision": aya_vision,  # InternVL's tiles
    "internvl": internvl,
    "gemma3": gemma3,
    "glm4v": qwen2_vl,  # Qwen2-VL's patches, merges and image_grid_thw
    "llava": llava_any,  # CLIP-style grids, or Pixtral's
    "llava_next": llava_next,
    "llava_next_video": llava_next,  # its images are LLaVA-NeXT's
    "llava_onevision": llava_onevision,
    "mistral3": pixtral,
    "paligemma": paligemma,
    "qwen2_vl": qwen2_vl,
    "qwen2_5_vl": qwen2_vl,
    "qwen3_vl": qwen2_vl,
    "qwen3_vl_moe": qwen2_vl,
    "smolvlm": idefics3,  # Idefics3's tiles, overview and pixel shuffle
    "idefics3": idefics3,
}
"""Layout readers by ``config.model_type``."""


def read_layouts(
    model: Any, processor: Any, encoding: Mapping[str, Any], images: Sequence[Any]
) -> list[Layout] | str:
    """Each image's layout from ``processor``'s output ``encoding``, or why it cannot be read.

    Examples
    --------
    >>> class Config:
    ...     model_type = "fuyu"
    >>> class Model:
    ...     config = Config()
    >>> read_layouts(Model(), None, {}, [])  # doctest: +ELLIPSIS
    'attnscope has no layout reader for fuyu images yet (it reads aya_vision, ...)'
    """
    model_type = str(model.config.model_type)
    reader = READERS.get(model_type)
    if reader is None:
        known = ", ".join(sorted(READERS))
        return f"attnscope has no layout reader for {model_type} images yet (it reads {known})"
    return reader(model, processor, encoding, images)
