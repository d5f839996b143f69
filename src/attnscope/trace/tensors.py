"""Turn the attention formats people already have into one numpy array."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError, AttnscopeIndexError, AttnscopeTypeError
from attnscope.trace.from_transformer_lens import is_activation_cache
from attnscope.trace.validate import as_float32


def stack_layers(attention: Any, *, batch_index: int = 0) -> npt.NDArray[np.float32]:
    """``(layers, heads, q, k)`` from a per-layer sequence of ``(batch, heads, q, k)``.

    Also accepts one ``(layers, heads, q, k)`` array, or a per-layer sequence of
    ``(heads, q, k)`` arrays.

    Examples
    --------
    >>> import numpy as np
    >>> stack_layers([np.ones((1, 2, 3, 3)) / 3] * 4).shape
    (4, 2, 3, 3)
    """
    if is_activation_cache(attention):
        raise AttnscopeTypeError(
            "attention is a TransformerLens ActivationCache: use "
            "AttentionTrace.from_transformer_lens(cache, tokens), which also keeps q and k."
        )
    if isinstance(attention, Sequence) and not isinstance(attention, str | bytes):
        if len(attention) == 0:
            raise AttnscopeError(
                "attention is an empty tuple. A Hugging Face model running with 'sdpa' "
                "returns () for output_attentions=True: load it with "
                "attn_implementation='eager', or use attnscope.capture(model, text)."
            )
        layers = [as_float32(a, f"attention[{i}]") for i, a in enumerate(attention)]
        shapes = {a.shape for a in layers}
        if len(shapes) != 1:
            raise AttnscopeError(
                f"attention layers differ in shape: {sorted(shapes)}; every layer must "
                "cover the same heads and tokens."
            )
        first = layers[0]
        if first.ndim == 4:
            if not 0 <= batch_index < first.shape[0]:
                raise AttnscopeIndexError(
                    f"batch_index={batch_index} but the batch has {first.shape[0]} item(s)."
                )
            return np.stack([a[batch_index] for a in layers])
        if first.ndim == 3:
            return np.stack(layers)
        raise AttnscopeError(
            f"each layer's attention must be (batch, heads, q, k) or (heads, q, k); got "
            f"shape {first.shape}."
        )
    array = as_float32(attention, "attention")
    if array.ndim == 4:
        return array
    if array.ndim == 5:
        return array[:, batch_index]
    raise AttnscopeError(
        f"attention must be a tuple of per-layer (batch, heads, q, k) tensors or one "
        f"(layers, heads, q, k) array; got shape {array.shape}."
    )
