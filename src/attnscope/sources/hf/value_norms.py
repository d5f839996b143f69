"""``capture(..., value_norms=True)``: how much each head would write from each key.

Kobayashi et al. 2020 (*Attention is Not Only a Weight*) split a head's output
at query i into ``Σ_j α_ij f_h(x_j)`` with ``f_h(x) = (x W_V + b_V) W_O^h``; a
large weight on a key whose ``‖f_h(x_j)‖`` is small moves little (attention
sinks). This module records ``‖f_h(x_j)‖`` for every head and key during
capture's forward pass: a hook on each layer's value projection turns its
output into ``heads x keys`` norms at once (one head's ``keys x d`` product at a
time), so nothing larger than ``N x d`` is ever held. Grouped-query heads use
their key/value head; ``b_V`` is in ``v``, ``b_O`` is not per key and is left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from attnscope.errors import AttnscopeError


@dataclass(frozen=True)
class ValuePath:
    """Where one layer's values are made and written out."""

    value: Any  # the module whose output holds v (Linear, or GPT-2's fused c_attn)
    third: bool  # v is the last third of the output (GPT-2's c_attn)
    out: Any  # the output projection
    heads: int
    kv_heads: int


def _blocks(model: Any) -> list[Any]:
    base = model.base_model
    for path in ("h", "layers", "encoder.layer"):
        found = base
        for name in path.split("."):
            found = getattr(found, name, None)
        if found is not None:
            return list(found)
    raise AttnscopeError(
        f"value_norms=True: {type(model).__name__} keeps its layers where attnscope does "
        "not look (h, layers, encoder.layer); capture without value_norms."
    )


def value_paths(model: Any) -> list[ValuePath]:
    """Each layer's :class:`ValuePath`, or an error naming the part that is not understood.

    Examples
    --------
    >>> from transformers import GPT2Config, GPT2Model
    >>> paths = value_paths(GPT2Model(GPT2Config(n_layer=2, n_head=2, n_embd=8)))
    >>> len(paths), paths[0].third, paths[0].heads
    (2, True, 2)
    """
    config = model.config
    if getattr(config, "is_encoder_decoder", False):
        raise AttnscopeError(
            "value_norms=True records self-attention of one stack; encoder–decoder models "
            "are not covered. Capture without value_norms."
        )
    heads = int(getattr(config, "num_attention_heads", getattr(config, "n_head", 0)))
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    paths = []
    for index, block in enumerate(_blocks(model)):
        if hasattr(block, "attn") and hasattr(block.attn, "c_attn"):  # GPT-2
            paths.append(ValuePath(block.attn.c_attn, True, block.attn.c_proj, heads, heads))
        elif hasattr(block, "self_attn") and hasattr(block.self_attn, "v_proj"):
            attention = block.self_attn
            if getattr(attention, "v_norm", None) is not None:
                raise AttnscopeError(
                    f"value_norms=True: layer {index} normalises v ({type(attention).__name__}"
                    ".v_norm), which f(x) = (x W_V + b_V) W_O leaves out; capture without it."
                )
            paths.append(ValuePath(attention.v_proj, False, attention.o_proj, heads, kv_heads))
        elif hasattr(block, "attention") and hasattr(block.attention, "output"):  # BERT family
            paths.append(
                ValuePath(
                    block.attention.self.value, False, block.attention.output.dense, heads, heads
                )
            )
        else:
            raise AttnscopeError(
                f"value_norms=True: layer {index} of {type(model).__name__} "
                f"({type(block).__name__}) has no value and output projection attnscope "
                "knows (v_proj/o_proj, value/output.dense, c_attn/c_proj); capture without it."
            )
    return paths


def head_value_norms(v: torch.Tensor, path: ValuePath) -> torch.Tensor:
    """``(heads, keys)`` float32 ``‖v_j W_O^h‖`` from one sequence's ``(keys, kv * d_h)`` v."""
    weight = path.out.weight.float()
    if type(path.out).__name__ == "Conv1D":  # GPT-2 stores (in, out)
        weight = weight.T
    head_dim = weight.shape[1] // path.heads
    v = v.float().reshape(v.shape[0], path.kv_heads, head_dim)
    group = path.heads // path.kv_heads
    norms = torch.empty(path.heads, v.shape[0], dtype=torch.float32, device=v.device)
    for head in range(path.heads):
        cols = slice(head * head_dim, (head + 1) * head_dim)
        norms[head] = torch.linalg.vector_norm(v[:, head // group] @ weight[:, cols].T, dim=-1)
    return norms


class Recorded:
    """What :func:`recording` fills: ``{layer: (heads, keys)}`` once :meth:`expect` is called."""

    def __init__(self) -> None:
        self.length: int | None = None
        self.norms: dict[int, torch.Tensor] = {}

    def expect(self, inputs: dict[str, torch.Tensor]) -> None:
        """Record from now on the calls over ``inputs``' whole sequence (batch item 0)."""
        ids = inputs.get("input_ids")
        self.length = None if ids is None else int(ids.shape[-1])

    def attach(self, stream: Any, keep: Sequence[int] | None) -> None:
        """Give ``stream`` the norms of its layers (keys ``keep`` when padding was trimmed)."""
        missing = [layer for layer in stream.layers if layer not in self.norms]
        if missing:
            raise AttnscopeError(
                f"value_norms=True: the value projection of layers {missing} never ran over "
                "the input; capture without value_norms."
            )
        norms = torch.stack([self.norms[layer] for layer in stream.layers])
        stream.set_value_norms(norms if keep is None else norms[..., list(keep)])


@contextmanager
def recording(
    model: Any, layers: Sequence[int] | None, paths: list[ValuePath] | None
) -> Iterator[Recorded]:
    """Hooks on the value projections of ``layers`` (all for None), removed on the way out.

    Nothing is recorded until :meth:`Recorded.expect` names the input; then
    each call over its whole sequence is kept, the last one winning. With
    ``paths`` None (value norms not asked for) no hook is added.
    """
    found = Recorded()
    handles = []
    chosen = range(len(paths or ())) if layers is None else layers
    for layer in chosen if paths else ():
        path = paths[layer]  # type: ignore[index]

        def hook(_m: Any, _a: Any, output: Any, layer: int = layer, path: ValuePath = path) -> None:
            rows = output[0]
            if found.length is None or rows.shape[0] != found.length:
                return
            if path.third:
                rows = rows[:, 2 * rows.shape[-1] // 3 :]
            with torch.no_grad():
                found.norms[layer] = head_value_norms(rows, path).cpu()

        handles.append(path.value.register_forward_hook(hook))
    try:
        yield found
    finally:
        for handle in handles:
            handle.remove()
