"""AttentionStream: one stream of attention (self, encoder, decoder or cross).

A stream stores what is O(N) where it can: the query and key vectors as
dot-producted, the scaling, the additive terms and the mask as a rule (one
run of visible keys per query), from which any head's weights are
recomputed exactly, a block of rows at a time (:mod:`attnscope.trace.rows`).
Sources with no q·k keep the weights themselves, compactly where they can.
:attr:`AttentionStream.attention` materialises the whole
``(layers, heads, q_len, k_len)`` array on first use, and refuses, naming the
memory it would take and what to do instead, when it would not fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError, AttnscopeIndexError
from attnscope.trace.key_spans import check_spans
from attnscope.trace.validate import (
    as_float32,
    check_attention,
    check_bool_mask,
    check_rank,
    check_rows,
)

if TYPE_CHECKING:
    import torch

    from attnscope.trace.rows import Rows

Side = Literal["source", "target"]
FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]

ARRAY_FIELDS = (
    "attention",
    "queries",
    "keys",
    "scaling",
    "bias",
    "mask",
    "key_spans",
    "softcap",
    "sinks",
    "reference",
    "reference_rows",
    "value_norms",
)
"""The array-valued fields of a stream, in the order a trace file stores them."""

MAX_ATTENTION_BYTES = 2 << 30
"""Largest float32 attention :attr:`AttentionStream.attention` (and its per-layer and
per-head readers) will materialise, in bytes. Views and chunks never need it."""


def _size(nbytes: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if nbytes < 1000 or unit == "TB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    raise AssertionError("unreachable")


class AttentionStream:
    """One stream of attention: every captured layer and head, weights or q/k.

    Give the weights (``attention``), or the q and k they come from
    (``queries`` and ``keys`` with the terms around them), or both.

    Parameters
    ----------
    attention
        ``(layers, heads, q_len, k_len)`` weights; rows are probability
        distributions (or all zero for a fully masked query; with ``sinks``
        they may sum to less than 1), within
        :data:`~attnscope.trace.validate.ROW_SUM_TOLERANCE` for the precision
        the weights carry. float32, or float16 to keep them compactly. None
        when q and k determine them.
    query_side, key_side
        Which token sequence labels the rows and the columns: ``"source"``
        (the input text, or the encoder's) or ``"target"`` (the decoder's).
    layers
        The model's own index of each captured layer (``layers=[0, 5]`` when
        only those were captured). Defaults to ``0 .. layers-1``.
    queries
        float32 ``(layers, heads, q_len, head_dim)``: q as dot-producted; float16
        stays float16 (a half-precision model's q, computed with in float32).
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
        before softmax and dropped after (attention sinks); ``-inf`` for a
        layer or head that has none.
    name
        ``"self"``, ``"encoder"``, ``"decoder"`` or ``"cross"``.
    key_spans
        int32 ``(layers or 1, q_len, 2)``: the mask as a rule, ``[start, stop)``
        of the keys each query sees (causal, sliding window, padding); keys
        outside are hidden. Combines with ``mask`` when both are given.
    reference, reference_rows
        float32 ``(layers, heads, R, k_len)`` weights the model itself gave
        for query rows ``reference_rows`` ``(R,)``: what :meth:`check_error`
        holds the recomputed rows to when the full weights are not stored.
    device
        Where rows are recomputed (``"cpu"``, ``"cuda"``); capture sets the
        model's device.
    value_norms
        float32 ``(layers, heads, k_len)``: ``‖f_h(x_j)‖ = ‖(x_j W_V + b_V) W_O^h‖``, the
        size of what head ``h`` would write from key ``j`` at full weight (Kobayashi et al.
        2020); ``capture(..., value_norms=True)`` records it. None when not recorded.

    Examples
    --------
    >>> import numpy as np
    >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, dtype=np.float32))
    >>> s.num_layers, s.num_heads, s.q_len, s.k_len
    (1, 1, 2, 2)
    >>> q = np.zeros((1, 1, 3, 4), np.float32)
    >>> causal = np.array([[[0, 1], [0, 2], [0, 3]]], np.int32)
    >>> t = AttentionStream(queries=q, keys=q, key_spans=causal)
    >>> t.has_weights, t.attention[0, 0, 2].tolist()
    (False, [0.3333333432674408, 0.3333333432674408, 0.3333333432674408])
    """

    def __init__(
        self,
        attention: Any = None,
        *,
        query_side: Side = "source",
        key_side: Side = "source",
        layers: tuple[int, ...] = (),
        queries: Any = None,
        keys: Any = None,
        scaling: Any = None,
        bias: Any = None,
        mask: Any = None,
        softcap: Any = None,
        sinks: Any = None,
        name: str = "self",
        key_spans: Any = None,
        reference: Any = None,
        reference_rows: Any = None,
        device: str = "cpu",
        value_norms: Any = None,
    ) -> None:
        self.name = name
        self.device = device
        self._attention: FloatArray | None = None
        if query_side not in ("source", "target") or key_side not in ("source", "target"):
            raise AttnscopeError("query_side and key_side must be 'source' or 'target'.")
        self.query_side: Side = query_side
        self.key_side: Side = key_side
        self.weights: npt.NDArray[np.floating[Any]] | None = None
        if attention is not None:
            self.weights = check_attention(_as_weights(attention), name)
            check_rows(self.weights, name, sinks=sinks is not None)
        elif queries is None and keys is None:
            raise AttnscopeError(
                f"{name}: a stream needs attention weights, or the queries and keys they "
                "come from; pass attention= or queries= and keys=."
            )
        self.queries: FloatArray | None = None
        self.keys: FloatArray | None = None
        self.scaling: FloatArray | None = None
        self._set_qk(queries, keys, scaling)
        num_layers, num_heads, q_len, k_len = self.shape
        ids = tuple(int(i) for i in layers) or tuple(range(num_layers))
        if len(ids) != num_layers:
            raise AttnscopeError(
                f"{name}: layers lists {len(ids)} indices but attention has "
                f"{num_layers} layers; give one model layer index per captured layer."
            )
        if len(set(ids)) != len(ids) or any(i < 0 for i in ids):
            raise AttnscopeError(f"{name}: layers must be distinct non-negative indices.")
        self.layers: tuple[int, ...] = ids
        full = self.shape
        self.bias: FloatArray | None = None
        if bias is not None:
            self.bias = as_float32(bias, "bias", allow_inf=True)
            _check_broadcast(self.bias.shape, full, "bias", name)
        self.mask: BoolArray | None = None
        if mask is not None:
            self.mask = check_bool_mask(mask, name)
            _check_broadcast(self.mask.shape, full, "mask", name)
        self.key_spans = None if key_spans is None else check_spans(key_spans, q_len, k_len, name)
        if self.key_spans is not None and self.key_spans.shape[0] not in (1, num_layers):
            raise AttnscopeError(f"{name}: key_spans needs one entry per layer, or one for all.")
        self.softcap: FloatArray | None = None
        if softcap is not None:
            cap = as_float32(softcap, "softcap").reshape(-1)
            if cap.shape == (1,):
                cap = np.repeat(cap, num_layers)
            if cap.shape != (num_layers,):
                raise AttnscopeError(f"{name}: softcap needs one value per layer.")
            self.softcap = cap
        self.sinks: FloatArray | None = None
        if sinks is not None:
            self.sinks = as_float32(sinks, "sinks", allow_inf=True)
            if np.isposinf(self.sinks).any():
                raise AttnscopeError(f"{name}: sinks holds +inf; use -inf for a head with no sink.")
            if self.sinks.shape != (num_layers, num_heads):
                raise AttnscopeError(
                    f"{name}: sinks has shape {self.sinks.shape}; expected "
                    f"({num_layers}, {num_heads})."
                )
        self.reference: FloatArray | None = None
        self.reference_rows: npt.NDArray[np.int64] | None = None
        if (reference is None) != (reference_rows is None):
            raise AttnscopeError(f"{name}: reference and reference_rows come together.")
        if reference is not None:
            rows = np.asarray(reference_rows, dtype=np.int64).reshape(-1)
            ref = as_float32(reference, "reference")
            if ref.shape != (num_layers, num_heads, rows.size, k_len) or (
                rows.size and (rows.min() < 0 or rows.max() >= q_len)
            ):
                raise AttnscopeError(
                    f"{name}: reference has shape {ref.shape} for rows {rows.tolist()[:8]}; "
                    f"expected ({num_layers}, {num_heads}, rows, {k_len}) with rows < {q_len}."
                )
            self.reference, self.reference_rows = ref, rows
        self.value_norms: FloatArray | None = None
        if value_norms is not None:
            self.set_value_norms(value_norms)

    def set_value_norms(self, value_norms: Any) -> None:
        """Attach ``‖f_h(x_j)‖`` per (layer, head, key), checked: finite, >= 0, of this shape.

        Examples
        --------
        >>> import numpy as np
        >>> s = AttentionStream(np.full((1, 2, 2, 2), 0.5, np.float32))
        >>> s.set_value_norms(np.ones((1, 2, 2), np.float32))
        >>> s.value_norms.shape
        (1, 2, 2)
        """
        norms = as_float32(value_norms, "value_norms")
        expected = (self.num_layers, self.num_heads, self.k_len)
        if norms.shape != expected:
            raise AttnscopeError(
                f"{self.name}: value_norms has shape {norms.shape}; expected {expected} "
                "(layers, heads, keys)."
            )
        if (norms < 0).any():
            raise AttnscopeError(f"{self.name}: value_norms holds negative norms.")
        self.value_norms = norms

    def _set_qk(self, queries: Any, keys: Any, scaling: Any) -> None:
        name = self.name
        if (queries is None) != (keys is None):
            raise AttnscopeError(f"{name}: queries and keys come together; pass both or neither.")
        if queries is None:
            if scaling is not None:
                raise AttnscopeError(
                    f"{name}: scaling was given without queries and keys; it is only "
                    "meaningful with them (pass queries= and keys=, or drop scaling=)."
                )
            return
        q = check_rank(_as_vectors(queries, "queries"), 4, "queries", name)
        k = check_rank(_as_vectors(keys, "keys"), 4, "keys", name)
        if q.dtype != k.dtype:  # both in one precision: the wider one
            q, k = q.astype(np.float32, copy=False), k.astype(np.float32, copy=False)
        if self.weights is not None and q.shape[:3] != self.weights.shape[:3]:
            raise AttnscopeError(
                f"{name}: queries has shape {q.shape}; expected "
                f"{(*self.weights.shape[:3], 'head_dim')} to match attention "
                f"{self.weights.shape}."
            )
        k_len = k.shape[2] if self.weights is None else self.weights.shape[3]
        kv_heads = k.shape[1]
        if k.shape[0] != q.shape[0] or k.shape[2] != k_len or k.shape[3] != q.shape[3]:
            raise AttnscopeError(
                f"{name}: keys has shape {k.shape}; expected "
                f"({q.shape[0]}, kv_heads, {k_len}, {q.shape[3]}) to match queries "
                f"{q.shape}"
                + ("" if self.weights is None else f" and attention {self.shape}")
                + "."
            )
        if kv_heads == 0 or q.shape[1] % kv_heads:
            raise AttnscopeError(
                f"{name}: {q.shape[1]} query heads cannot share {kv_heads} key "
                "heads; the number of query heads must be a multiple of the key heads."
            )
        num_layers = q.shape[0]
        scale = (
            np.full(num_layers, 1.0 / np.sqrt(q.shape[3]), dtype=np.float32)
            if scaling is None
            else as_float32(scaling, "scaling").reshape(-1)
        )
        if scale.shape == (1,):
            scale = np.repeat(scale, num_layers)
        if scale.shape != (num_layers,):
            raise AttnscopeError(
                f"{name}: scaling has {scale.shape[0]} values; give one per "
                f"layer ({num_layers}) or a single number."
            )
        self.queries, self.keys, self.scaling = q, k, scale

    # -- shape ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(layers, heads, q_len, k_len)`` of the attention this stream describes."""
        if self.weights is not None:
            return tuple(int(n) for n in self.weights.shape)  # type: ignore[return-value]
        assert self.queries is not None
        assert self.keys is not None
        num_layers, num_heads, q_len, _ = self.queries.shape
        return int(num_layers), int(num_heads), int(q_len), int(self.keys.shape[2])

    @property
    def num_layers(self) -> int:
        """Number of captured layers."""
        return self.shape[0]

    @property
    def num_heads(self) -> int:
        """Number of query heads."""
        return self.shape[1]

    @property
    def num_kv_heads(self) -> int:
        """Number of key heads (equals :attr:`num_heads` unless grouped-query)."""
        return self.num_heads if self.keys is None else int(self.keys.shape[1])

    @property
    def q_len(self) -> int:
        """Number of query positions (rows)."""
        return self.shape[2]

    @property
    def k_len(self) -> int:
        """Number of key positions (columns)."""
        return self.shape[3]

    @property
    def head_dim(self) -> int | None:
        """Size of each q/k vector, or None when q/k were not recorded."""
        return None if self.queries is None else int(self.queries.shape[3])

    @property
    def has_qk(self) -> bool:
        """True when q and k were recorded (the neuron view needs them)."""
        return self.queries is not None

    @property
    def has_weights(self) -> bool:
        """True when the weights themselves are stored (not recomputed from q and k)."""
        return self.weights is not None

    @property
    def has_mask(self) -> bool:
        """True when some key is hidden from some query by a mask or mask rule."""
        return self.mask is not None or self.key_spans is not None

    @property
    def nbytes(self) -> int:
        """Bytes the stream's arrays hold."""
        held = [getattr(self, f) for f in ARRAY_FIELDS if f != "attention"]
        held.append(self.weights)
        return sum(int(a.nbytes) for a in held if a is not None)

    def kv_head(self, head: int) -> int:
        """The key head that query head ``head`` is dot-producted with."""
        return head // (self.num_heads // self.num_kv_heads)

    def layer_position(self, layer: int) -> int:
        """Position in this stream of the model's layer ``layer``."""
        try:
            return self.layers.index(layer)
        except ValueError:
            raise AttnscopeIndexError(
                f"layer {layer} was not captured in stream {self.name!r}; "
                f"captured layers: {list(self.layers)}."
            ) from None

    # -- weights, on demand ----------------------------------------------------------------
    def attention_rows(
        self, position: int, head: int, rows: Rows, stop: int | None = None
    ) -> torch.Tensor:
        """Float32 weights of query ``rows`` (a slice or indices) of one head, as a tensor.

        The one way every reader of a stream gets weights: from the stored
        weights, or recomputed from q and k. Ask for at most
        :func:`~attnscope.trace.rows.block_rows` rows at a time. ``stop``
        keeps keys ``0 .. stop`` only (:func:`~attnscope.trace.rows.visible_stop`
        says where the rows' weights end).

        Examples
        --------
        >>> import numpy as np
        >>> s = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32))
        >>> s.attention_rows(0, 0, slice(0, 1)).tolist()
        [[0.5, 0.5]]
        """
        from attnscope.trace.rows import compute_rows

        return compute_rows(self, position, head, rows, stop)

    def head_attention(self, position: int, head: int) -> FloatArray:
        """One head's ``(q_len, k_len)`` weights (within :data:`MAX_ATTENTION_BYTES`).

        Examples
        --------
        >>> import numpy as np
        >>> AttentionStream(np.full((1, 2, 2, 2), 0.5, np.float32)).head_attention(0, 1).shape
        (2, 2)
        """
        head_weights: FloatArray = self._materialise((position, head))[0, 0]
        return head_weights

    def layer_attention(self, position: int) -> FloatArray:
        """One layer's ``(heads, q_len, k_len)`` weights (within :data:`MAX_ATTENTION_BYTES`).

        Examples
        --------
        >>> import numpy as np
        >>> AttentionStream(np.full((2, 1, 2, 2), 0.5, np.float32)).layer_attention(1).shape
        (1, 2, 2)
        """
        layer_weights: FloatArray = self._materialise((position, None))[0]
        return layer_weights

    @property
    def attention(self) -> FloatArray:
        """float32 ``(layers, heads, q_len, k_len)`` weights, materialised on first use.

        Raises :class:`~attnscope.errors.AttnscopeError` when the array would
        take more than :data:`MAX_ATTENTION_BYTES`; read one head or layer
        (:meth:`head_attention`, :meth:`layer_attention`), or rows
        (:meth:`attention_rows`), instead.
        """
        if self.weights is not None and self.weights.dtype == np.float32:
            return self.weights  # type: ignore[return-value]
        if self._attention is None:
            self._attention = self._materialise(None)
        return self._attention

    def _materialise(self, which: tuple[int, int | None] | None) -> FloatArray:
        """Weights of every layer (None), one layer ``(p, None)`` or one head ``(p, h)``."""
        from attnscope.trace.rows import row_blocks

        num_layers, num_heads, q_len, k_len = self.shape
        positions = range(num_layers) if which is None else [which[0]]
        heads = range(num_heads) if which is None or which[1] is None else [which[1]]
        nbytes = 4 * len(positions) * len(heads) * q_len * k_len
        if nbytes > MAX_ATTENTION_BYTES:
            what = "the attention" if which is None else "one layer"
            if which is not None and which[1] is not None:
                what = "one head"
            raise AttnscopeError(
                f"stream {self.name!r}: materialising {what} ({len(positions)} layer(s) x "
                f"{len(heads)} head(s) x {q_len} x {k_len} float32) would take "
                f"{_size(nbytes)}, more than the {_size(MAX_ATTENTION_BYTES)} limit "
                "(attnscope.trace.stream.MAX_ATTENTION_BYTES). The views and save_html "
                "compute what they show from q and k without it; to read weights, ask for "
                "one head or a block of rows (stream.head_attention(layer, head), "
                "stream.attention_rows(layer, head, slice(start, stop))), or capture fewer "
                "layers (attnscope.capture(..., layers=[...]))."
            )
        out = np.empty((len(positions), len(heads), q_len, k_len), dtype=np.float32)
        for i, position in enumerate(positions):
            for j, head in enumerate(heads):
                if self.weights is not None:
                    out[i, j] = self.weights[position, head]
                    continue
                for rows in row_blocks(q_len, k_len):
                    out[i, j, rows] = self.attention_rows(position, head, rows).numpy()
        return out

    def recompute(self) -> FloatArray:
        """Attention recomputed from q, k, scaling, bias, mask, softcap and sinks.

        Examples
        --------
        >>> import numpy as np
        >>> q = np.zeros((1, 1, 2, 4), np.float32)
        >>> AttentionStream(queries=q, keys=q).recompute()[0, 0, 0].tolist()
        [0.5, 0.5]
        """
        if self.queries is None or self.keys is None or self.scaling is None:
            raise AttnscopeError(
                f"stream {self.name!r} has no queries/keys to recompute attention from."
            )
        if self.weights is None:
            return self.attention
        recomputed = AttentionStream(**{**self._fields(), "attention": None})
        return recomputed.attention

    def check_error(self) -> float | None:
        """Max |recomputed - recorded| over the weights this stream can hold q and k to.

        Stored weights are compared row block by row block; otherwise the
        ``reference`` rows the model gave. None when there is nothing to
        compare (no q/k, or q/k with no weights and no reference).

        Examples
        --------
        >>> import numpy as np
        >>> q = np.zeros((1, 1, 2, 4), np.float32)
        >>> AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32), queries=q, keys=q).check_error()
        0.0
        """
        from attnscope.trace.rows import row_blocks

        if not self.has_qk:
            return None
        if self.weights is not None:
            qk_only = AttentionStream(**{**self._fields(), "attention": None})
            worst = 0.0
            for position in range(self.num_layers):
                for head in range(self.num_heads):
                    for rows in row_blocks(self.q_len, self.k_len):
                        got = qk_only.attention_rows(position, head, rows)
                        want = self.attention_rows(position, head, rows)
                        worst = max(worst, float((got - want).abs().max()))
            return worst
        if self.reference is None or self.reference_rows is None:
            return None
        from attnscope.trace.rows import compute_heads

        worst = 0.0
        for position in range(self.num_layers):  # every head of a layer at once
            got_rows = compute_heads(self, position, self.reference_rows).numpy()
            want = self.reference[position]
            worst = max(worst, float(np.max(np.abs(got_rows - want), initial=0.0)))
        return worst

    def _fields(self) -> dict[str, Any]:
        """Constructor arguments that rebuild this stream."""
        fields = {f: getattr(self, f) for f in ARRAY_FIELDS if f != "attention"}
        fields["attention"] = self.weights
        return {
            **fields,
            "query_side": self.query_side,
            "key_side": self.key_side,
            "layers": self.layers,
            "name": self.name,
            "device": self.device,
        }

    def select_layers(self, positions: list[int]) -> AttentionStream:
        """A stream of only the layers at ``positions`` (in that order).

        Examples
        --------
        >>> import numpy as np
        >>> s = AttentionStream(np.full((3, 1, 1, 1), 1.0, np.float32), layers=(4, 5, 6))
        >>> s.select_layers([2, 0]).layers
        (6, 4)
        """
        fields = self._fields()
        per_layer = (
            *("attention", "queries", "keys", "scaling", "softcap", "sinks", "reference"),
            "value_norms",
        )
        for name in (*per_layer, "bias", "mask", "key_spans"):
            value = fields[name]
            if value is not None and (name in per_layer or value.shape[0] > 1):
                fields[name] = value[positions]
        fields["layers"] = tuple(self.layers[p] for p in positions)
        return AttentionStream(**fields)


