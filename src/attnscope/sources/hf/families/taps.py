"""Forward hooks that note what an attention module saw, removed however the run ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils.hooks import RemovableHandle

Notes = dict[str, Any]
Taps = Callable[[torch.nn.Module, Notes], list[RemovableHandle]]


def attention_modules(model: torch.nn.Module, class_name: str) -> list[torch.nn.Module]:
    """The modules of class ``class_name`` in the order the model runs its layers.

    Examples
    --------
    >>> import torch
    >>> len(attention_modules(torch.nn.Sequential(torch.nn.Linear(1, 1)), "Linear"))
    1
    """
    return [m for m in model.modules() if type(m).__name__ == class_name]


@contextmanager
def tapped(
    modules: Sequence[torch.nn.Module],
    taps: Taps,
) -> Iterator[list[Notes]]:
    """Call ``taps(module, notes)`` for each module to add hooks; remove them all on exit.

    Yields one ``notes`` dict per module, filled by the hooks during the run.

    Examples
    --------
    >>> import torch
    >>> lin = torch.nn.Linear(1, 1)
    >>> def taps(m, notes):
    ...     return [m.register_forward_hook(lambda *a: notes.update(ran=True))]
    >>> with tapped([lin], taps) as notes:
    ...     _ = lin(torch.ones(1))
    >>> notes, len(lin._forward_hooks)
    ([{'ran': True}], 0)
    """
    notes: list[Notes] = [{} for _ in modules]
    handles: list[RemovableHandle] = []
    try:
        for module, note in zip(modules, notes, strict=True):
            handles.extend(taps(module, note))
        yield notes
    finally:
        for handle in handles:
            handle.remove()


def keep_output(notes: Notes, key: str, index: int | None = None) -> Callable[..., None]:
    """A forward hook that stores the module's output (or ``output[index]``) in ``notes[key]``.

    Examples
    --------
    >>> notes = {}
    >>> keep_output(notes, "out", 1)(None, (), ("a", "b"))
    >>> notes
    {'out': 'b'}
    """

    def hook(module: torch.nn.Module, args: Any, output: Any) -> None:
        notes[key] = output if index is None else output[index]

    return hook


def keep_kwargs(notes: Notes, *keys: str) -> Callable[..., None]:
    """A forward pre-hook (``with_kwargs=True``) that stores the named keyword arguments.

    Examples
    --------
    >>> notes = {}
    >>> keep_kwargs(notes, "alibi")(None, (), {"alibi": 1, "other": 2})
    >>> notes
    {'alibi': 1}
    """

    def hook(module: torch.nn.Module, args: Any, kwargs: dict[str, Any]) -> None:
        notes.update({k: kwargs.get(k) for k in keys})

    return hook


def run_tapped(
    model: torch.nn.Module,
    class_name: str,
    inputs: Mapping[str, torch.Tensor],
    layers: Sequence[int] | None,
    taps: Taps,
) -> list[tuple[int, torch.nn.Module, Notes]]:
    """Run ``model`` once with ``taps`` on the chosen layers' ``class_name`` modules.

    Returns ``(layer, module, notes)`` for each tapped layer.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Linear(1, 1))
    >>> def taps(m, notes):
    ...     return [m.register_forward_hook(keep_output(notes, "out"))]
    >>> [layer for layer, _, _ in run_tapped(model, "Linear", {"input": torch.ones(1)}, [1], taps)]
    [1]
    """
    modules = attention_modules(model, class_name)
    chosen = [i for i in range(len(modules)) if layers is None or i in layers]
    with tapped([modules[i] for i in chosen], taps) as notes:
        model(**inputs, **({"use_cache": False} if hasattr(model, "config") else {}))
    return [(i, modules[i], n) for i, n in zip(chosen, notes, strict=True)]
