"""Images for vision transformers (ViT): pixel input, one token per patch and the extras."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from attnscope.errors import AttnscopeError
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


# Learned tokens a vision transformer adds beside its patches, by parameter name:
# (label, goes after the patches). Their counts come from the parameters' shapes.
_EXTRA_TOKENS = {
    "cls_token": ("[CLS]", False),
    "class_embedding": ("[CLS]", False),  # CLIP
    "distillation_token": ("[DIST]", False),
    "register_tokens": ("[REG]", False),
    "detection_tokens": ("[DET]", True),
}


def _numbered(label: str, count: int) -> list[str]:
    return [label] if count == 1 else [f"{label[:-1]} {i}]" for i in range(count)]


def _extra_tokens(model: Any) -> tuple[list[str], list[str]]:
    """Labels of the tokens before and after the patches ([CLS], [DIST], registers ...)."""
    before: list[str] = []
    after: list[str] = []
    seen: set[str] = set()
    config = model.config
    for name, param in model.named_parameters():
        last = name.rsplit(".", 1)[-1]
        if last in seen or "embed" not in name:  # a pooling head's own [CLS] is no input token
            continue
        seen.add(last)
        if last == "cls_register_token":  # RADIO: class tokens, then registers, in one table
            classes = int(getattr(config, "num_cls_tokens", 1))
            before += _numbered("[CLS]", classes)
            before += _numbered("[REG]", int(param.shape[0]) - classes)
        elif last in _EXTRA_TOKENS:
            label, behind = _EXTRA_TOKENS[last]
            count = int(param.shape[-2]) if param.ndim >= 3 else 1
            (after if behind else before).extend(_numbered(label, count))
    return before, after


def _check_patches_kept(model: Any) -> None:
    ratio = getattr(model.config, "mask_ratio", None)
    if isinstance(ratio, float) and ratio > 0:
        raise AttnscopeError(
            f"{type(model).__name__} drops a random {ratio:.0%} of the patches and shuffles "
            "the rest on every call (mask_ratio), so its tokens cannot be labelled with their "
            "patches; capture its encoder from a ViT-style model without random masking."
        )


def encode_image(model: Any, image: Any) -> Encoded:
    """Pixel input and one token per patch, with the model's own extra tokens around them.

    ``[CLS]``, a distillation token (DeiT), registers (DINOv2 with registers)
    go before the patches, detection tokens (YOLOS) after; a model with no
    class token (SigLIP, I-JEPA) has patches only.

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
    if getattr(config, "image_size", None) is None or getattr(config, "patch_size", None) is None:
        raise AttnscopeError(
            f"{type(model).__name__}'s config has no image_size and patch_size, so its "
            "tokens cannot be laid out as patches; attnscope shows ViT-style vision models "
            "(one token per patch of a fixed grid)."
        )
    _check_patches_kept(model)
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
        raise AttnscopeError(
            f"{type(model).__name__} reads images of shape ({channels}, {height}, {width}); "
            f"got {tuple(pixels.shape)}. Pass one image as pixel_values from the model's "
            "image processor (e.g. processor(img, return_tensors='pt').pixel_values)."
        )
    patch_h, patch_w = _size(config.patch_size)
    rows, cols = height // patch_h, width // patch_w
    before, after = _extra_tokens(model)
    patches = [f"patch {r},{c}" for r in range(rows) for c in range(cols)]
    labels = before + patches + after
    special: list[TokenKind] = ["special"]
    token: list[TokenKind] = ["token"]
    kinds = special * len(before) + token * len(patches) + special * len(after)
    tokens = Tokens(labels, kinds=kinds)
    inputs = {"pixel_values": pixels.to(torch.float32)}
    return Encoded(inputs, tokens, list(range(len(labels))), len(labels), len(labels))
