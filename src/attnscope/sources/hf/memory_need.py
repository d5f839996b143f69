"""Whether a capture fits the machine, checked before the forward pass (issue 33).

Capture keeps q and k of the layers asked for (O(N) each) and the model's
forward needs its own activations; when the two together exceed the free
memory where they live, capture refuses before any work, with the numbers
and the fixes (``layers=``, fewer tokens, a device with more memory), and
the model is left as it was. The estimate is a lower bound (no allocator
slack, one MLP's intermediates at a time), so it refuses only what cannot fit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnscope.errors import AttnscopeError


class TooLongError(AttnscopeError, MemoryError):
    """The input is too long for this machine's free memory; raised before the forward pass.

    Examples
    --------
    >>> issubclass(TooLongError, MemoryError)
    True
    """


@dataclass(frozen=True)
class Need:
    """Bytes a capture needs: q/k kept (host and device) and the forward's activations.

    Examples
    --------
    >>> Need(qk_host=2, qk_device=0, forward=3).device_total
    3
    """

    qk_host: int
    qk_device: int
    forward: int

    @property
    def device_total(self) -> int:
        """Bytes needed on the model's device: its forward and the q/k it records there."""
        return self.forward + self.qk_device


def estimate(model: Any, tokens: int, layers: Sequence[int] | None) -> Need | None:
    """What capturing ``tokens`` tokens of ``layers`` (None: all) needs, or None if unknown.

    q/k are recorded in the model's dtype on its device and copied to the
    host as float16 (half-precision models) or float32; the forward's
    activations are counted as four hidden states and three MLP
    intermediates per token (Llama's gate, up and their product).

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaModel
    >>> model = LlamaModel(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    ...                                num_attention_heads=2, num_key_value_heads=1, vocab_size=8))
    >>> estimate(model, 1000, [0])
    Need(qk_host=192000, qk_device=192000, forward=1280000)
    """
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
    config = config or model.config
    heads, hidden, count = (
        _read(config, name) for name in ("num_attention_heads", "hidden_size", "num_hidden_layers")
    )
    if not (heads and hidden and count):  # unknown, or varying by layer: no estimate
        return None
    kv_heads = _read(config, "num_key_value_heads") or heads
    head_dim = _read(config, "head_dim") or hidden // heads
    wide = _read(config, "intermediate_size") or 4 * hidden
    dtype = getattr(model, "dtype", torch.float32)
    size = torch.finfo(dtype).bits // 8 if dtype.is_floating_point else 4
    stored = 2 if size == 2 else 4
    captured = count if layers is None else len(layers)
    per_layer = (heads + kv_heads) * tokens * head_dim
    return Need(
        qk_host=captured * per_layer * stored,
        qk_device=captured * per_layer * size,
        forward=tokens * (4 * hidden + 3 * wide) * size,
    )


def _read(config: Any, name: str) -> int | None:
    """A positive int field of ``config``; None when absent, not an int or set per layer."""
    try:
        value = getattr(config, name, None)
    except Exception:  # transformers refuses a global read of per-layer fields
        return None
    return value if isinstance(value, int) and value > 0 else None


def host_available() -> int | None:
    """Bytes of memory this machine can still give (``MemAvailable``), None where unknown.

    Examples
    --------
    >>> available = host_available()
    >>> available is None or available > 0
    True
    """
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def device_available(device: torch.device) -> int | None:
    """Free bytes on ``device``: the host's for the CPU, the driver's for a CUDA GPU.

    Examples
    --------
    >>> device_available(torch.device("meta")) is None
    True
    """
    if device.type == "cpu":
        return host_available()
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    return None


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def check_memory(
    model: Any,
    tokens: int,
    layers: Sequence[int] | None,
    *,
    host: int | None = None,
    device: int | None = None,
) -> None:
    """Refuse, before the forward pass, a capture the free memory cannot hold.

    Parameters
    ----------
    model
        The model about to run.
    tokens
        The input's length.
    layers
        The model layers to capture (None: all).
    host, device
        Free bytes on the host and on the model's device (None: read them).

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaModel
    >>> model = LlamaModel(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    ...                                num_attention_heads=2, num_key_value_heads=1, vocab_size=8))
    >>> check_memory(model, 1000, None)
    >>> check_memory(model, 10**6, None, host=10**9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.sources.hf.memory_need.TooLongError: 1000000 tokens need at least 2.0 GB ...
    """
    need = estimate(model, tokens, layers)
    if need is None:
        return
    where = torch.device(getattr(model, "device", "cpu"))
    on_host = where.type == "cpu"
    if host is None:
        host = host_available()
    if device is None and not on_host:
        device = device_available(where)
    checks = [(host, need.qk_host + (need.device_total if on_host else 0), "free memory")]
    if not on_host:
        checks.append((device, need.device_total, f"free memory on {where}"))
    for free, needed, what in checks:
        if free is None or needed <= free:
            continue
        captured = "every layer" if layers is None else f"{len(layers)} layer(s)"
        raise TooLongError(
            f"{tokens} tokens need at least {_gb(needed)} ({what} here: {_gb(free)}): "
            f"q and k of {captured} take {_gb(need.qk_host)} on the host"
            + (f" and {_gb(need.qk_device)} where the model runs" if need.qk_device else "")
            + f", and the model's own forward about {_gb(need.forward)}. Capture fewer layers "
            "(layers=[...], each layer's q/k is "
            f"{_gb(need.qk_host / max(1, len(layers) if layers else _layers(model)))}), "
            "pass fewer tokens (max_tokens=...), or run the model on a device with more memory."
        )


def _layers(model: Any) -> int:
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
    return int(getattr(config or model.config, "num_hidden_layers", 1) or 1)
