"""The arithmetic under :func:`attnscope.qk_sources`: a residual stream as a sum of named parts.

Each part is a ``(2, d)`` float64 tensor: row 0 is what the part wrote at the
query position, row 1 at the key position. A normaliser frozen at the values
it had in the forward pass is an affine map, so it can be pushed through the
parts one by one (its shift becomes a part of its own); a projection and a
rotary rotation are linear. These functions do exactly that, and nothing
model-specific: :mod:`attnscope.analysis.qk_families` says where the parts
and the normalisers are in each family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnscope.errors import AttnscopeError

if TYPE_CHECKING:
    import torch

Parts = dict[str, "torch.Tensor"]
"""Source name -> ``(2, d)`` float64: its share of the residual at the query and at the key."""


class CannotSplitError(AttnscopeError):
    """A part of the model computes something the split cannot follow exactly.

    Examples
    --------
    >>> from attnscope.analysis.qk_linear import CannotSplitError
    >>> issubclass(CannotSplitError, ValueError)
    True
    """


@dataclass(frozen=True)
class FrozenNorm:
    """A normaliser as the affine map it was in the forward pass: ``(center(x) * scale) + shift``.

    Attributes
    ----------
    center
        Subtract each vector's mean first (LayerNorm); RMSNorm does not.
    scale
        ``(2, d)``: the norm's weight divided by the statistic it computed at each position.
    shift
        ``(d,)`` added after (LayerNorm's bias), or None.
    """

    center: bool
    scale: torch.Tensor
    shift: torch.Tensor | None


def as64(tensor: torch.Tensor) -> torch.Tensor:
    """A copy in float64 on the CPU, where the split's arithmetic runs."""
    import torch

    return tensor.detach().to("cpu", torch.float64)


def total(parts: Parts) -> torch.Tensor:
    """The sum of every part: the residual stream they split."""
    found = list(parts.values())
    out = found[0].clone()
    for value in found[1:]:
        out += value
    return out


def add_parts(parts: Parts, more: Parts) -> None:
    """Add ``more`` into ``parts`` (a name present in both is summed)."""
    for name, value in more.items():
        parts[name] = parts[name] + value if name in parts else value


def _weight(module: torch.nn.Module, size: int) -> torch.Tensor:
    import torch

    weight = getattr(module, "weight", None)
    return torch.ones(size, dtype=torch.float64) if weight is None else as64(weight)


def freeze_norm(module: torch.nn.Module, seen_in: torch.Tensor, where: str) -> FrozenNorm:
    """The affine map ``module`` applied to the ``(2, d)`` rows ``seen_in`` it was given.

    LayerNorm (torch's), Llama-style RMSNorm (``weight * x / rms``) and Gemma's
    (``(1 + weight) * x / rms``) are known; any other normaliser is refused,
    naming ``where`` it sits.

    Examples
    --------
    >>> import torch
    >>> norm = torch.nn.LayerNorm(4)
    >>> x = torch.randn(2, 4, dtype=torch.float64)
    >>> frozen = freeze_norm(norm, x, "ln")
    >>> y = (x - x.mean(-1, keepdim=True)) * frozen.scale + frozen.shift
    >>> torch.allclose(y, norm(x.float()).double(), atol=1e-6)
    True
    """
    import torch

    x = seen_in.to(torch.float64)
    size = x.shape[-1]
    if isinstance(module, torch.nn.LayerNorm):
        centred = x - x.mean(-1, keepdim=True)
        std = torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + module.eps)
        bias = None if module.bias is None else as64(module.bias)
        return FrozenNorm(True, _weight(module, size) / std, bias)
    name = type(module).__name__
    if name.endswith("RMSNorm"):
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
        if eps is None:
            raise CannotSplitError(f"{where} ({name}) keeps no epsilon the split can read.")
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + float(eps))
        weight = _weight(module, size)
        if name.startswith("Gemma"):  # Gemma's norms scale by (1 + weight)
            weight = 1.0 + weight
        return FrozenNorm(False, weight / rms, None)
    raise CannotSplitError(
        f"{where} is a {name}, a normaliser the split does not know (it freezes LayerNorm and "
        "RMSNorm at their forward values); its score cannot be split into sources."
    )


def apply_frozen(norm: FrozenNorm, x: torch.Tensor) -> torch.Tensor:
    """The frozen map applied to the whole of ``x`` (what the norm computed, to check it)."""
    out = (x - x.mean(-1, keepdim=True) if norm.center else x) * norm.scale
    return out if norm.shift is None else out + norm.shift


def through_norm(parts: Parts, norm: FrozenNorm, shift_name: str) -> Parts:
    """Every part pushed through the frozen norm; its shift becomes the part ``shift_name``."""
    out: Parts = {}
    for name, value in parts.items():
        centred = value - value.mean(-1, keepdim=True) if norm.center else value
        out[name] = centred * norm.scale
    if norm.shift is not None:
        add_parts(out, {shift_name: norm.shift.expand(2, -1).clone()})
    return out


def check_close(found: torch.Tensor, expected: torch.Tensor, rtol: float, what: str) -> None:
    """Refuse when ``found`` differs from ``expected`` by over ``rtol`` of its largest value."""
    scale = float(expected.abs().max()) or 1.0
    error = float((found - expected).abs().max()) / scale
    if error > rtol:
        raise CannotSplitError(
            f"{what}: the split gives values {error:.2g} (relative) away from the model's own, "
            "so this part of the model computes something the split does not follow."
        )


def rotate(vectors: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding (the half-split convention of Llama, Mistral, Qwen and Gemma).

    Examples
    --------
    >>> import torch
    >>> v = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> rotate(v, torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0])).tolist()
    [[0.0, 1.0]]
    """
    import torch

    half = vectors.shape[-1] // 2
    turned = torch.cat((-vectors[..., half:], vectors[..., :half]), dim=-1)
    return vectors * cos + turned * sin
