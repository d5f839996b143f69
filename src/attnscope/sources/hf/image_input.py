"""Each image given to ``capture(images=...)`` read, shaped and sized before the processor runs.

A processor's own errors name none of the user's arguments ("Unable to infer
channel dimension format", a ``ZeroDivisionError`` for an empty array, PIL's
``OSError`` for a truncated file), and it takes gigabytes for a huge image.
Here each image is read now, empty or oddly shaped ones are refused with their
index, a grey one gets three channels, and one over :data:`MAX_PIXELS` is
scaled down with a note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from attnscope.errors import AttnscopeError

MAX_PIXELS = 4096 * 4096
"""Pixels above which an image is scaled down first (processors resize far below this)."""


def prepare_images(images: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """``images`` ready for a processor, and a note for each one scaled down.

    Examples
    --------
    >>> ready, notes = prepare_images([np.zeros((4, 6), np.uint8)])  # grey: three channels
    >>> ready[0].shape, notes
    ((4, 6, 3), [])
    >>> prepare_images([np.zeros((0, 0, 3), np.uint8)])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: images[0] is empty (shape (0, 0, 3)); ...
    """
    ready: list[Any] = []
    notes: list[str] = []
    for index, image in enumerate(images):
        if isinstance(image, np.ndarray | torch.Tensor):
            shaped, channels_last = _shaped(image, index)
            height, width = shaped.shape[:2] if channels_last else shaped.shape[1:]
        else:
            shaped = _read_pil(image, index)
            width, height = shaped.size
        scale = math.sqrt(MAX_PIXELS / (height * width))
        if scale < 1:
            size = (max(1, int(height * scale)), max(1, int(width * scale)))
            if isinstance(shaped, np.ndarray | torch.Tensor):
                shaped = _resized(shaped, size, channels_last)
            else:
                shaped = shaped.resize((size[1], size[0]))
            notes.append(
                f"images[{index}] ({width} x {height} px) was scaled down to {size[1]} x "
                f"{size[0]} before the processor (at full size it would take about "
                f"{height * width * 12 / 2**30:.0f} GB); the processor resizes it further."
            )
        ready.append(shaped)
    return ready, notes


def _refuse(index: int, why: str) -> AttnscopeError:
    return AttnscopeError(f"images[{index}] {why}")


def _read_pil(image: Any, index: int) -> Any:
    """A PIL image read now: a truncated or damaged file is named here, not in the processor."""
    try:
        image.load()
    except (OSError, SyntaxError, ValueError) as err:
        raise _refuse(
            index,
            f"could not be read ({err}): the file is truncated or damaged. Open a complete "
            "file, or check it with PIL.Image.open(path).verify().",
        ) from None
    if image.size[0] == 0 or image.size[1] == 0:
        raise _refuse(index, f"is empty ({image.size[0]} x {image.size[1]} px); give a picture.")
    return image


def _shaped(image: Any, index: int) -> tuple[Any, bool]:
    """An array or tensor as 3 channels first or last; whether they are last."""
    shape = tuple(int(n) for n in image.shape)
    if 0 in shape:
        raise _refuse(index, f"is empty (shape {shape}); give a picture with pixels.")
    if image.ndim == 2:  # grey: the processors' normalisation expects three channels
        image = image[..., None]
        shape = (*shape, 1)
    if shape[-1] in (1, 3):
        channels_last = True
    elif shape[0] in (1, 3):
        channels_last = False
    else:
        hint = " (RGBA: drop the alpha channel, image[..., :3])" if 4 in shape else ""
        raise _refuse(
            index,
            f"has shape {shape}: expected 1 (grey) or 3 (RGB) channels, first (channels, "
            f"height, width) or last (height, width, channels){hint}.",
        )
    if (shape[-1] if channels_last else shape[0]) == 1:
        axis = -1 if channels_last else 0
        image = (
            np.repeat(image, 3, axis=axis)
            if isinstance(image, np.ndarray)
            else image.repeat_interleave(3, dim=axis)
        )
    return image, channels_last


def _resized(image: Any, size: tuple[int, int], channels_last: bool) -> Any:
    """``image`` scaled to ``size`` (height, width) by area, in its own dtype and layout."""
    tensor = torch.as_tensor(image)
    chw = tensor.permute(2, 0, 1) if channels_last else tensor
    small = torch.nn.functional.interpolate(chw[None].float(), size=size, mode="area")[0]
    if not tensor.dtype.is_floating_point:
        small = small.round()
    out = (small.permute(1, 2, 0) if channels_last else small).to(tensor.dtype).contiguous()
    return out.numpy() if isinstance(image, np.ndarray) else out
