"""Images for vision transformers (ViT): pixel input and one token per patch."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnscope.sources.hf.tokenize import Encoded
from attnscope.trace import TokenKind, Tokens


def is_vision_model(model: Any) -> bool:
    """True when the model reads ``pixel_values`` rather than token ids.

    Examples
    --------
    >>> from transformers import ViTConfig, ViTModel
    >>> is_vision_model(ViTModel(ViTConfig(num_hidden_layers=1, hidden_size=8,
    ...     num_attention_heads=2, intermediate_size=8, image_size=8, patch_size=4)))
    True
    """
    return getattr(model, "main_input_name", "input_ids") == "pixel_values"


def _size(value: Any) -> tuple[int, int]:
    return (int(value[0]), int(value[1])) if isinstance(value, list | tuple) else (value, value)


def encode_image(model: Any, image: Any) -> Encoded:
    """Pixel input and ``[CLS]`` + ``patch r,c`` tokens for a ViT-style model.

    Parameters
    ----------
    model
        A vision transformer with ``config.image_size`` and ``config.patch_size``.
    image
        A float array or tensor ``(channels, height, width)`` or
        ``(1, channels, height, width)``, already normalised the way the model
        expects (an image processor's ``pixel_values``).

    Examples
    --------
    >>> from transformers import ViTConfig, ViTModel
    >>> import torch
    >>> model = ViTModel(ViTConfig(num_hidden_layers=1, hidden_size=8, num_attention_heads=2,
    ...                            intermediate_size=8, image_size=8, patch_size=4))
    >>> encode_image(model, torch.zeros(3, 8, 8)).tokens.labels
    ('[CLS]', 'patch 0,0', 'patch 0,1', 'patch 1,0', 'patch 1,1')
    """
    config = model.config
    pixels = image if isinstance(image, torch.Tensor) else torch.as_tensor(np.asarray(image))
    if pixels.ndim == 3:
        pixels = pixels[None]
    channels = int(getattr(config, "num_channels", 3))
    height, width = _size(config.image_size)
    if (
        pixels.ndim != 4
        or pixels.shape[0] != 1
        or tuple(pixels.shape[1:])
        != (
            channels,
            height,
            width,
        )
    ):
        raise ValueError(
            f"{type(model).__name__} reads images of shape ({channels}, {height}, {width}); "
            f"got {tuple(pixels.shape)}. Pass one image as pixel_values from the model's "
            "image processor (e.g. processor(img, return_tensors='pt').pixel_values)."
        )
    patch_h, patch_w = _size(config.patch_size)
    rows, cols = height // patch_h, width // patch_w
    labels = ["[CLS]"] + [f"patch {r},{c}" for r in range(rows) for c in range(cols)]
    patch: TokenKind = "token"
    kinds: list[TokenKind] = ["special", *([patch] * (rows * cols))]
    tokens = Tokens(labels, kinds=kinds)
    inputs = {"pixel_values": pixels.to(torch.float32)}
    return Encoded(inputs, tokens, list(range(len(labels))), len(labels), len(labels))
