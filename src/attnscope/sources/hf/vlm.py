"""A prompt with images for a vision-language model: checked, processed, its image tokens placed.

Everything that can be wrong with the arguments is found before the
processor or the model runs: images of a kind no processor takes, a processor
without an image processor, a model that takes no images, and a text whose
image placeholders do not match the number of images.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.sources.hf.chat import is_chat
from attnscope.sources.hf.checks import check_length, position_limit
from attnscope.sources.hf.generate import GenerationPlan, check_room
from attnscope.sources.hf.image_input import prepare_images
from attnscope.sources.hf.image_layout import Layout
from attnscope.sources.hf.image_readers import read_layouts
from attnscope.sources.hf.loading import local_only
from attnscope.sources.hf.tokenize import Encoded, tokens_for_ids
from attnscope.trace import TokenKind, Tokens
from attnscope.trace.images import ImageRegion


def _is_image(value: Any) -> bool:
    if isinstance(value, np.ndarray | torch.Tensor):
        return value.ndim in (2, 3)
    return type(value).__module__.startswith("PIL.") and hasattr(value, "size")


def check_images(images: Any) -> list[Any]:
    """``images`` as a list of images (PIL, numpy or tensor), refusing anything else.

    Examples
    --------
    >>> len(check_images(np.zeros((4, 4, 3), np.uint8)))
    1
    >>> check_images("cat.png")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: images= takes a PIL image, a numpy array or tensor ...
    """
    found = list(images) if isinstance(images, list | tuple) else [images]
    bad = [i for i, image in enumerate(found) if not _is_image(image)]
    if not found or bad:
        what = "an empty list" if not found else f"{type(found[bad[0]]).__name__} at {bad[0]}"
        raise AttnscopeTypeError(
            "images= takes a PIL image, a numpy array or tensor (height, width, channels) or "
            f"(channels, height, width), or a list of them; got {what}. Open files first, "
            "e.g. PIL.Image.open(path)."
        )
    return found


def load_processor(model: Any, processor: Any) -> Any:
    """``processor``, or the model's own loaded from its name; refused unless it takes images.

    Examples
    --------
    >>> load_processor(None, object())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: processor= object has no image processor, so it cannot ...
    """
    if processor is None:
        from transformers import AutoProcessor

        name = str(getattr(model, "name_or_path", "") or "")
        if not name:
            raise AttnscopeError(
                f"images= needs the model's processor, and this {type(model).__name__} has no "
                "name_or_path to load it from (built in memory); pass processor=<its processor>."
            )
        try:
            processor = AutoProcessor.from_pretrained(  # type: ignore[no-untyped-call]
                name, local_files_only=local_only(name)
            )
        except (OSError, ValueError) as err:
            raise AttnscopeError(
                f"images= needs the model's processor and none could be loaded from "
                f"{name!r} ({str(err).splitlines()[0] if str(err) else type(err).__name__}); "
                "pass processor=AutoProcessor.from_pretrained(<model name>)."
            ) from None
    if getattr(processor, "image_processor", None) is None or not callable(processor):
        raise AttnscopeError(
            f"processor= {type(processor).__name__} has no image processor, so it cannot take "
            "images; pass the model's multimodal processor "
            "(AutoProcessor.from_pretrained(<model name>)), not its tokenizer."
        )
    return processor


def image_token_id(model: Any) -> int:
    """The id of the token each image's features replace, from the model's config.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> image_token_id(NS(config=NS(image_token_id=7)))
    7
    """
    config = model.config
    for name in ("image_token_id", "image_token_index"):
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    raise AttnscopeError(
        f"{type(model).__name__} takes no images: its config has no image_token_id (or "
        "image_token_index). Pass images= only to a vision-language model (LLaVA, Qwen2-VL, "
        "...), loaded with its image-text class (e.g. AutoModelForImageTextToText)."
    )


def check_placeholders(text: Any, images: Sequence[Any], processor: Any) -> None:
    """Raise unless ``text`` holds one image placeholder per image.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> check_placeholders("a <image> b", [0, 1], NS(image_token="<image>"))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: the text has 1 image placeholder(s) '<image>' but 2 ...
    """
    if not isinstance(text, str):
        raise AttnscopeTypeError(
            f"with images=, text must be one string with the image placeholders or chat "
            f"messages; got {type(text).__name__}."
        )
    token = getattr(processor, "image_token", None)
    if not isinstance(token, str) or not token:
        raise AttnscopeError(
            f"{type(processor).__name__} does not say its image placeholder (image_token), so "
            "attnscope cannot check the text against the images; pass the model's own processor."
        )
    found = text.count(token)
    if found != len(images):
        raise AttnscopeError(
            f"the text has {found} image placeholder(s) {token!r} but {len(images)} image(s) "
            f"were given; put one {token!r} in the text where each image goes, in order."
        )


def render_chat(processor: Any, messages: Sequence[Any], *, generate: bool) -> str:
    """Chat messages with images as the processor's chat template renders them.

    Image entries of a message's content (``{"type": "image"}``) become the
    template's image placeholders; the images themselves come from ``images=``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> render_chat(NS(chat_template=None), [{"role": "user", "content": "Hi"}], generate=False)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: chat messages with images= need the processor's chat ...
    """
    if not getattr(processor, "chat_template", None):
        raise AttnscopeError(
            "chat messages with images= need the processor's chat template, and "
            f"{type(processor).__name__} has none; pass the prompt as one string with the "
            "image placeholders, or a processor with a chat_template."
        )
    try:
        rendered = processor.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=generate
        )
    except (TypeError, ValueError, KeyError) as err:
        raise AttnscopeError(
            f"the processor's chat template cannot render these messages ({err}); give each "
            'message a "role" and a "content" list of {"type": "text", "text": ...} and '
            '{"type": "image"} entries.'
        ) from None
    return str(rendered[0] if isinstance(rendered, list) else rendered)


def _image_tokens(ids: Sequence[int], token: int) -> list[int]:
    return [i for i, t in enumerate(ids) if t == token]


def place_images(
    ids: Sequence[int], token: int, layouts: list[Layout] | str
) -> tuple[list[ImageRegion], str | None]:
    """Each image's :class:`ImageRegion`, or none and why, given the image tokens' positions.

    Examples
    --------
    >>> grid = Layout(2, (1, 2), [0, 1], np.zeros((2, 4, 3), np.uint8))
    >>> [r.positions for r in place_images([5, 9, 9, 5], 9, [grid])[0]]
    [(1, 2)]
    >>> place_images([5, 9, 5], 9, [grid])[1]
    'the layout says 2 image tokens but the sequence has 1'
    """
    if isinstance(layouts, str):
        return [], layouts
    positions = _image_tokens(ids, token)
    wanted = sum(layout.count for layout in layouts)
    if wanted != len(positions):
        return [], f"the layout says {wanted} image tokens but the sequence has {len(positions)}"
    regions: list[ImageRegion] = []
    start = 0
    for layout in layouts:
        regions.append(layout.region(positions[start : start + layout.count]))
        start += layout.count
    return regions, None


_SHORT_NAMES = {"overview": "ov"}
"""Names of extra grids as token labels say them."""


def _labelled(tokens: Tokens, regions: Sequence[ImageRegion]) -> Tokens:
    """Image tokens labelled by image and grid cell (``img0 r1c2``), and kind ``token``.

    Rows and columns count from 0, as ``trace.images`` and the image view do; an
    overview grid is ``ov`` (``img0 ov r0c1``: short enough for the head view's
    16 characters), another extra run with a grid its name, one without a grid
    its order (``img0 class``, ``img0 class 2``).
    """
    labels, kinds = list(tokens.labels), list(tokens.kinds)
    for n, region in enumerate(regions):
        cols = region.grid[1]
        for i, p in enumerate(region.positions):
            labels[p] = f"img{n} r{i // cols}c{i % cols}"
        for name, run in region.extra.items():
            grid = region.extra_grids.get(name)
            for i, p in enumerate(run):
                if grid is not None and len(run) == grid[0] * grid[1]:
                    short = _SHORT_NAMES.get(name, name)
                    labels[p] = f"img{n} {short} r{i // grid[1]}c{i % grid[1]}"
                else:
                    labels[p] = f"img{n} {name}" + (f" {i}" if len(run) > 1 else "")
        for p in region.all_positions():
            kinds[p] = "token"
    token_kinds: list[TokenKind] = kinds
    return Tokens(labels, tokens.raw, token_kinds, tokens.segments)


def encode_with_images(
    model: Any, processor: Any, text: str, images: Sequence[Any], token: int
) -> tuple[Encoded, list[ImageRegion], list[str]]:
    """Run the processor; return the encoded prompt, the images' regions and notes.

    The caller has checked the arguments (:func:`check_images`,
    :func:`load_processor`, :func:`image_token_id`, :func:`check_placeholders`).
    """
    encoding = processor(text=text, images=list(images), return_tensors="pt", padding=False)
    ids = [int(i) for i in encoding["input_ids"][0]]
    tokenizer = processor.tokenizer
    regions, why = place_images(ids, token, read_layouts(model, processor, encoding, images))
    notes = []
    if why is not None:
        notes.append(
            f"image tokens are shown as plain tokens: {why}, so they cannot be placed on "
            "their images."
        )
    tokens = _labelled(tokens_for_ids(tokenizer, ids), regions)
    mask = encoding.get("attention_mask")
    keep = [i for i in range(len(ids)) if mask is None or int(mask[0, i])]
    if len(keep) != len(ids):
        raise AttnscopeError(
            f"{type(processor).__name__} padded the prompt with {len(ids) - len(keep)} tokens "
            "although attnscope asked for no padding; give it a tokenizer that does not pad "
            "by itself (its padding settings), or pass the prompt's tokens without padding."
        )
    # PaliGemma's processor adds training labels: the forward would compute a loss from them
    inputs = {k: v for k, v in encoding.items() if isinstance(v, torch.Tensor) and k != "labels"}
    return Encoded(inputs, tokens, keep, len(ids), len(ids)), regions, notes


def encode_prompt_with_images(
    model: Any,
    text: Any,
    images: Any,
    processor: Any,
    *,
    text_pair: str | None,
    max_tokens: int | None,
    plan: GenerationPlan | None,
) -> tuple[Encoded, Any, list[ImageRegion], list[str]]:
    """Check everything, then process ``text`` and ``images`` for one forward pass.

    Returns the encoded prompt, the tokenizer (for generated tokens), each
    image's region (none when the layout cannot be read) and notes.
    """
    found, scaled = prepare_images(check_images(images))
    if text_pair is not None:
        raise AttnscopeTypeError(
            "text_pair= is sentence B of a text pair; with images= leave it out."
        )
    token = image_token_id(model)  # before loading anything: a model that takes no images
    processor = load_processor(model, processor)
    if is_chat(text):
        text = render_chat(processor, text, generate=plan is not None)
    check_placeholders(text, found, processor)
    encoded, regions, notes = encode_with_images(model, processor, text, found, token)
    notes = [*scaled, *notes]
    if max_tokens is not None and encoded.length > max_tokens:
        raise AttnscopeError(
            f"the prompt with its images has {encoded.length} tokens, over max_tokens="
            f"{max_tokens}; image tokens cannot be cut. Raise max_tokens or use smaller images."
        )
    check_length(encoded.length, position_limit(model.config), "the prompt with its images")
    check_room(encoded.length, plan, position_limit(model.config))
    return encoded, processor.tokenizer, regions, notes
