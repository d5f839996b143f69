"""The picture a vision-language model saw, rebuilt from its processor's ``pixel_values``.

Drawing attention on the user's original image would misplace it wherever the
processor crops or pads; the pixels the model read are exactly what its grid
covers. They are un-normalised with the processor's own mean, std and
rescale factor and kept small.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

MAX_SIDE = 256
"""Longest side of the pixels a trace keeps for drawing."""


def _stats(image_processor: Any, channels: int) -> tuple[npt.NDArray[np.float64], ...]:
    mean = np.asarray(getattr(image_processor, "image_mean", None) or [0.0], np.float64)
    std = np.asarray(getattr(image_processor, "image_std", None) or [1.0], np.float64)
    if not getattr(image_processor, "do_normalize", True):
        mean, std = np.zeros(1), np.ones(1)
    scale = float(getattr(image_processor, "rescale_factor", None) or 1 / 255)
    if not getattr(image_processor, "do_rescale", True):
        scale = 1.0
    shape = (channels, 1, 1)
    return (
        np.broadcast_to(mean.reshape(-1, 1, 1), shape),
        np.broadcast_to(std.reshape(-1, 1, 1), shape),
        np.array(scale),
    )


def to_picture(image_processor: Any, chw: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """A normalised ``(channels, height, width)`` array back to ``(h, w, 3)`` uint8, downscaled.

    Examples
    --------
    >>> class P:
    ...     image_mean, image_std, rescale_factor = [0.5] * 3, [0.5] * 3, 1 / 255
    >>> to_picture(P(), np.ones((3, 2, 2)))[0, 0].tolist()
    [255, 255, 255]
    """
    values = np.asarray(chw, np.float64)
    channels = values.shape[0]
    mean, std, scale = _stats(image_processor, channels)
    raw = (values * std + mean) / scale
    picture = np.clip(np.rint(raw), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    if channels == 1:
        picture = np.repeat(picture, 3, axis=2)
    picture = picture[:, :, :3]
    step = max(1, -(-max(picture.shape[:2]) // MAX_SIDE))
    return np.ascontiguousarray(picture[::step, ::step])


def qwen_patches_to_chw(
    flat: npt.ArrayLike, grid_thw: tuple[int, int, int], patch: int, temporal: int, merge: int
) -> npt.NDArray[np.float64]:
    """Qwen2-VL's flattened patches of one image back to ``(channels, height, width)``.

    The processor orders patches block by merged block and flattens each as
    (channel, temporal, row, col); this undoes it for the first frame.

    Examples
    --------
    >>> chw = np.arange(3 * 4 * 4, dtype=float).reshape(3, 4, 4)
    >>> p = chw.reshape(1, 1, 3, 1, 2, 2, 1, 2, 2).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    >>> bool((qwen_patches_to_chw(p.reshape(4, 12), (1, 2, 2), 2, 1, 2) == chw).all())
    True
    """
    t, h, w = grid_thw
    values = np.asarray(flat, np.float64)
    channels = values.shape[-1] // (temporal * patch * patch)
    blocks = values.reshape(
        t, h // merge, w // merge, merge, merge, channels, temporal, patch, patch
    )[0, ..., 0, :, :]  # (bh, bw, mh, mw, c, ph, pw)
    image = blocks.transpose(4, 0, 2, 5, 1, 3, 6)  # (c, bh, mh, ph, bw, mw, pw)
    return image.reshape(channels, h * patch, w * patch)
