"""AttentionStream: one stream of attention (self, encoder, decoder or cross).

Weights for every captured layer and head, and where the source recorded
them, the query and key vectors as dot-producted and the terms around them
(scaling, bias, mask, softcap, sinks), so the weights can be recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from attnscope.trace.recompute import recompute_attention
from attnscope.trace.validate import (
    as_float32,
    check_attention,
    check_bool_mask,
    check_rank,
)

Side = Literal["source", "target"]
FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]

ARRAY_FIELDS = ("attention", "queries", "keys", "scaling", "bias", "mask", "softcap", "sinks")
"""The array-valued fields of a stream, in the order a trace file stores them."""


@dataclass(frozen=True, eq=False)
class AttentionStream:
    """One stream of attention: weights for every captured layer and head.

    Parameters
    ----------
    attention
        float32 ``(layers, heads, q_len, k_len)``; rows are probability
        distributions (or all zero for a fully masked query).
    query_side, key_side
        Which token sequence labels the rows and the columns: ``"source"``
        (the input text, or the encoder's) or ``"target"`` (the decoder's).
    layers
        The model's own index of each captured layer (``layers=[0, 5]`` when
        only those were captured). Defaults to ``0 .. layers-1``.
    queries
        float32 ``(layers, heads, q_len, head_dim)``: q as dot-producted.
    keys
        float32 ``(layers, kv_heads, k_len, head_dim)``. With grouped-query
        attention ``kv_heads < heads`` and query head ``h`` uses key head
        ``h // (heads // kv_heads)``.
    scaling
        float32 ``(layers,)``: the factor the scores were multiplied by.
    bias
        float32 additive term before softmax, broadcastable to
        ``(layers, heads, q_len, k_len)`` (T5 position bias, ALiBi).
    mask
        bool, broadcastable to ``(layers, heads, q_len, k_len)``; ``True``
        where the key is hidden from the query (causal, padding, window).
    softcap
        float32 ``(layers,)``: ``tanh(s / c) * c`` applied to the scores (0 = none).
    sinks
        float32 ``(layers, heads)``: a learned logit joined to every row
        before softmax and dropped after (attention sinks).

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, dtype=np.float32))
    >>> s.num_layers, s.num_heads, s.q_len, s.k_len
    (1, 1, 2, 2)
    """

    attention: FloatArray
    query_side: Side = "source"
    key_side: Side = "source"
    layers: tuple[int, ...] = ()
    queries: FloatArray | None = None
    keys: FloatArray | None = None
    scaling: FloatArray | None = None
    bias: FloatArray | None = None
    mask: BoolArray | None = None
    softcap: FloatArray | None = None
    sinks: FloatArray | None = None
    name: str = field(default="self")

    def __post_init__(self) -> None:
        put = object.__setattr__
        attention = check_attention(as_float32(self.attention, "attention"), self.name)
        put(self, "attention", attention)
        num_layers, num_heads, q_len, k_len = attention.shape
        if self.query_side not in ("source", "target") or self.key_side not in (
            "source",
            "target",
        ):
            raise ValueError("query_side and key_side must be 'source' or 'target'.")
        layers = tuple(int(i) for i in self.layers) or tuple(range(num_layers))
        if len(layers) != num_layers:
            raise ValueError(
                f"{self.name}: layers lists {len(layers)} indices but attention has "
                f"{num_layers} layers; give one model layer index per captured layer."
            )
        if len(set(layers)) != len(layers) or any(i < 0 for i in layers):
            raise ValueError(f"{self.name}: layers must be distinct non-negative indices.")
        put(self, "layers", layers)

        if (self.queries is None) != (self.keys is None):
            raise ValueError(f"{self.name}: queries and keys come together; pass both or neither.")
        if self.queries is not None and self.keys is not None:
            q = check_rank(as_float32(self.queries, "queries"), 4, "queries", self.name)
            k = check_rank(as_float32(self.keys, "keys"), 4, "keys", self.name)
            if q.shape[:3] != (num_layers, num_heads, q_len):
                raise ValueError(
                    f"{self.name}: queries has shape {q.shape}; expected "
                    f"({num_layers}, {num_heads}, {q_len}, head_dim) to match attention "
                    f"{attention.shape}."
                )
            kv_heads = k.shape[1]
            if k.shape[0] != num_layers or k.shape[2] != k_len or k.shape[3] != q.shape[3]:
                raise ValueError(
                    f"{self.name}: keys has shape {k.shape}; expected "
                    f"({num_layers}, kv_heads, {k_len}, {q.shape[3]}) to match queries "
                    f"{q.shape} and attention {attention.shape}."
                )
            if kv_heads == 0 or num_heads % kv_heads:
                raise ValueError(
                    f"{self.name}: {num_heads} query heads cannot share {kv_heads} key "
                    "heads; the number of query heads must be a multiple of the key heads."
                )
            put(self, "queries", q)
            put(self, "keys", k)
            scaling = (
                np.full(num_layers, 1.0 / np.sqrt(q.shape[3]), dtype=np.float32)
                if self.scaling is None
                else as_float32(self.scaling, "scaling").reshape(-1)
            )
            if scaling.shape == (1,):
                scaling = np.repeat(scaling, num_layers)
            if scaling.shape != (num_layers,):
                raise ValueError(
                    f"{self.name}: scaling has {scaling.shape[0]} values; give one per "
                    f"layer ({num_layers}) or a single number."
                )
            put(self, "scaling", scaling)
        elif self.scaling is not None:
            raise ValueError(
                f"{self.name}: scaling was given without queries and keys; it is only "
                "meaningful with them (pass queries= and keys=, or drop scaling=)."
            )
        full = (num_layers, num_heads, q_len, k_len)
        if self.bias is not None:
            bias = as_float32(self.bias, "bias", allow_inf=True)
            _check_broadcast(bias.shape, full, "bias", self.name)
            put(self, "bias", bias)
        if self.mask is not None:
            mask = check_bool_mask(self.mask, self.name)
            _check_broadcast(mask.shape, full, "mask", self.name)
            put(self, "mask", mask)
        if self.softcap is not None:
            softcap = as_float32(self.softcap, "softcap").reshape(-1)
            if softcap.shape == (1,):
                softcap = np.repeat(softcap, num_layers)
            if softcap.shape != (num_layers,):
                raise ValueError(f"{self.name}: softcap needs one value per layer.")
            put(self, "softcap", softcap)
        if self.sinks is not None:
            sinks = as_float32(self.sinks, "sinks")
            if sinks.shape != (num_layers, num_heads):
                raise ValueError(
                    f"{self.name}: sinks has shape {sinks.shape}; expected "
                    f"({num_layers}, {num_heads})."
                )
            put(self, "sinks", sinks)

    @property
    def num_layers(self) -> int:
        """Number of captured layers."""
        return int(self.attention.shape[0])

    @property
    def num_heads(self) -> int:
        """Number of query heads."""
        return int(self.attention.shape[1])

    @property
    def num_kv_heads(self) -> int:
        """Number of key heads (equals :attr:`num_heads` unless grouped-query)."""
        return self.num_heads if self.keys is None else int(self.keys.shape[1])

    @property
    def q_len(self) -> int:
        """Number of query positions (rows)."""
        return int(self.attention.shape[2])

    @property
    def k_len(self) -> int:
        """Number of key positions (columns)."""
        return int(self.attention.shape[3])

    @property
    def head_dim(self) -> int | None:
        """Size of each q/k vector, or None when q/k were not recorded."""
        return None if self.queries is None else int(self.queries.shape[3])

    @property
    def has_qk(self) -> bool:
        """True when q and k were recorded (the neuron view needs them)."""
        return self.queries is not None

    def kv_head(self, head: int) -> int:
        """The key head that query head ``head`` is dot-producted with."""
        return head // (self.num_heads // self.num_kv_heads)

    def layer_position(self, layer: int) -> int:
        """Position in this stream of the model's layer ``layer``."""
        try:
            return self.layers.index(layer)
        except ValueError:
            raise IndexError(
                f"layer {layer} was not captured in stream {self.name!r}; "
                f"captured layers: {list(self.layers)}."
            ) from None

    def recompute(self) -> FloatArray:
        """Attention recomputed from q, k, scaling, bias, mask, softcap and sinks."""
        if self.queries is None or self.keys is None or self.scaling is None:
            raise ValueError(
                f"stream {self.name!r} has no queries/keys to recompute attention from."
            )
        return recompute_attention(
            self.queries,
            self.keys,
            self.scaling,
            bias=self.bias,
            mask=self.mask,
            softcap=self.softcap,
            sinks=self.sinks,
        )


def _check_broadcast(shape: tuple[int, ...], full: tuple[int, ...], what: str, stream: str) -> None:
    ok = len(shape) == 4 and all(s in (1, f) for s, f in zip(shape, full, strict=True))
    if not ok:
        raise ValueError(
            f"{stream}: {what} has shape {shape}; it must be 4-D and broadcastable to "
            f"the attention shape {full} (use 1 for a shared axis)."
        )
