"""Leave a model exactly as it was found, whatever happens during a capture.

Capture switches the attention implementation of every config in the model,
adds hooks, puts the model in eval mode and registers functions with
transformers. :func:`preserved` records all of that first and puts it back on
the way out, also when the capture raises.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

# Hook dictionaries a capture may touch; each is restored to its recorded keys.
_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
)
# transformers installs its output-recording hooks once, lazily, and marks the
# model with this flag; removing the hooks means putting the flag back too, or
# the model would believe the hooks are still there.
_HOOKS_FLAG = "_output_capturing_hooks_installed"
_ABSENT = object()
_PLAIN = (str, int, float, bool, type(None))


def _settings(module: torch.nn.Module) -> dict[str, Any]:
    """A module's plain attributes (BigBird switches ``attention_type`` on short inputs)."""
    return {k: v for k, v in module.__dict__.items() if isinstance(v, _PLAIN)}


def _configs(model: torch.nn.Module) -> list[Any]:
    """Every config object reachable from the model: module configs and their sub-configs."""
    found: dict[int, Any] = {}
    pending: list[Any] = [m.config for m in model.modules() if hasattr(m, "config")]
    while pending:
        config = pending.pop()
        if config is None or id(config) in found or not hasattr(config, "sub_configs"):
            continue
        found[id(config)] = config
        pending.extend(getattr(config, key, None) for key in config.sub_configs)
    return list(found.values())


@contextmanager
def preserved(model: torch.nn.Module) -> Iterator[None]:
    """Restore attention implementations, hooks, modes, sub-modules and ``requires_grad``.

    Parameters
    ----------
    model
        Any ``torch.nn.Module``; configs are found on every sub-module that has one.

    Examples
    --------
    >>> import torch
    >>> layer = torch.nn.Linear(2, 2).train()
    >>> with preserved(layer):
    ...     _ = layer.eval()
    >>> layer.training
    True
    """
    configs = [(c, c.__dict__.get("_attn_implementation_internal")) for c in _configs(model)]
    modules = list(model.modules())
    modes = [m.training for m in modules]
    hooks = [{name: list(getattr(m, name, {})) for name in _HOOK_DICTS} for m in modules]
    flags = [m.__dict__.get(_HOOKS_FLAG, _ABSENT) for m in modules]
    # Some models rebuild their own sub-modules during a forward pass (BigBird swaps its
    # block-sparse attention for full attention on short inputs): put the originals back.
    children = [dict(m._modules) for m in modules]
    settings = [_settings(m) for m in modules]
    grads = [(p, p.requires_grad) for p in model.parameters()]
    try:
        yield
    finally:
        # Raw attribute writes: the property setter would also rewrite sub-configs,
        # which may have held different implementations of their own.
        for config, implementation in configs:
            config.__dict__["_attn_implementation_internal"] = implementation
        for module, mode, kept, flag, owned, plain in zip(
            modules, modes, hooks, flags, children, settings, strict=True
        ):
            module._modules.clear()
            module._modules.update(owned)
            module.__dict__.update(plain)
            module.training = mode
            if flag is _ABSENT:
                module.__dict__.pop(_HOOKS_FLAG, None)
            else:
                module.__dict__[_HOOKS_FLAG] = flag
            for name, keys in kept.items():
                table = getattr(module, name, None)
                if table is None:
                    continue
                for key in [k for k in table if k not in keys]:
                    del table[key]
        for param, flag in grads:
            if param.requires_grad != flag:
                param.requires_grad_(flag)
