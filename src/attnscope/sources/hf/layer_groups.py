"""Recorded layers of one kind of attention, grouped into streams that each hold one shape.

A model's layers need not agree in shape: some change the number of heads
from layer to layer, some pool the sequence between layers (Funnel) or
attend to compressed keys. A stream is a regular ``(layers, heads, q, k)``
array, so layers are grouped by ``(heads, q_len, k_len)``; a group whose
queries or keys are not the input tokens cannot be labelled and is left out
with a note. Differences in ``head_dim`` or key heads do not split a group
(see :mod:`attnscope.sources.hf.streams`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attnscope.sources.hf.recorder import AttentionCall

Calls = Sequence[tuple[int, AttentionCall]]


@dataclass(frozen=True)
class Axis:
    """The positions the model saw on one side of attention, and those the trace keeps.

    Examples
    --------
    >>> Axis(5, (0, 1, 2)).kept, Axis(5).kept
    (3, 5)
    """

    length: int
    keep: tuple[int, ...] | None = None

    @property
    def kept(self) -> int:
        """How many positions the trace shows."""
        return self.length if self.keep is None else len(self.keep)


@dataclass(frozen=True)
class Group:
    """Layers of one shape, shown as one stream called ``name``."""

    name: str
    calls: tuple[tuple[int, AttentionCall], ...]

    @property
    def layers(self) -> list[int]:
        """The model's index of each layer in the group."""
        return [layer for layer, _ in self.calls]


def _shape(call: AttentionCall) -> tuple[int, ...]:
    """(heads, q_len, k_len) of a call: from its weights, or from its q and k."""
    if call.weights is not None:
        return tuple(call.weights.shape)
    if call.query is not None and call.key is not None:
        return (int(call.query.shape[0]), int(call.query.shape[1]), int(call.key.shape[1]))
    return ()


def _listing(layers: Sequence[int]) -> str:
    return ("layer " if len(layers) == 1 else "layers ") + ", ".join(str(i) for i in layers)


def group_layers(name: str, calls: Calls, rows: Axis, cols: Axis) -> tuple[list[Group], list[str]]:
    """Split ``calls`` into groups of one shape; say in notes what could not be shown.

    The group holding the first layer keeps ``name``; another with a
    different head count becomes ``name-<heads>heads``.

    Examples
    --------
    >>> import torch
    >>> calls = [(0, AttentionCall(weights=torch.full((2, 3, 3), 1 / 3))),
    ...          (1, AttentionCall(weights=torch.full((4, 3, 3), 1 / 3))),
    ...          (2, AttentionCall(weights=torch.full((2, 2, 3), 1 / 3)))]
    >>> groups, notes = group_layers("self", calls, Axis(3), Axis(3))
    >>> [(g.name, g.layers) for g in groups]
    [('self', [0]), ('self-4heads', [1])]
    >>> print(notes[0])  # doctest: +ELLIPSIS
    self: layer 2 not shown: its queries are 2 positions for 3 tokens (the model pools ...
    """
    shapes: dict[tuple[str, tuple[int, ...]], list[tuple[int, AttentionCall]]] = {}
    for layer, call in sorted(calls, key=lambda item: item[0]):
        shapes.setdefault((call.returned, _shape(call)), []).append((layer, call))
    groups: list[Group] = []
    notes: list[str] = []
    base_heads: int | None = None
    for (returned, shape), members in shapes.items():
        layers = [layer for layer, _ in members]
        if returned:
            notes.append(f"{name}: {_listing(layers)} not shown: {returned}.")
            continue
        if len(shape) != 3:
            notes.append(
                f"{name}: {_listing(layers)} not shown: the model returns attention of shape "
                f"{shape} per batch item, not (heads, queries, keys)."
            )
            continue
        heads, q_len, k_len = shape
        odd = [
            f"its {what} are {got} positions for {axis.length} tokens"
            for what, got, axis in (("queries", q_len, rows), ("keys", k_len, cols))
            if got != axis.length
        ]
        if odd:
            notes.append(
                f"{name}: {_listing(layers)} not shown: {' and '.join(odd)} (the model pools "
                "or compresses the sequence there, or joins keys from another input), so they "
                "cannot be labelled with tokens."
            )
            continue
        if base_heads is None:
            base_heads = heads
        # Shown layers all have q_len and k_len of the tokens: only heads tell groups apart.
        label = name if heads == base_heads else f"{name}-{heads}heads"
        groups.append(Group(label, tuple(members)))
    if len(groups) > 1:
        parts = "; ".join(f"{g.name}: {_listing(g.layers)}" for g in groups)
        notes.append(
            f"{name}: layers differ in their number of heads, so they are shown as "
            f"separate streams ({parts})."
        )
    return groups, notes
