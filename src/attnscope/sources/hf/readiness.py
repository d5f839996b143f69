"""Checks that a model can run the encoded input at all, made before the forward pass.

A model whose weights were never loaded (on the ``meta`` device) or a
tokenizer that makes ids the model's embedding has no row for would fail deep
inside the forward pass, or silently read garbage; both are refused here
with the fix. Models dispatched by accelerate (``device_map=``, CPU or disk
offload) keep offloaded weights on ``meta`` between calls and load them in
their hooks: they are ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from attnscope.errors import AttnscopeError


def _offloaded(module: torch.nn.Module) -> bool:
    """True when accelerate's hook on ``module`` loads its weights for each call."""
    hook = getattr(module, "_hf_hook", None)
    if hook is None:
        return False
    hooks = getattr(hook, "hooks", None)  # a SequentialHook holds several
    return any(getattr(h, "offload", False) for h in hooks) if hooks else bool(hook.offload)


def check_weights_loaded(model: torch.nn.Module) -> None:
    """Raise when a parameter is on the ``meta`` device with nothing to load it.

    Examples
    --------
    >>> with torch.device("meta"):
    ...     layer = torch.nn.Linear(2, 2)
    >>> check_weights_loaded(layer)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: Linear's weight is on the meta device...
    """
    for name, module in model.named_modules():
        empty = [n for n, p in module.named_parameters(recurse=False) if p.device.type == "meta"]
        if empty and not _offloaded(module):
            where = f"{name}.{empty[0]}" if name else empty[0]
            raise AttnscopeError(
                f"{type(model).__name__}'s {where} is on the meta device: the model's "
                "weights were never loaded, so it has nothing to compute with. Load it with "
                "from_pretrained(...) (device_map= and offloading work), or call "
                "model.to_empty(device='cpu') and load a state dict first."
            )


def check_token_ids(model: Any, inputs: Mapping[str, torch.Tensor]) -> None:
    """Raise when an input id has no row in the model's input embedding.

    Examples
    --------
    >>> from transformers import BertConfig, BertModel
    >>> model = BertModel(BertConfig(num_hidden_layers=1, hidden_size=8, num_attention_heads=2,
    ...                              intermediate_size=8, vocab_size=16))
    >>> check_token_ids(model, {"input_ids": torch.tensor([[1, 20]])})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: the tokenizer made token id 20, but BertModel's ...
    """
    ids = inputs.get("input_ids")
    try:
        embedding = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return
    rows = getattr(embedding, "num_embeddings", None)
    if ids is None or not isinstance(rows, int) or ids.numel() == 0:
        return
    top = int(ids.max())
    if top >= rows:
        raise AttnscopeError(
            f"the tokenizer made token id {top}, but {type(model).__name__}'s input "
            f"embedding has {rows} rows (ids 0..{rows - 1}); the tokenizer does not belong "
            "to this model. Pass the model's own tokenizer as tokenizer=."
        )
