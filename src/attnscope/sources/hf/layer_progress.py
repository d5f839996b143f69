"""A progress bar over a model's layers while capture runs its forward pass.

A long input (thousands of tokens) makes the forward pass the part of a
capture that takes seconds; the bar ticks as each layer finishes, appears only
after :data:`attnscope._progress.DELAY` seconds and leaves nothing in the cell.
The hooks it adds are removed when the block ends, also after an exception.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from attnscope._progress import progress


def layer_blocks(model: torch.nn.Module, count: int) -> list[torch.nn.Module]:
    """The model's layers: every member of a ``ModuleList`` that holds ``count`` modules.

    An encoder–decoder model has two such lists, so its pass ticks twice per layer number.

    Examples
    --------
    >>> stack = torch.nn.Sequential(torch.nn.ModuleList([torch.nn.Linear(2, 2)] * 3))
    >>> len(layer_blocks(stack, 3)), len(layer_blocks(stack, 4))
    (3, 0)
    """
    return [
        block
        for module in model.modules()
        if isinstance(module, torch.nn.ModuleList) and len(module) == count
        for block in module
    ]


@contextmanager
def layer_progress(model: torch.nn.Module, count: int) -> Iterator[None]:
    """Tick a bar as each of the model's ``count`` layers finishes, for the block's passes.

    Examples
    --------
    >>> layers = torch.nn.ModuleList([torch.nn.Identity(), torch.nn.Identity()])
    >>> with layer_progress(layers, 2):
    ...     _ = [layer(torch.zeros(1)) for layer in layers]
    >>> [len(layer._forward_hooks) for layer in layers]  # the hooks are gone
    [0, 0]
    """
    blocks = layer_blocks(model, count)
    if not blocks:
        yield
        return
    with progress(len(blocks), "attnscope capture", unit="layer") as bar:

        def tick(*_: Any) -> None:
            if bar.n >= bar.total:  # a new pass (after the short probe, or a fallback)
                bar.reset()  # counts this pass's layers: 6/6 for 6 layers, not 12/12
            bar.update(1)

        handles = [block.register_forward_hook(tick) for block in blocks]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()
