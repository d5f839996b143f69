"""Refuse a layer or head the model does not have, from its config, before any capture runs.

:func:`attnscope.sources.resolve.resolve_trace` calls this for a model or a
model name, so ``show_head_view(model, text, layer=99)`` fails at once
instead of after the model ran.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attnscope.errors import AttnscopeError

# Where configs keep their layer and head counts (GPT-2's n_layer, T5's num_decoder_layers ...).
_LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
               "decoder_layers", "num_decoder_layers")  # fmt: skip
_HEAD_KEYS = ("num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads",
              "decoder_attention_heads")  # fmt: skip


def check_against_config(source: Any, build: Mapping[str, Any], widget: Mapping[str, Any]) -> None:
    """Refuse ``layer``, ``head`` or ``heads`` beyond every stream the model has, before capture.

    The counts come from the model's config (a loaded model, or a local
    folder's ``config.json``): the largest layer and head counts of any of its
    stacks, so nothing a stream allows is refused; the widget checks each
    stream exactly once the trace exists. With ``layers=`` the positions are
    that many. A source whose config cannot be read here is not checked.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(config={"num_hidden_layers": 6, "num_attention_heads": 12})
    >>> check_against_config(model, {}, {"layer": 5, "head": 11})
    >>> check_against_config(model, {}, {"layer": 9})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: layer=9 is out of range: the model has 6 layers, ...
    """
    config = _config_dict(source)
    if not config:
        return
    found = [config, *(v for v in config.values() if isinstance(v, dict))]
    layers = max((c[k] for c in found for k in _LAYER_KEYS if _is_count(c.get(k))), default=0)
    heads = max((c[k] for c in found for k in _HEAD_KEYS if _is_count(c.get(k))), default=0)
    chosen = build.get("layers")
    has = f"the model has {layers} layers"
    if isinstance(chosen, Sequence) and not isinstance(chosen, str) and layers:
        layers = len(chosen)
        has = f"layers={list(chosen)} keeps {layers}"
    layer = widget.get("layer")
    if layers and isinstance(layer, int) and not 0 <= layer < layers:
        raise AttnscopeError(
            f"layer={layer} is out of range: {has}, positions 0..{layers - 1} (layer is a "
            "position among the layers captured); pass a layer in that range."
        )
    asked = [widget.get("head"), *(widget.get("heads") or [])]
    bad = [h for h in asked if isinstance(h, int) and heads and not 0 <= h < heads]
    if bad:
        raise AttnscopeError(
            f"head(s) {bad} out of range: the model has {heads} attention heads (0..{heads - 1}); "
            "pass head= / heads= within that, or heads=None for all."
        )


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _config_dict(source: Any) -> dict[str, Any]:
    """The config of a loaded model, or of a local model folder; {} when there is none here."""
    config = getattr(source, "config", None)
    if config is not None:
        if isinstance(config, dict):
            return config
        to_dict = getattr(config, "to_dict", None)
        return dict(to_dict()) if callable(to_dict) else {}
    if isinstance(source, str | os.PathLike):
        path = Path(source) / "config.json"
        if path.is_file():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return {}
            return loaded if isinstance(loaded, dict) else {}
    return {}
