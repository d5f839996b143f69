"""Every model type the installed transformers offers, built tiny and random.

The list comes from transformers' own Auto mappings at run time (base
``AutoModel``, causal LM, seq2seq LM). Each type's default config is shrunk
generically (layers, widths, heads, experts, vocabulary, positions, image
size), with a few hand-tuned overrides where the generic rules cannot know
what the model needs. Types whose input is not text or an image (audio,
video, time series ...) are listed with that reason instead of being built.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

LAYERS = 2
HIDDEN = 64
HEADS = 4
KV_HEADS = 2
FFN = 128
HEAD_DIM = 16
VOCAB = 512
POSITIONS = 128
IMAGE = 32
PATCH = 8

# Fields set to one value wherever a config has them (and they are not None).
_WIDTH = {
    "hidden_size": HIDDEN,
    "d_model": HIDDEN,
    "n_embd": HIDDEN,
    "embed_dim": HIDDEN,
    "dim": HIDDEN,
    "word_embed_proj_dim": HIDDEN,
    "embedding_size": HIDDEN,
    "hidden_size_per_layer_input": 16,
    "intermediate_size": FFN,
    "ffn_dim": FFN,
    "encoder_ffn_dim": FFN,
    "decoder_ffn_dim": FFN,
    "d_ff": FFN,
    "n_inner": FFN,
    "hidden_dim": FFN,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "head_dim": HEAD_DIM,
    "d_kv": HEAD_DIM,
    "kv_channels": HEAD_DIM,
    "qk_rope_head_dim": 8,
    "rotary_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": HEAD_DIM,
    "kv_lora_rank": 16,
    "q_lora_rank": 16,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "moe_num_experts": 4,
    "num_experts_per_tok": 2,
    "top_k_experts": 2,
    "n_group": 1,
    "topk_group": 1,
    "n_shared_experts": 1,
    "vocab_size": VOCAB,
    "vocab_size_per_layer_input": VOCAB,
    "max_position_embeddings": POSITIONS,
    "n_positions": POSITIONS,
    "n_ctx": POSITIONS,
    "image_size": IMAGE,
    "patch_size": PATCH,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "decoder_start_token_id": 0,
    "sep_token_id": 2,
    "cls_token_id": 1,
}
_LAYERS = (
    "num_hidden_layers",
    "num_layers",
    "n_layer",
    "n_layers",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
    "num_encoder_layers",
)
_HEADS = (
    "num_attention_heads",
    "n_head",
    "n_heads",
    "num_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
)
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "multi_query_group_num")

# Hand-tuned overrides, applied after the generic shrinking (type -> fields; a dict for a
# sub-config is merged into it). EmbeddingGemma 2's global layers default to head_dim 512,
# where q and k normalised to unit RMS with scaling 1.0 give logits whose float32 rounding
# alone moves eager's weights by 1.4e-5 from exact arithmetic: 256 keeps the layers
# different in width and the model's own rounding under the tier's 1e-5.
_GLOBAL_256 = {"per_layer_config": {1: {"head_dim": 256}}}
OVERRIDES: dict[str, dict[str, Any]] = {
    "embedding_gemma2_text": _GLOBAL_256,
    "embedding_gemma2": {"text_config": _GLOBAL_256},
}


@dataclass
class Built:
    """A tiny model, what it reads, and the class it came from."""

    model_type: str
    model: Any
    kind: str  # "text" or "image"


class NotBuiltError(Exception):
    """A type the tier does not build, with the reason it lists."""


def model_types() -> list[str]:
    """Every type with a base, causal-LM or seq2seq-LM Auto mapping, sorted."""
    from transformers.models.auto import modeling_auto as auto

    names = (
        auto.MODEL_MAPPING_NAMES,
        auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    )
    return sorted(set().union(*names))


def model_class(model_type: str) -> Any:
    """The class the tier builds: the base model, else the causal LM, else the seq2seq LM."""
    import transformers
    from transformers.models.auto import modeling_auto as auto

    for mapping in (
        auto.MODEL_MAPPING_NAMES,
        auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    ):
        name = mapping.get(model_type)
        if isinstance(name, list | tuple):
            name = name[0]
        if name:
            try:
                return getattr(transformers, name)
            except (AttributeError, ImportError) as err:
                raise NotBuiltError(f"{name} does not import here ({type(err).__name__})") from None
    raise NotBuiltError("no Auto mapping")


def _per_layer_picks(values: dict[str, Any], count: int) -> list[int]:
    """Layer indices that keep every distinct kind of layer (sliding and full ...)."""
    picks: list[int] = []
    for value in values.values():
        if isinstance(value, list) and len(value) == count:
            seen: list[Any] = []
            for i, item in enumerate(value):
                if repr(item) not in seen:
                    seen.append(repr(item))
                    picks.append(i)
    picks = sorted(set(picks))[:4]
    if len(picks) < LAYERS:
        picks = sorted(set(picks) | set(range(LAYERS)))[:LAYERS]
    return picks


def _fit(default: Any, value: int) -> Any:
    """``value`` in the form the default takes (an int, or one per side for [h, w])."""
    pair = isinstance(default, list | tuple) and len(default) == 2
    if pair and all(isinstance(v, int) for v in default):
        return [value, value]
    return value if isinstance(default, int | float) and not isinstance(default, bool) else None


def _rope(values: dict[str, Any], head_dim: int) -> dict[str, Any] | None:
    """Rope parameters whose multimodal sections add up to the tiny head_dim."""
    rope = values.get("rope_parameters")
    if not isinstance(rope, dict) or not isinstance(rope.get("mrope_section"), list):
        return None
    sections = rope["mrope_section"]
    half = head_dim // 2
    scaled = [max(1, round(s * half / sum(sections))) for s in sections]
    scaled[0] += half - sum(scaled)
    return {**rope, "mrope_section": scaled}


def shrink(config: Any) -> dict[str, Any]:
    """Keyword arguments that rebuild ``config`` tiny (sub-configs shrunk as dicts)."""
    values = config.to_dict()
    out: dict[str, Any] = {}
    count = next((values[k] for k in _LAYERS if isinstance(values.get(k), int)), None)
    picks = _per_layer_picks(values, count) if count else list(range(LAYERS))
    for key in _LAYERS:
        if isinstance(values.get(key), int):
            out[key] = len(picks)
    if count:
        for key, value in values.items():
            if isinstance(value, list) and len(value) == count and key not in out:
                out[key] = [value[i] for i in picks]
    heads = next((values[k] for k in _HEADS if isinstance(values.get(k), int)), None)
    for key in _HEADS:
        if isinstance(values.get(key), int):
            out[key] = HEADS
    for key in _KV_HEADS:
        if isinstance(values.get(key), int):
            out[key] = HEADS if values[key] == heads else KV_HEADS
    for key, value in _WIDTH.items():
        if key in values and values[key] is not None:
            fitted = _fit(values[key], value)
            if fitted is not None:
                out[key] = fitted
    if isinstance(values.get("qk_rope_head_dim"), int) and "head_dim" in out:
        out["head_dim"] = out["qk_rope_head_dim"]  # multi-latent attention ropes head_dim
    rope = _rope(values, out.get("head_dim", HIDDEN // HEADS))
    if rope is not None:
        out["rope_parameters"] = rope
    start = values.get("decoder_start_token_id")
    if values.get("is_encoder_decoder") and not (isinstance(start, int) and start < VOCAB):
        out["decoder_start_token_id"] = 1  # bos: some decoders hide the pad token (T5Gemma)
    elif "decoder_start_token_id" in out and isinstance(start, int) and start < VOCAB:
        out["decoder_start_token_id"] = start
    for key in getattr(type(config), "sub_configs", {}) or {}:
        sub = getattr(config, key, None)
        if sub is not None and hasattr(sub, "to_dict"):
            kept = {k: v for k, v in sub.to_dict().items() if not _per_layer_table(v)}
            out[key] = {**kept, **shrink(sub)}
    return out


def _per_layer_table(value: Any) -> bool:
    """A dict keyed by layer index (Gemma 4's per_layer_config): rebuilt from the layers."""
    return isinstance(value, dict) and bool(value) and all(str(k).isdigit() for k in value)


def build(model_type: str, **changes: Any) -> Built:
    """A tiny random model of ``model_type`` in eval mode (default attention), or NotBuiltError.

    ``changes`` set config fields after the shrinking.
    """
    from transformers import CONFIG_MAPPING

    cls = model_class(model_type)
    main = getattr(cls, "main_input_name", "input_ids")
    if main not in ("input_ids", "pixel_values"):
        raise NotBuiltError(f"reads {main}, not text or an image")
    kind = "text" if main == "input_ids" else "image"
    config_cls = CONFIG_MAPPING[model_type]
    try:
        default = config_cls()
        fields = shrink(default)
        for key, value in {**OVERRIDES.get(model_type, {}), **changes}.items():
            nested = isinstance(value, dict) and isinstance(fields.get(key), dict)
            fields[key] = {**fields[key], **value} if nested else value
        config = config_cls(**fields)
    except Exception as err:
        raise NotBuiltError(f"tiny config fails: {type(err).__name__}: {str(err)[:200]}") from None
    torch.manual_seed(0)
    try:
        model = cls(config).eval()
    except Exception as err:
        raise NotBuiltError(f"tiny model fails: {type(err).__name__}: {str(err)[:200]}") from None
    return Built(model_type, model, kind)


def forward_accepts(model: Any) -> set[str]:
    """Names the model's forward takes."""
    return set(inspect.signature(model.forward).parameters)
