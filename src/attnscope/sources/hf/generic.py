"""The generic route: any model whose attention goes through ``AttentionInterface``.

A :class:`~attnscope.sources.hf.recorder.Recorder` is registered (with the eager
mask function under the same name, or transformers builds no mask at all) and
the model is switched to it for one forward pass. Recorded calls are filed
into encoder / decoder / cross / self streams by the identity of the weights
tensor in the model's own outputs, never by module names.

A short probe pass first learns which call is which layer (eager weights,
labelled by identity); the real pass records the calls asked for as q/k
(their output from sdpa where the model supports it) and runs the others
with the model's original implementation, so memory grows with the
captured layers only, and as O(N) per head.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import torch

from attnscope.sources.hf.recorder import (
    AttentionCall,
    AttentionFunction,
    CannotRecordError,
    Recorder,
)
from attnscope.sources.hf.row_mask import skipped_or_lazy

# Output fields holding attention, and the stream each becomes.
FIELDS = {
    "attentions": "self",
    "encoder_attentions": "encoder",
    "decoder_attentions": "decoder",
    "cross_attentions": "cross",
}
_PROBE_TOKENS = 8
_names = itertools.count()

Label = tuple[str, int]


@contextmanager
def registered(recorder: Recorder) -> Iterator[str]:
    """Register ``recorder`` (and its mask function) under a fresh name; unregister on exit.

    A probe recorder (``weights=True``) gets every mask as a tensor
    (:func:`dense_mask`), so it can tell which calls are plainly causal; a
    recording one gets :func:`boolean_mask`, which leaves a plainly causal
    mask out as transformers does for sdpa.

    Examples
    --------
    >>> with registered(Recorder()) as name:
    ...     name.startswith("attnscope_")
    True
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    name = f"attnscope_{next(_names)}"
    AttentionInterface.register(name, recorder)
    AttentionMaskInterface.register(name, dense_mask if recorder.weights else boolean_mask)
    try:
        yield name
    finally:
        AttentionInterface._global_mapping.pop(name, None)
        AttentionMaskInterface._global_mapping.pop(name, None)


def boolean_mask(**kwargs: Any) -> Any:
    """The mask sdpa gets: None for a plainly causal one (a rule), else booleans (True = attend).

    transformers' eager mask is the boolean mask turned into a float one (0 or
    the dtype's minimum): at 32768 tokens 4.3 GB instead of 1.1 GB; the
    boolean one alone is 16 GiB at 131072 tokens. So a mask transformers may
    skip for sdpa (causal, no padding, no window that bites) is skipped
    here too, and the recorder, told by the probe which calls are causal,
    computes them with ``is_causal`` or a causal mask made a block of query
    rows at a time (:func:`~attnscope.sources.hf.recorder.eager_in_blocks`).
    Any other mask past :data:`~attnscope.sources.hf.row_mask.DENSE_MASK_VALUES`
    (a sliding window, chunks, padding) is a
    :class:`~attnscope.sources.hf.row_mask.RowMask`: its recipe, evaluated a block
    of query rows at a time where attention needs it, never N² at once.

    Examples
    --------
    >>> print(boolean_mask(batch_size=1, cache_position=None, q_length=2, kv_length=2))
    None
    """
    from transformers.masking_utils import sdpa_mask

    kwargs.pop("dtype", None)
    return skipped_or_lazy(sdpa_mask, kwargs)


def dense_mask(**kwargs: Any) -> Any:
    """The mask eager attention is built from, as a boolean tensor (True = attend), never None.

    Used on the short probe only (eight tokens), where it tells which calls
    are plainly causal.

    Examples
    --------
    >>> dense_mask(batch_size=1, cache_position=None, q_length=2, kv_length=2).tolist()
    [[[[True, False], [True, True]]]]
    """
    from transformers.masking_utils import sdpa_mask

    kwargs.pop("dtype", None)
    kwargs["allow_is_causal_skip"] = False
    return sdpa_mask(**kwargs)


def _original_function(model: Any) -> AttentionFunction | None:
    """The implementation the model was loaded with, when it can run from the eager mask."""
    from transformers import AttentionInterface

    if model.config._attn_implementation != "sdpa":
        return None
    # Typed against our own AttentionFunction, not transformers' private return types
    # (5.24 narrowed them and broke the old ignore).
    return cast("AttentionFunction | None", AttentionInterface._global_mapping.get("sdpa"))


def _fast_function(model: Any) -> AttentionFunction | None:
    """sdpa, for the output of recorded calls, when the model's code supports it."""
    from transformers import AttentionInterface

    if not getattr(type(model), "_supports_sdpa", False):
        return None
    # Typed against our own AttentionFunction, not transformers' private return types
    # (5.24 narrowed them and broke the old ignore).
    return cast("AttentionFunction | None", AttentionInterface._global_mapping.get("sdpa"))


def _label_calls(outputs: Any, calls: Sequence[AttentionCall]) -> list[Label | None]:
    """(stream, layer) of each recorded call, found by the identity of its weights."""
    found = {
        weights.data_ptr(): label
        for label, weights in _returned(outputs)
        if isinstance(weights, torch.Tensor)
    }
    return [found.get(c.weights_ptr) if c.weights is not None else None for c in calls]


def _returned(outputs: Any) -> list[tuple[Label, Any]]:
    """Everything the model returned as attention, with its (stream, layer)."""
    return [
        ((stream, layer), weights)
        for field, stream in FIELDS.items()
        for layer, weights in enumerate(getattr(outputs, field, None) or ())
        if weights is not None
    ]