def _as_weights(value: Any) -> npt.NDArray[np.floating[Any]]:
    """float16 weights stay float16 (compact storage); anything else becomes float32."""
    if isinstance(value, np.ndarray) and value.dtype == np.float16:
        if not all(np.isfinite(layer).all() for layer in value.reshape(-1, *value.shape[-2:])):
            raise AttnscopeError("attention contains non-finite values.")
        return np.ascontiguousarray(value)
    return as_float32(value, "attention")


def _as_vectors(value: Any, what: str) -> FloatArray:
    """float16 q or k stay float16 (a half-precision model's own values); others float32.

    A float16 tensor is kept as float16 too; bfloat16, which numpy has no
    type for, becomes float32 here (capture stores it as float16 itself).
    """
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.dtype == torch.float16:
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.dtype == np.float16:
        if not all(np.isfinite(layer).all() for layer in value.reshape(-1, *value.shape[-2:])):
            raise AttnscopeError(
                f"{what} contains non-finite values; check the model ran without overflow."
            )
        return np.ascontiguousarray(value)  # type: ignore[return-value]
    return as_float32(value, what)


def _check_broadcast(shape: tuple[int, ...], full: tuple[int, ...], what: str, stream: str) -> None:
    ok = len(shape) == 4 and all(s in (1, f) for s, f in zip(shape, full, strict=True))
    if not ok:
        raise AttnscopeError(
            f"{stream}: {what} has shape {shape}; it must be 4-D and broadcastable to "
            f"the attention shape {full} (use 1 for a shared axis)."
        )
