"""AttentionTrace: the one object every source produces and every view reads.

A trace holds the tokens of one forward pass and one or more *streams* of
attention. A plain encoder or decoder has one stream, ``"self"``; an
encoder–decoder model has ``"encoder"``, ``"decoder"`` and ``"cross"``. Each
stream keeps the attention weights and, where the source could record them,
the query and key vectors as they were actually dot-producted (after RoPE and
q/k norms), the scaling, any additive bias and the mask, so the trace can
recompute its own attention (:meth:`AttentionTrace.check`).

The parts live in their own modules: :class:`~attnscope.trace.tokens.Tokens`,
:class:`~attnscope.trace.stream.AttentionStream`, the checked whole in
:class:`~attnscope.trace.parts.TraceParts`, and the file format in
:mod:`attnscope.trace.file`. The builders (file, module, TransformerLens)
return :class:`~attnscope.trace.parts.TraceParts` and this class is made from
them, so they never import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy.typing as npt

from attnscope.errors import AttnscopeError
from attnscope.trace.images import ImageRegion, check_regions
from attnscope.trace.labels import TokenKind
from attnscope.trace.parts import STREAM_ORDER, TraceParts
from attnscope.trace.stream import AttentionStream, FloatArray, Side
from attnscope.trace.tokens import Tokens, token_strings

if TYPE_CHECKING:
    import torch

    from attnscope.nn.attention import MultiHeadAttention

__all__ = ["STREAM_ORDER", "AttentionTrace"]


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
        self._init(TraceParts(source, {"self": stream}, metadata=metadata, notes=notes))

    def _init(self, parts: TraceParts) -> None:
        self.source = parts.source
        self.target = parts.target
        self.streams: dict[str, AttentionStream] = parts.streams
        self.metadata: dict[str, Any] = parts.metadata
        self.notes: list[str] = parts.notes
        self._images: list[ImageRegion] = parts.images

    @classmethod
    def _from_parts(cls, parts: TraceParts) -> AttentionTrace:
        """A trace made of what a builder returned (checked when the parts were made)."""
        trace = cls.__new__(cls)
        trace._init(parts)
        return trace

    def _parts(self) -> TraceParts:
        """The parts of this trace, checked again (what :meth:`save` writes)."""
        return TraceParts(
            self.source,
            self.streams,
            target=self.target,
            metadata=self.metadata,
            notes=self.notes,
            images=self._images,
        )

    # -- images: set by attnscope.capture(..., images=...) (issue 25) -------------------
    @property
    def images(self) -> list[ImageRegion]:
        """One :class:`~attnscope.trace.images.ImageRegion` per image in the input, in order.

        Empty for text-only traces. Setting it checks every position against the tokens.

        Examples
        --------
        >>> import numpy as np
        >>> AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)).images
        []
        """
        return list(self._images)

    @images.setter
    def images(self, regions: Sequence[ImageRegion]) -> None:
        self._images = check_regions(regions, len(self.source))

    @property
    def device(self) -> str:
        """Where attention is recomputed from q and k, a block of rows at a time.

        :func:`attnscope.capture` sets the model's device (``"cuda:0"`` for a
        model on a GPU): top keys, thumbnails, statistics, rollout and
        :meth:`check` then compute there in float32, a block at a time, and
        only their results come back to the host. Set ``"cpu"`` to keep the
        device free (or ``"cuda"`` to use a GPU for a trace loaded from disk).

        Examples
        --------
        >>> import numpy as np
        >>> trace = AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32))
        >>> trace.device
        'cpu'
        >>> trace.device = "cpu"
        """
        return self.stream.device

    @device.setter
    def device(self, device: str) -> None:
        import torch

        try:
            torch.empty(0, device=device)
        except (RuntimeError, ValueError, AssertionError) as err:  # no such device here
            raise AttnscopeError(
                f"device {device!r} cannot hold tensors here ({err}); pass 'cpu' or a "
                "device torch can use (torch.cuda.is_available() says whether 'cuda' can)."
            ) from None
        for stream in self.streams.values():
            stream.device = str(device)

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
        return cls._from_parts(
            TraceParts(source, streams, target=target, metadata=metadata, notes=notes)
        )

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
        """Attention of the first stream, ``(layers, heads, q_len, k_len)``.

        Materialised on first use from q and k when the stream keeps only
        those; refused with a message naming the memory it would take when it
        would not fit (see :attr:`AttentionStream.attention`).
        """
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

    # -- generation: set by attnscope.capture(..., max_new_tokens=N) ------------------
    @property
    def prompt_length(self) -> int | None:
        """How many tokens the prompt has when the trace holds a generation, else None.

        Tokens ``[:prompt_length]`` are the prompt (segment 0), the rest were generated
        (segment 1); ``metadata["generation"]`` holds the generation settings.

        Examples
        --------
        >>> import numpy as np
        >>> AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)).prompt_length is None
        True
        """
        generation = self.metadata.get("generation")
        return None if generation is None else int(generation["prompt_length"])

    @property
    def generated_ids(self) -> list[int] | None:
        """The ids the model generated (after the prompt), or None when it generated nothing."""
        generation = self.metadata.get("generation")
        return None if generation is None else [int(i) for i in generation["generated_ids"]]

    @property
    def generated_text(self) -> str | None:
        """The generated tokens decoded to text (special tokens left out), or None."""
        generation = self.metadata.get("generation")
        return None if generation is None else str(generation["generated_text"])

    def tokens_for(self, side: Side) -> Tokens:
        """The :class:`Tokens` of ``"source"`` or ``"target"``."""
        toks = self.source if side == "source" else self.target
        if toks is None:
            raise AttnscopeError("this trace has no target tokens.")
        return toks

    def check(self) -> float:
        """Recompute attention from q, k, scaling, bias and mask; return the max abs error.

        Each stream's recomputed rows are held to its stored weights, or, when
        it keeps only q and k (as :func:`attnscope.capture` does), to the rows
        of weights the model itself gave at capture (``reference``). Streams
        without q/k are skipped; a trace with none raises ValueError.

        Examples
        --------
        >>> import torch
        >>> from attnscope import MultiHeadAttention
        >>> mha = MultiHeadAttention(8, 2)
        >>> trace = AttentionTrace.from_module(mha, torch.randn(1, 3, 8), ["a", "b", "c"])
        >>> trace.check() < 1e-6
        True
        """
        errors = [s.check_error() for s in self.streams.values()]
        found = [e for e in errors if e is not None]
        if not found:
            raise AttnscopeError(
                "this trace has no queries/keys with weights to hold them to, so its "
                "attention cannot be checked (the source recorded attention weights only, "
                "or q/k with no reference rows)."
            )
        return max(found)

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
        from attnscope.trace.tensors import stack_layers

        raw = list(token_strings(tokens))
        stacked = stack_layers(attention, batch_index=batch_index)
        if stacked.shape[-1] != len(raw) or stacked.shape[-2] != len(raw):
            raise AttnscopeError(
                f"attention covers {stacked.shape[-2]}x{stacked.shape[-1]} positions but "
                f"{len(raw)} tokens were given; pass one token per position."
            )
        segments = None
        if sentence_b_start is not None:
            if not 0 < sentence_b_start < len(raw):
                raise AttnscopeError(
                    f"sentence_b_start={sentence_b_start} must lie inside the "
                    f"{len(raw)} tokens (1..{len(raw) - 1})."
                )
            segments = [0 if i < sentence_b_start else 1 for i in range(len(raw))]
        source = Tokens.from_strings(raw, prettify=prettify_tokens, segments=segments)
        return cls(source, stacked, metadata={"source": "tensors"})

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
        from attnscope.trace.from_module import parts_from_modules

        return cls._from_parts(parts_from_modules(modules, x, tokens, **forward_kwargs))

    @classmethod
    def from_transformer_lens(
        cls,
        cache: Any,
        tokens: Any,
        *,
        batch_index: int = 0,
        prettify_tokens: bool = True,
    ) -> AttentionTrace:
        """Build a trace from a TransformerLens ``ActivationCache``.

        Weights come from each layer's ``hook_pattern``; q and k from
        ``hook_rot_q`` / ``hook_rot_k`` on rotary models and ``hook_q`` /
        ``hook_k`` otherwise, with the mask (from ``hook_attn_scores``) and the
        model's attention scale, so :meth:`check` and the neuron view work.
        Layers missing from the cache (a ``names_filter``) are left out.

        Parameters
        ----------
        cache
            What ``logits, cache = model.run_with_cache(tokens)`` returns.
        tokens
            One string per position (``model.to_str_tokens(text)``), or the
            token ids when the cache's model has a tokenizer.
        batch_index
            Which batch item to show.
        prettify_tokens
            Clean ``Ġ``, ``▁`` and ``##`` markers for display.

        Examples
        --------
        >>> import torch
        >>> from transformers import GPT2Config, GPT2LMHeadModel
        >>> from transformer_lens.model_bridge.sources import build_bridge_from_module
        >>> hf = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=50,
        ...                                 bos_token_id=0, eos_token_id=0)).eval()
        >>> bridge = build_bridge_from_module(hf, "GPT2LMHeadModel", hf_config=hf.config)
        >>> _, cache = bridge.run_with_cache(torch.tensor([[1, 2, 3]]))
        >>> trace = AttentionTrace.from_transformer_lens(cache, ["The", " cat", " sat"])
        >>> trace.attention.shape, trace.check() < 1e-5
        ((2, 4, 3, 3), True)
        """
        from attnscope.trace.from_transformer_lens import parts_from_transformer_lens

        return cls._from_parts(
            parts_from_transformer_lens(
                cache, tokens, batch_index=batch_index, prettify_tokens=prettify_tokens
            )
        )

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
        from attnscope.trace.file import save_parts

        return save_parts(self._parts(), path)

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
        from attnscope.trace.file import load_parts

        return cls._from_parts(load_parts(path))

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{n}: {s.num_layers}x{s.num_heads} heads, {s.q_len}x{s.k_len}"
            + (" +qk" if s.has_qk else "")
            for n, s in self.streams.items()
        )
        model = self.metadata.get("model_type") or self.metadata.get("source") or "trace"
        return f"<AttentionTrace {model}: {len(self.source)} tokens; {parts}>"
