"""Which attention layers' keys are not the input tokens, read from the model's structure.

Some layers attend to keys that summarise several tokens (DeepSeek-V4's
compressed sparse and heavily compressed attention append one key per window
of ``compress_rate`` tokens). At some input lengths the number of such keys
happens to equal the number of tokens, so a count cannot tell them apart:
the answer is read from the attention module itself (a compressor submodule,
a compression or pooling rate above 1) and holds at every length.
"""

from __future__ import annotations

import re
from typing import Any

import torch

_COMPRESSING = re.compile(r"(?<!de)compress|kv_pool|key_pool", re.IGNORECASE)
"""Attribute names of an attention module that make keys from several tokens."""

Scope = str
"""``"encoder"`` for modules under an encoder, ``"decoder"`` for the rest."""


def _compressing_part(module: torch.nn.Module) -> str:
    """``Class.attribute`` of the part of ``module`` that compresses its keys, or ``""``."""
    for name, value in vars(module).items():
        if name == "_modules":
            continue
        if _COMPRESSING.search(name) and _is_rate(value):
            return f"{type(module).__name__}.{name} = {value}"
    for name, child in module.named_children():
        if child is not None and _COMPRESSING.search(name + type(child).__name__):
            return f"{type(module).__name__}.{name} ({type(child).__name__})"
    return ""


def _is_rate(value: Any) -> bool:
    """A compression rate that merges tokens: a number above 1."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 1


def _layer_of(path: str) -> int | None:
    """The layer index in a module path (``model.layers.3.self_attn`` -> 3)."""
    found = re.search(r"\.(\d+)(?:\.|$)", path)
    return int(found.group(1)) if found else None


def compressed_key_layers(model: torch.nn.Module) -> dict[tuple[Scope, int], str]:
    """``(scope, layer) -> what compresses the keys`` for every attention layer that does.

    Only attention modules are asked (those with an ``o_proj``/``out_proj`` or
    a ``layer_idx``, as transformers' attention classes have), so a
    compressor elsewhere (an MLA low-rank projection names no compressor) does
    not count.

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaModel
    >>> config = LlamaConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1,
    ...                      intermediate_size=16, vocab_size=10)
    >>> compressed_key_layers(LlamaModel(config))
    {}
    """
    found: dict[tuple[Scope, int], str] = {}
    for path, module in model.named_modules():
        if not _is_attention(module):
            continue
        part = _compressing_part(module)
        layer = getattr(module, "layer_idx", None)
        layer = layer if isinstance(layer, int) else _layer_of(path)
        if part and layer is not None:
            scope = "encoder" if "encoder" in path.split(".") else "decoder"
            found[(scope, layer)] = part
    return found


def _is_attention(module: torch.nn.Module) -> bool:
    names = dict(module.named_children())
    return "Attention" in type(module).__name__ and (
        "o_proj" in names or "out_proj" in names or hasattr(module, "layer_idx")
    )


def stream_scope(stream: str) -> Scope:
    """The scope whose modules compute ``stream`` (``"encoder"`` or ``"decoder"``).

    Examples
    --------
    >>> stream_scope("encoder"), stream_scope("self"), stream_scope("cross")
    ('encoder', 'decoder', 'decoder')
    """
    return "encoder" if stream == "encoder" else "decoder"


def without_compressed(
    name: str, calls: Any, compressed: dict[tuple[Scope, int], str]
) -> tuple[list[Any], list[str]]:
    """``calls`` of stream ``name`` less the layers whose keys are compressed, and a note.

    ``calls`` are ``(layer, call)`` pairs; ``compressed`` is
    :func:`compressed_key_layers` of the model.

    Examples
    --------
    >>> kept, notes = without_compressed("self", [(0, "a"), (1, "b")],
    ...                                  {("decoder", 1): "Attn.compressor (Compressor)"})
    >>> kept
    [(0, 'a')]
    >>> print(notes[0])  # doctest: +ELLIPSIS
    self: layer 1 not shown: its keys are compressed (Attn.compressor (Compressor)): ...
    """
    scope = stream_scope(name)
    kept = [(layer, call) for layer, call in calls if (scope, layer) not in compressed]
    left = [layer for layer, _ in calls if (scope, layer) in compressed]
    if not left:
        return kept, []
    parts = sorted({compressed[(scope, layer)] for layer in left})
    listing = ("layer " if len(left) == 1 else "layers ") + ", ".join(map(str, sorted(left)))
    their = "its" if len(left) == 1 else "their"
    return kept, [
        f"{name}: {listing} not shown: {their} keys are compressed ({'; '.join(parts)}): each key "
        "summarises several tokens, so the keys cannot be labelled with tokens at any length."
    ]
