"""One forward pass with hooks that keep two positions of every tensor :func:`qk_sources` needs.

Nothing of size N x N, nor N x d, is kept: each hook copies the rows of the
query and the key position (float64, on the CPU) and the pass stops as soon
as the chosen layer's attention has run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attnscope.analysis.qk_families import Tap
from attnscope.analysis.qk_linear import as64

if TYPE_CHECKING:
    import torch


class _StopError(Exception):
    """Raised by the last hook: everything needed has been seen."""


def _first_tensor(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    if args:
        return args[0]
    return kwargs.get("hidden_states", next(iter(kwargs.values()), None))


def _rows(tensor: Any, positions: list[int]) -> torch.Tensor:
    if isinstance(tensor, tuple):
        tensor = tensor[0]
    return as64(tensor[0, positions])


def record(
    model: Any,
    inputs: Mapping[str, torch.Tensor],
    taps: Sequence[Tap],
    stop_at: Any,
    positions: list[int],
) -> dict[str, torch.Tensor]:
    """Run ``model(**inputs)`` once; return each tap's rows at ``positions`` by its key.

    The hooks are removed on the way out, also when the model raises.
    """
    import torch

    seen: dict[str, torch.Tensor] = {}
    handles: list[Any] = []

    def tap_hook(tap: Tap) -> Any:
        if tap.kind == "out":

            def after(_module: Any, _args: Any, output: Any) -> None:
                seen[tap.key] = _rows(output, positions)

            return tap.module.register_forward_hook(after)

        def before(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if tap.kind == "in":
                seen[tap.key] = _rows(_first_tensor(args, kwargs), positions)
            else:  # rope: the (cos, sin) the attention was given
                pair = kwargs.get("position_embeddings", args[1] if len(args) > 1 else None)
                if pair is not None:
                    seen["rope.cos"] = _rows(pair[0], positions)
                    seen["rope.sin"] = _rows(pair[1], positions)

        return tap.module.register_forward_pre_hook(before, with_kwargs=True)

    def stop(_module: Any, _args: Any, _output: Any) -> None:
        raise _StopError

    try:
        for tap in taps:
            handles.append(tap_hook(tap))
        handles.append(stop_at.register_forward_hook(stop))
        with torch.no_grad(), contextlib.suppress(_StopError):
            model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    return seen
