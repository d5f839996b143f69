"""Where a trace recomputes attention on demand: ``capture(..., device=)`` (issue 33).

q and k live in the trace, in host memory (O(N · d) per layer). What the
widget and the analyses ask for (top keys, thumbnails, tiles, statistics,
``check``) is recomputed from them a block of query rows at a time on the
trace's device, where one layer's keys (float32) and one block of scores
must fit. By default that is the model's device, or the host when the
device has not that much free memory; ``device=`` chooses.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnscope.errors import AttnscopeError
from attnscope.sources.hf.memory_need import device_available
from attnscope.sources.hf.recorder import EAGER_BLOCK_VALUES
from attnscope.trace.stream import AttentionStream


def check_device(device: str | None) -> None:
    """Raise, before any work, unless ``device`` is None or a device torch can use here.

    Examples
    --------
    >>> check_device(None); check_device("cpu")
    >>> check_device("tpu:7")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: device='tpu:7' cannot hold tensors here ...
    """
    if device is None:
        return
    try:
        torch.empty(0, device=device)
    except (RuntimeError, ValueError, AssertionError, TypeError) as err:
        raise AttnscopeError(
            f"device={device!r} cannot hold tensors here ({str(err).splitlines()[0]}); pass "
            "'cpu', a device torch can use (torch.cuda.is_available() says whether 'cuda' "
            "can), or leave it out to use the model's device where it has room."
        ) from None


def work_need(streams: Sequence[AttentionStream]) -> int:
    """Bytes on-demand work holds on its device: one layer's float32 keys and one block.

    Examples
    --------
    >>> import numpy as np
    >>> q = np.zeros((1, 2, 10, 4), np.float16)
    >>> work_need([AttentionStream(queries=q, keys=q)]) == 2 * 10 * 4 * 4 + 2 * 4 * (1 << 22)
    True
    """
    keys = 0
    for stream in streams:
        if stream.keys is not None:
            kv_heads, k_len, width = stream.keys.shape[1:]
            keys = max(keys, kv_heads * k_len * width * 4)
    return keys + 2 * 4 * EAGER_BLOCK_VALUES  # scores and their softmax, float32


def work_device(
    model_device: torch.device, device: str | None, streams: Sequence[AttentionStream]
) -> tuple[str, str | None]:
    """``(device, note)``: ``device`` as asked, else the model's if it has room, else the host.

    The note says why the default moved work to the host (None otherwise).

    Examples
    --------
    >>> work_device(torch.device("cpu"), None, [])
    ('cpu', None)
    >>> work_device(torch.device("cpu"), "cpu", [])
    ('cpu', None)
    """
    if device is not None:
        return str(torch.device(device)), None
    if model_device.type in ("cpu", "meta"):
        return "cpu" if model_device.type == "meta" else str(model_device), None
    free = device_available(model_device)
    need = work_need(streams)
    if free is None or free >= need:
        return str(model_device), None
    return "cpu", (
        f"attention is recomputed on the host: {model_device} has {free / 1e9:.2f} GB free, "
        f"less than the {need / 1e9:.2f} GB one layer's keys and a block of scores take there; "
        f"set trace.device = '{model_device}' once it has room (or capture with device=)."
    )
