"""AttentionTrace: the one object every source produces and every view reads.

A trace holds the tokens of one forward pass and one or more *streams* of
attention. A plain encoder or decoder has one stream, ``"self"``; an
encoder–decoder model has ``"encoder"``, ``"decoder"`` and ``"cross"``. Each
stream keeps the attention weights and, where the source could record them,
the query and key vectors as they were actually dot-producted (after RoPE and
q/k norms), the scaling, any additive bias and the mask, so the trace can
recompute its own attention (:meth:`AttentionTrace.check`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from attnscope._validate import (
    as_float32,
    check_attention,
    check_bool_mask,
    check_rank,
)
from attnscope.recompute import recompute_attention

if TYPE_CHECKING:
    import torch

    from attnscope.mha import MultiHeadAttention

Side = Literal["source", "target"]
TokenKind = Literal["token", "special", "padding"]
FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]

FORMAT_VERSION = 1
STREAM_ORDER = ("self", "encoder", "decoder", "cross")


@dataclass(frozen=True)
class Tokens:
    """The tokens of one sequence: display labels, raw tokens and their kinds.

    Parameters
    ----------
    labels
        Readable display strings (``Ġcat`` shown as ``cat``).
    raw
        The tokenizer's own strings, kept for tooltips. Defaults to ``labels``.
    kinds
        ``"token"``, ``"special"`` (``[CLS]``, ``<s>`` ...) or ``"padding"`` per
        token. Defaults to all ``"token"``.
    segments
        For sentence pairs: 0 for tokens of sentence A, 1 for sentence B.

    Examples
    --------
    >>> Tokens(["[CLS]", "hi", "[SEP]"], kinds=["special", "token", "special"]).labels
    ('[CLS]', 'hi', '[SEP]')
    """

    labels: tuple[str, ...]
    raw: tuple[str, ...] = ()
    kinds: tuple[TokenKind, ...] = ()
    segments: tuple[int, ...] | None = None

    def __init__(
        self,
        labels: Sequence[str],
        raw: Sequence[str] | None = None,
        kinds: Sequence[TokenKind] | None = None,
        segments: Sequence[int] | None = None,
    ) -> None:
        labels_t = tuple(str(t) for t in labels)
        raw_t = tuple(str(t) for t in raw) if raw is not None else labels_t
        kinds_t: tuple[TokenKind, ...] = (
            tuple(kinds) if kinds is not None else tuple("token" for _ in labels_t)
        )
        if len(raw_t) != len(labels_t):
            raise ValueError(
                f"raw tokens has {len(raw_t)} entries but labels has {len(labels_t)}; "
                "pass one raw token per label."
            )
        if len(kinds_t) != len(labels_t):
            raise ValueError(
                f"kinds has {len(kinds_t)} entries but labels has {len(labels_t)}; "
                "pass one kind per token."
            )
        bad = sorted({k for k in kinds_t if k not in ("token", "special", "padding")})
        if bad:
            raise ValueError(f"unknown token kind(s) {bad}; use 'token', 'special' or 'padding'.")
        seg_t: tuple[int, ...] | None = None
        if segments is not None:
            seg_t = tuple(int(s) for s in segments)
            if len(seg_t) != len(labels_t):
                raise ValueError(
                    f"segments has {len(seg_t)} entries but labels has {len(labels_t)}; "
                    "pass one segment id (0 = sentence A, 1 = sentence B) per token."
                )
            if any(s not in (0, 1) for s in seg_t):
                raise ValueError("segments must be 0 (sentence A) or 1 (sentence B).")
        object.__setattr__(self, "labels", labels_t)
        object.__setattr__(self, "raw", raw_t)
        object.__setattr__(self, "kinds", kinds_t)
        object.__setattr__(self, "segments", seg_t)

    def __len__(self) -> int:
        return len(self.labels)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form, used by :meth:`AttentionTrace.save` and the widget."""
        return {
            "labels": list(self.labels),
            "raw": list(self.raw),
            "kinds": list(self.kinds),
            "segments": None if self.segments is None else list(self.segments),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tokens:
        """Inverse of :meth:`to_json`."""
        return cls(data["labels"], data.get("raw"), data.get("kinds"), data.get("segments"))


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


class AttentionTrace:
    """Tokens and attention of one forward pass, ready to show or save.

    Parameters
    ----------
    tokens
        Display labels of the input tokens (or a :class:`Tokens`).
    attention
        float32 ``(layers, heads, q_len, k_len)`` for the single ``"self"``
        stream. For encoder–decoder traces use :meth:`from_streams`.
    raw_tokens, token_kinds, segments
        See :class:`Tokens`.
    queries, keys, scaling, bias, mask, softcap, sinks, layers
        See :class:`AttentionStream`.
    metadata
        JSON-able facts about the source (``source``, ``model_type`` ...).
    notes
        Sentences for the reader, such as why the neuron view is unavailable.

    Examples
    --------
    >>> import numpy as np
    >>> att = np.tril(np.ones((3, 3), dtype=np.float32))
    >>> att /= att.sum(-1, keepdims=True)
    >>> trace = AttentionTrace(["The", "cat", "sat"], att[None, None])
    >>> trace.attention.shape
    (1, 1, 3, 3)
    """

    def __init__(
        self,
        tokens: Sequence[str] | Tokens,
        attention: npt.ArrayLike,
        *,
        raw_tokens: Sequence[str] | None = None,
        token_kinds: Sequence[TokenKind] | None = None,
        segments: Sequence[int] | None = None,
        queries: npt.ArrayLike | None = None,
        keys: npt.ArrayLike | None = None,
        scaling: npt.ArrayLike | None = None,
        bias: npt.ArrayLike | None = None,
        mask: npt.ArrayLike | None = None,
        softcap: npt.ArrayLike | None = None,
        sinks: npt.ArrayLike | None = None,
        layers: Sequence[int] = (),
        metadata: Mapping[str, Any] | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        source = (
            tokens
            if isinstance(tokens, Tokens)
            else Tokens(tokens, raw_tokens, token_kinds, segments)
        )
        stream = AttentionStream(
            attention=attention,  # type: ignore[arg-type]
            layers=tuple(layers),
            queries=queries,  # type: ignore[arg-type]
            keys=keys,  # type: ignore[arg-type]
            scaling=scaling,  # type: ignore[arg-type]
            bias=bias,  # type: ignore[arg-type]
            mask=mask,  # type: ignore[arg-type]
            softcap=softcap,  # type: ignore[arg-type]
            sinks=sinks,  # type: ignore[arg-type]
            name="self",
        )
        self._init(source, None, {"self": stream}, metadata, notes)

    def _init(
        self,
        source: Tokens,
        target: Tokens | None,
        streams: Mapping[str, AttentionStream],
        metadata: Mapping[str, Any] | None,
        notes: Sequence[str],
    ) -> None:
        if not streams:
            raise ValueError("a trace needs at least one stream of attention.")
        if len(source) == 0:
            raise ValueError("a trace needs at least one token.")
        for name, stream in streams.items():
            if name != stream.name:
                raise ValueError(f"stream stored under {name!r} is named {stream.name!r}.")
            for side, length, axis in (
                (stream.query_side, stream.q_len, "rows (queries)"),
                (stream.key_side, stream.k_len, "columns (keys)"),
            ):
                toks = source if side == "source" else target
                if toks is None:
                    raise ValueError(
                        f"stream {name!r} uses target tokens but the trace has none; "
                        "pass target= tokens."
                    )
                if len(toks) != length:
                    raise ValueError(
                        f"stream {name!r} has {length} {axis} but there are {len(toks)} "
                        f"{side} tokens; pass one token per position."
                    )
        self.source = source
        self.target = target
        self.streams: dict[str, AttentionStream] = {
            n: streams[n] for n in sorted(streams, key=_stream_rank)
        }
        meta = dict(metadata or {})
        try:
            json.dumps(meta, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"metadata must be JSON-serialisable (no NaN or inf): {err}") from None
        self.metadata: dict[str, Any] = meta
        self.notes: list[str] = [str(n) for n in notes]

    @classmethod
    def from_streams(
        cls,
        source: Tokens,
        streams: Sequence[AttentionStream] | Mapping[str, AttentionStream],
        *,
        target: Tokens | None = None,
        metadata: Mapping[str, Any] | None = None,
        notes: Sequence[str] = (),
    ) -> AttentionTrace:
        """Build a trace with several streams (encoder, decoder, cross).

        Examples
        --------
        >>> import numpy as np
        >>> enc = AttentionStream(np.full((1, 1, 2, 2), 0.5, np.float32), name="encoder")
        >>> cross = AttentionStream(np.full((1, 1, 1, 2), 0.5, np.float32), name="cross",
        ...                         query_side="target", key_side="source")
        >>> dec = AttentionStream(np.ones((1, 1, 1, 1), np.float32), name="decoder",
        ...                       query_side="target", key_side="target")
        >>> t = AttentionTrace.from_streams(Tokens(["a", "b"]), [enc, dec, cross],
        ...                                 target=Tokens(["x"]))
        >>> list(t.streams)
        ['encoder', 'decoder', 'cross']
        """
        items = dict(streams) if isinstance(streams, Mapping) else {s.name: s for s in streams}
        trace = cls.__new__(cls)
        trace._init(source, target, items, metadata, notes)
        return trace

    # -- the default stream, for the common single-stream case -------------------------
    @property
    def stream(self) -> AttentionStream:
        """The first stream (``"self"`` or ``"encoder"``)."""
        return next(iter(self.streams.values()))

    @property
    def tokens(self) -> list[str]:
        """Display labels of the input (source) tokens."""
        return list(self.source.labels)

    @property
    def raw_tokens(self) -> list[str]:
        """The tokenizer's own strings for the input tokens."""
        return list(self.source.raw)

    @property
    def attention(self) -> FloatArray:
        """Attention of the first stream, ``(layers, heads, q_len, k_len)``."""
        return self.stream.attention

    @property
    def queries(self) -> FloatArray | None:
        """Queries of the first stream, or None."""
        return self.stream.queries

    @property
    def keys(self) -> FloatArray | None:
        """Keys of the first stream, or None."""
        return self.stream.keys

    @property
    def scaling(self) -> FloatArray | None:
        """Per-layer scaling of the first stream, or None."""
        return self.stream.scaling

    def tokens_for(self, side: Side) -> Tokens:
        """The :class:`Tokens` of ``"source"`` or ``"target"``."""
        toks = self.source if side == "source" else self.target
        if toks is None:
            raise ValueError("this trace has no target tokens.")
        return toks

    def check(self) -> float:
        """Recompute attention from q, k, scaling, bias and mask; return the max abs error.

        Streams without q/k are skipped; a trace with none raises ValueError.

        Examples
        --------
        >>> import torch
        >>> from attnscope import MultiHeadAttention
        >>> mha = MultiHeadAttention(8, 2)
        >>> trace = AttentionTrace.from_module(mha, torch.randn(1, 3, 8), ["a", "b", "c"])
        >>> trace.check() < 1e-6
        True
        """
        errors = [
            float(np.max(np.abs(s.recompute() - s.attention), initial=0.0))
            for s in self.streams.values()
            if s.has_qk
        ]
        if not errors:
            raise ValueError(
                "this trace has no queries/keys, so its attention cannot be recomputed "
                "(the source recorded attention weights only)."
            )
        return max(errors)

    # -- builders ----------------------------------------------------------------------
    @classmethod
    def from_tensors(
        cls,
        attention: Any,
        tokens: Sequence[str],
        *,
        sentence_b_start: int | None = None,
        prettify_tokens: bool = True,
        batch_index: int = 0,
    ) -> AttentionTrace:
        """Build a trace from attention tensors in the format bertviz takes.

        Parameters
        ----------
        attention
            A tuple/list with one ``(batch, heads, n, n)`` tensor or array per
            layer (what a Hugging Face model returns with
            ``output_attentions=True``), or one ``(layers, heads, n, n)`` array.
        tokens
            One string per position.
        sentence_b_start
            Index of the first token of sentence B, for pair inputs.
        prettify_tokens
            Clean ``Ġ``, ``▁`` and ``##`` markers for display (raw tokens are kept).
        batch_index
            Which batch item to show.

        Examples
        --------
        >>> import torch
        >>> att = (torch.full((1, 2, 3, 3), 1 / 3),)
        >>> AttentionTrace.from_tensors(att, ["a", "b", "c"]).attention.shape
        (1, 2, 3, 3)
        """
        from attnscope._tensors import stack_layers
        from attnscope.tokens import display_labels, guess_kinds

        stacked = stack_layers(attention, batch_index=batch_index)
        raw = [str(t) for t in tokens]
        if stacked.shape[-1] != len(raw) or stacked.shape[-2] != len(raw):
            raise ValueError(
                f"attention covers {stacked.shape[-2]}x{stacked.shape[-1]} positions but "
                f"{len(raw)} tokens were given; pass one token per position."
            )
        labels = display_labels(raw) if prettify_tokens else raw
        segments = None
        if sentence_b_start is not None:
            if not 0 < sentence_b_start < len(raw):
                raise ValueError(
                    f"sentence_b_start={sentence_b_start} must lie inside the "
                    f"{len(raw)} tokens (1..{len(raw) - 1})."
                )
            segments = [0 if i < sentence_b_start else 1 for i in range(len(raw))]
        return cls(
            labels,
            stacked,
            raw_tokens=raw,
            token_kinds=guess_kinds(raw),
            segments=segments,
            metadata={"source": "tensors"},
        )

    @classmethod
    def from_module(
        cls,
        modules: MultiHeadAttention | Sequence[MultiHeadAttention],
        x: torch.Tensor,
        tokens: Sequence[str],
        **forward_kwargs: Any,
    ) -> AttentionTrace:
        """Run :class:`~attnscope.MultiHeadAttention` module(s) and record a trace.

        Several modules are stacked as layers, each fed the previous one's
        output. ``forward_kwargs`` (``attn_mask``, ``key_padding_mask``) go to
        every module.

        Examples
        --------
        >>> import torch
        >>> from attnscope import MultiHeadAttention
        >>> layers = [MultiHeadAttention(8, 2, causal=True) for _ in range(2)]
        >>> t = AttentionTrace.from_module(layers, torch.randn(1, 4, 8), list("abcd"))
        >>> t.attention.shape, t.check() < 1e-6
        ((2, 2, 4, 4), True)
        """
        from attnscope.mha_trace import trace_from_modules

        return trace_from_modules(cls, modules, x, tokens, **forward_kwargs)

    # -- persistence -------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the trace to a ``.npz`` file (no pickle); return the path.

        Examples
        --------
        >>> import numpy as np, tempfile, os
        >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
        >>> p = t.save(os.path.join(tempfile.mkdtemp(), "t.npz"))
        >>> AttentionTrace.load(p).tokens
        ['a']
        """
        path = Path(path)
        if path.suffix != ".npz":
            path = (
                path.with_suffix(path.suffix + ".npz") if path.suffix else path.with_suffix(".npz")
            )
        arrays: dict[str, np.ndarray[Any, Any]] = {}
        streams_meta = []
        for name, s in self.streams.items():
            streams_meta.append(
                {
                    "name": name,
                    "query_side": s.query_side,
                    "key_side": s.key_side,
                    "layers": list(s.layers),
                }
            )
            for attr in _ARRAY_FIELDS:
                value = getattr(s, attr)
                if value is not None:
                    arrays[f"{name}/{attr}"] = value
        header = {
            "format": "attnscope.AttentionTrace",
            "version": FORMAT_VERSION,
            "source": self.source.to_json(),
            "target": None if self.target is None else self.target.to_json(),
            "streams": streams_meta,
            "metadata": self.metadata,
            "notes": self.notes,
        }
        arrays["header"] = np.array(json.dumps(header))
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
        return path

    @classmethod
    def load(cls, path: str | Path) -> AttentionTrace:
        """Read a trace written by :meth:`save`.

        Examples
        --------
        >>> import numpy as np, tempfile, os
        >>> t = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
        >>> AttentionTrace.load(t.save(os.path.join(tempfile.mkdtemp(), "t"))).attention.shape
        (1, 1, 1, 1)
        """
        try:
            opened = np.load(Path(path), allow_pickle=False)
        except ValueError:  # numpy's message for a non-numpy file talks about pickles
            raise ValueError(
                f"{path} is not an attnscope trace (not a .npz file); write one with "
                "AttentionTrace.save."
            ) from None
        if not isinstance(opened, np.lib.npyio.NpzFile):
            raise ValueError(
                f"{path} holds a single array, not an attnscope trace; write one with "
                "AttentionTrace.save."
            )
        with opened as data:
            if "header" not in data:
                raise ValueError(f"{path} is not an attnscope trace (no header).")
            header = json.loads(str(data["header"]))
            if header.get("format") != "attnscope.AttentionTrace":
                raise ValueError(f"{path} is not an attnscope trace.")
            if int(header.get("version", 0)) > FORMAT_VERSION:
                raise ValueError(
                    f"{path} was written by a newer attnscope (format "
                    f"{header['version']}); upgrade attnscope to read it."
                )
            streams = []
            for sm in header["streams"]:
                name = sm["name"]
                kwargs = {
                    attr: data[f"{name}/{attr}"]
                    for attr in _ARRAY_FIELDS
                    if f"{name}/{attr}" in data
                }
                streams.append(
                    AttentionStream(
                        name=name,
                        query_side=sm["query_side"],
                        key_side=sm["key_side"],
                        layers=tuple(sm["layers"]),
                        **kwargs,
                    )
                )
        target = None if header["target"] is None else Tokens.from_json(header["target"])
        return cls.from_streams(
            Tokens.from_json(header["source"]),
            streams,
            target=target,
            metadata=header["metadata"],
            notes=header["notes"],
        )

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{n}: {s.num_layers}x{s.num_heads} heads, {s.q_len}x{s.k_len}"
            + (" +qk" if s.has_qk else "")
            for n, s in self.streams.items()
        )
        model = self.metadata.get("model_type") or self.metadata.get("source") or "trace"
        return f"<AttentionTrace {model}: {len(self.source)} tokens; {parts}>"


_ARRAY_FIELDS = ("attention", "queries", "keys", "scaling", "bias", "mask", "softcap", "sinks")


def _stream_rank(name: str) -> int:
    return STREAM_ORDER.index(name) if name in STREAM_ORDER else len(STREAM_ORDER)