def returned_call(weights: Any) -> AttentionCall:
    """A weights-only call for what the model returned as one layer's attention.

    Examples
    --------
    >>> returned_call({"local": None}).returned
    'the model returns its attention as a dict, not one weights tensor'
    """
    if isinstance(weights, torch.Tensor):
        return AttentionCall(weights=weights[0])
    kind = type(weights).__name__
    return AttentionCall(
        returned=f"the model returns its attention as a {kind}, not one weights tensor"
    )


def _unrecorded(outputs: Any, calls: Sequence[AttentionCall]) -> list[tuple[Label, Any]]:
    """Attention the model returned that no recorded call produced (its own code computed it)."""
    seen = {c.weights_ptr for c in calls if c.weights is not None}
    return [
        (label, w)
        for label, w in _returned(outputs)
        if not isinstance(w, torch.Tensor) or w.data_ptr() not in seen
    ]


def _run(model: Any, inputs: Mapping[str, torch.Tensor], recorder: Recorder, **extra: Any) -> Any:
    with registered(recorder) as name:
        try:
            model.set_attn_implementation(name)
        except (ValueError, ImportError) as err:  # e.g. a sub-model that cannot switch
            raise CannotRecordError(f"switching its attention failed: {err}") from err
        return model(**inputs, use_cache=False, **extra, **one_logit(model))


def one_logit(model: Any) -> dict[str, int]:
    """``logits_to_keep=1`` where the forward takes it: capture reads no logits.

    A language model's head otherwise computes N x vocabulary logits (float32
    in most heads): 67 GB at 131072 tokens for a 128256-token vocabulary.

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM, LlamaModel
    >>> config = LlamaConfig(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
    ...                      num_attention_heads=2, vocab_size=16)
    >>> one_logit(LlamaForCausalLM(config)), one_logit(LlamaModel(config))
    ({'logits_to_keep': 1}, {})
    """
    try:
        takes = "logits_to_keep" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # a forward with no readable signature
        takes = False
    return {"logits_to_keep": 1} if takes else {}


def _probe_inputs(inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    if "pixel_values" in inputs and "input_ids" in inputs:
        return dict(inputs)  # a VLM's prompt: cutting it would cut its image tokens (issue 25)
    return {
        k: v[:, :_PROBE_TOKENS] if k != "pixel_values" and v.ndim == 2 else v
        for k, v in inputs.items()
    }


def capture_generic(
    model: Any, inputs: Mapping[str, torch.Tensor], layers: Sequence[int] | None
) -> dict[str, list[tuple[int, AttentionCall]]]:
    """Run ``model`` once and return the recorded calls of each stream by model layer.

    Parameters
    ----------
    model
        A ``PreTrainedModel`` whose class can switch attention implementation;
        the caller restores it (see :func:`~attnscope.sources.hf.restore.preserved`).
    inputs
        Keyword arguments of the forward pass (batch of one).
    layers
        Model layer indices to record; None records all.

    Examples
    --------
    >>> import torch
    >>> from transformers import BertConfig, BertModel
    >>> from attnscope.sources.hf.restore import preserved
    >>> model = BertModel(BertConfig(num_hidden_layers=2, hidden_size=8, num_attention_heads=2,
    ...                              intermediate_size=8, vocab_size=16)).eval()
    >>> with preserved(model), torch.inference_mode():
    ...     streams = capture_generic(model, {"input_ids": torch.tensor([[1, 2, 3]])}, None)
    >>> [(layer, call.query.shape) for layer, call in streams["self"]]
    [(0, torch.Size([2, 3, 4])), (1, torch.Size([2, 3, 4]))]
    """
    original = _original_function(model)  # read before the switch below
    probe = Recorder(weights=True)
    probed = _run(model, _probe_inputs(inputs), probe, output_attentions=True)
    labels = _label_calls(probed, probe.calls)
    wanted = None if layers is None else set(layers)
    keep = frozenset(
        i for i, lab in enumerate(labels) if lab and (wanted is None or lab[1] in wanted)
    )
    causal = frozenset(i for i, call in enumerate(probe.calls) if call.causal)
    recorder = Recorder(keep, original, fast=_fast_function(model), causal_calls=causal)
    # Layers outside AttentionInterface only hand their weights back in the outputs.
    extra = {"output_attentions": True} if _unrecorded(probed, probe.calls) else {}
    outputs = _run(model, inputs, recorder, **extra)
    others = _unrecorded(outputs, recorder.calls) if extra else []
    if len(recorder.calls) != len(labels):
        raise RuntimeError(
            f"{type(model).__name__} made {len(recorder.calls)} attention calls on the "
            f"input but {len(labels)} on a short probe, so attnscope cannot tell which "
            "call is which layer."
        )
    streams: dict[str, list[tuple[int, AttentionCall]]] = {}
    for call, label in zip(recorder.calls, labels, strict=True):
        if label is not None and call.recorded:
            streams.setdefault(label[0], []).append((label[1], call))
    if not streams:
        raise CannotRecordError(
            "its attention layers do not go through transformers' AttentionInterface"
        )
    for (stream, layer), weights in others:
        if layers is None or layer in layers:
            streams.setdefault(stream, []).append((layer, returned_call(weights)))
    # Weights the probe saw that the recorded run had none for (T5Gemma 2 slices its cross
    # attention out of one softmax shared with self-attention): named, not dropped.
    lost = AttentionCall(
        returned="the model returned these weights in a short probe run but none in the "
        "recorded run, so they cannot be shown"
    )
    missing = {label for label, _ in _returned(probed) if label[0] not in streams}
    for stream, layer in sorted(missing):
        if layers is None or layer in layers:
            streams.setdefault(stream, []).append((layer, lost))
    return streams
