"""Argument checks for :func:`~attnscope.sources.hf.capture`, run before any work is done."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from attnscope.errors import AttnscopeError, AttnscopeIndexError, AttnscopeTypeError

# Models whose learned positions start after the padding index (RoBERTa's scheme).
_OFFSET_POSITIONS = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text"}


def layer_count(config: Any) -> int:
    """The number of layers of the deepest stack (encoder or decoder).

    Examples
    --------
    >>> from transformers import T5Config
    >>> layer_count(T5Config(num_layers=2, num_decoder_layers=3))
    3
    >>> from transformers import LlavaConfig
    >>> layer_count(LlavaConfig(text_config={"model_type": "llama", "num_hidden_layers": 5}))
    5
    """
    names = (
        "num_hidden_layers",
        "num_layers",
        "n_layer",
        "encoder_layers",
        "decoder_layers",
        "num_decoder_layers",
    )
    counts = [getattr(config, n, None) for n in names]
    found = max((c for c in counts if isinstance(c, int)), default=0)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if not found and text is not config:  # a vision-language model: its language model's layers
        return layer_count(text)
    return found


def check_layers(layers: Sequence[int] | None, count: int) -> list[int] | None:
    """Sorted distinct layer indices, or None for all; each must lie in ``0..count-1``.

    Examples
    --------
    >>> check_layers([3, 1, 3], 4)
    [1, 3]
    >>> check_layers([4], 4)
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeIndexError: layers=[4] names layer 4, but the model has 4 ...
    """
    if layers is None:
        return None
    if isinstance(layers, int) or not all(isinstance(i, int) for i in layers):
        raise AttnscopeTypeError(f"layers must be a list of layer indices (ints); got {layers!r}.")
    chosen = sorted(set(layers))
    if not chosen:
        raise AttnscopeError("layers is empty; pass layer indices, or leave it out for all layers.")
    bad = [i for i in chosen if not 0 <= i < count]
    if bad:
        raise AttnscopeIndexError(
            f"layers={list(layers)} names layer {bad[0]}, but the model has {count} layers: "
            f"valid indices are 0..{count - 1}."
        )
    return chosen


def check_text(text: Any, what: str = "text") -> str:
    """``text`` must be a non-empty string.

    Examples
    --------
    >>> check_text("  ")
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: text is empty; pass the sentence to run through the model.
    """
    if isinstance(text, list | tuple) and not text:
        raise AttnscopeError(f"{what} is an empty list; pass a sentence, chat messages or ids.")
    if not isinstance(text, str):
        also = ", chat messages or token ids" if what == "text" else ""
        raise AttnscopeTypeError(f"{what} must be a string{also}; got {type(text).__name__}.")
    if not text.strip():
        raise AttnscopeError(f"{what} is empty; pass the sentence to run through the model.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise AttnscopeError(
            f"{what} holds a lone surrogate U+{ord(text[err.start]):04X} at index {err.start}, "
            "half of a character that no tokenizer can encode (it comes from text decoded "
            "with errors='surrogateescape' or from a split emoji). Mend it first: "
            f"{what}.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace') rejoins "
            "split pairs and replaces the rest with U+FFFD."
        ) from None
    return text


def check_max_tokens(max_tokens: int | None) -> None:
    """``max_tokens`` is None or a positive int.

    Examples
    --------
    >>> check_max_tokens(0)
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: max_tokens must be a positive number of tokens; got 0.
    """
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise AttnscopeError(f"max_tokens must be a positive number of tokens; got {max_tokens!r}.")


def position_limit(config: Any) -> int | None:
    """How many tokens the model's learned positions cover, or None when unbounded.

    Examples
    --------
    >>> from transformers import RobertaConfig
    >>> position_limit(RobertaConfig(max_position_embeddings=514))
    512
    """
    limit = getattr(config, "max_position_embeddings", None)
    # DeBERTa-v3 keeps the field but adds no absolute positions: nothing runs out.
    # XLNet answers -1: its relative positions have no limit.
    if (
        not isinstance(limit, int)
        or limit <= 0
        or getattr(config, "position_biased_input", True) is False
    ):
        return None
    if getattr(config, "model_type", "") in _OFFSET_POSITIONS:
        limit -= int(getattr(config, "pad_token_id", 1) or 0) + 1
    return limit


def check_length(length: int, limit: int | None, what: str = "text") -> None:
    """Raise when ``length`` tokens exceed the model's ``limit``.

    Examples
    --------
    >>> check_length(600, 512)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: text is 600 tokens long ... at most 512 positions; pass ...
    """
    if limit is not None and length > limit:
        raise AttnscopeError(
            f"{what} is {length} tokens long but the model takes at most {limit} positions; "
            f"pass max_tokens={limit} to truncate it."
        )


def _recorded_classes(model: Any) -> tuple[type, ...]:
    """The module classes whose weights transformers returns as ``attentions``.

    Composite models (a vision tower beside a language model) declare them on
    their sub-models, so every module is asked.
    """
    found: list[type] = []
    for module in model.modules():
        for key, targets in (getattr(module, "_can_record_outputs", None) or {}).items():
            if "attention" not in key:
                continue
            for target in targets if isinstance(targets, list | tuple) else [targets]:
                cls = getattr(target, "target_class", target)  # an OutputRecorder names one
                if isinstance(cls, type):
                    found.append(cls)
    return tuple(found)


def check_has_attention(model: Any) -> None:
    """Raise when no module of the model returns attention weights.

    Attention layers are found by what they do, not by their names: the
    modules transformers records as ``attentions`` (multi-latent attention
    classes such as LongCat-Flash's are not called *Attention), or a forward
    that takes ``output_attentions`` (older model code).

    Examples
    --------
    >>> import torch
    >>> check_has_attention(torch.nn.Linear(2, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: Linear has no attention layers ...
    """
    recorded = _recorded_classes(model)
    if recorded and any(isinstance(m, recorded) for m in model.modules()):
        return
    forward = getattr(model, "forward", None)
    if callable(forward) and "output_attentions" in inspect.signature(forward).parameters:
        return
    raise AttnscopeError(
        f"{type(model).__name__} has no attention layers (none of its modules returns "
        "attention weights: a state-space, recurrent or convolutional model, or a hybrid "
        "configured without attention layers), so there is no attention to capture."
    )
