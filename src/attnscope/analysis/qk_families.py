"""Where each family keeps the parts of its residual stream, for :func:`attnscope.qk_sources`.

Two shapes of layer are known:

- **pre-norm** (GPT-2; Llama, Mistral, Qwen2/3; Gemma 1/2/3): the residual is
  the embedding plus every earlier head's and MLP's output; each layer
  normalises a copy before its attention. Gemma 2/3 normalise a sublayer's
  output before adding it (a frozen RMSNorm per position), Gemma 3 and Qwen3
  normalise q and k per head, and the Llama-like families rotate q and k.
- **post-norm** (BERT, RoBERTa, XLM-R): each layer normalises the residual
  itself after adding its attention and after adding its MLP, so every
  earlier part passes through every later LayerNorm, frozen at its position.

A family names the modules to tap (:class:`Tap`) and then walks the recorded
rows (:meth:`Split.residual`, :meth:`Split.project`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from attnscope.analysis.qk_linear import (
    CannotSplitError,
    Parts,
    add_parts,
    apply_frozen,
    as64,
    check_close,
    freeze_norm,
    rotate,
    through_norm,
    total,
)

if TYPE_CHECKING:
    import torch

TapKind = Literal["in", "out", "rope"]
LLAMA_LIKE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text")
BERT_LIKE = ("bert", "roberta", "xlm-roberta", "camembert")
SUPPORTED = ("gpt2", *LLAMA_LIKE, *BERT_LIKE)
_WHY_NOT = {
    "t5": "its relative position bias",
    "mt5": "its relative position bias",
    "bloom": "its ALiBi bias",
    "gpt_neox": "its partial rotary embedding and parallel attention/MLP",
    "phi": "its partial rotary embedding and parallel attention/MLP",
    "gptj": "its interleaved rotary embedding and parallel attention/MLP",
    "deberta-v2": "its disentangled (content-to-position) attention",
    "distilbert": "its layers (TransformerBlock: q_lin / sa_layer_norm)",
    "albert": "its shared layers and factorised embedding",
    "electra": "its embedding projection (embedding size != hidden size)",
    "gpt_oss": "its attention sinks and mixture-of-experts MLP",
    "mixtral": "its mixture-of-experts MLP (not checked yet)",
}


@dataclass(frozen=True)
class Tap:
    """One tensor to record during the forward pass: ``kind`` of ``module``'s call as ``key``."""

    key: str
    module: Any
    kind: TapKind


def linear(module: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(W (out, in), b)`` of a Linear or GPT-2 Conv1D in float64, so that ``y = x Wᵀ + b``."""
    weight = as64(module.weight)
    if type(module).__name__ == "Conv1D":  # GPT-2 stores (in, out)
        weight = weight.T
    bias = getattr(module, "bias", None)
    return weight, None if bias is None else as64(bias)


def _heads(z: torch.Tensor, o_proj: Any, head_dim: int, layer: int) -> Parts:
    """Each head's share of an output projection of the ``(2, heads * head_dim)`` rows ``z``."""
    weight, bias = linear(o_proj)
    parts: Parts = {}
    for head in range(z.shape[-1] // head_dim):
        cols = slice(head * head_dim, (head + 1) * head_dim)
        parts[f"L{layer}H{head}"] = z[:, cols] @ weight[:, cols].T
    if bias is not None:
        parts[f"L{layer}.attn.bias"] = bias.expand(2, -1).clone()
    return parts


def _project(parts: Parts, weight: torch.Tensor, bias: torch.Tensor | None, row: int) -> Parts:
    out = {name: value[row] @ weight.T for name, value in parts.items()}
    if bias is not None:
        out["bias"] = out["bias"] + bias if "bias" in out else bias.clone()
    return out


def _frozen(split: Split, seen: dict[str, torch.Tensor], key: str, module: Any) -> Any:
    norm = freeze_norm(module, seen[f"{key}.in"], key)
    check_close(apply_frozen(norm, seen[f"{key}.in"]), seen[f"{key}.out"], split.rtol, key)
    return norm


def _norm_taps(key: str, module: Any) -> list[Tap]:
    return [Tap(f"{key}.in", module, "in"), Tap(f"{key}.out", module, "out")]


class Split:
    """How one family's score splits; built by :func:`split_for`, which checks the parts exist."""

    def __init__(self, model: Any, family: str, rtol: float) -> None:
        self.model = model
        self.family = family
        self.rtol = rtol
        base = model.base_model
        self.base = base
        if family == "gpt2":
            self.layers = list(base.h)
        elif family in BERT_LIKE:
            self.layers = list(base.encoder.layer)
        else:
            self.layers = list(base.layers)

    # -- the modules of one layer ---------------------------------------------------------
    def attention(self, layer: int) -> Any:
        """The module whose call computes layer ``layer``'s q and k (where the forward may stop)."""
        block = self.layers[layer]
        if self.family == "gpt2":
            return block.attn
        if self.family in BERT_LIKE:
            return block.attention.self
        return block.self_attn

    def head_dim(self, layer: int) -> int:
        """Size of one head's q and k in layer ``layer``."""
        attention = self.attention(layer)
        if self.family in BERT_LIKE:
            return int(attention.attention_head_size)
        return int(attention.head_dim)

    def _o_proj(self, layer: int) -> Any:
        block = self.layers[layer]
        if self.family == "gpt2":
            return block.attn.c_proj
        if self.family in BERT_LIKE:
            return block.attention.output.dense
        return block.self_attn.o_proj

    def _gemma_post_norms(self, layer: int) -> bool:
        return hasattr(self.layers[layer], "pre_feedforward_layernorm")

    def _mlp_added(self, layer: int) -> Any:
        """The module whose output the layer adds to the residual as its MLP's share."""
        block = self.layers[layer]
        if self.family in BERT_LIKE:
            return block.output.dense
        if self._gemma_post_norms(layer):
            return block.post_feedforward_layernorm
        return block.mlp

    def _input_norm(self, layer: int) -> Any:
        block = self.layers[layer]
        return block.ln_1 if self.family == "gpt2" else block.input_layernorm

    def qk_weights(
        self, layer: int, head: int, kv_head: int
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor | None]:
        """``W_Q`` rows of ``head`` and ``W_K`` rows of ``kv_head``, with their biases."""
        dim = self.head_dim(layer)
        attention = self.attention(layer)
        q_rows = slice(head * dim, (head + 1) * dim)
        k_rows = slice(kv_head * dim, (kv_head + 1) * dim)
        if self.family == "gpt2":
            weight, bias = linear(attention.c_attn)
            width = weight.shape[0] // 3
            k_rows = slice(width + k_rows.start, width + k_rows.stop)
            wq, bq, wk, bk = weight, bias, weight, bias
        elif self.family in BERT_LIKE:
            (wq, bq), (wk, bk) = linear(attention.query), linear(attention.key)
        else:
            (wq, bq), (wk, bk) = linear(attention.q_proj), linear(attention.k_proj)
        return (
            wq[q_rows],
            None if bq is None else bq[q_rows],
            wk[k_rows],
            None if bk is None else bk[k_rows],
        )

    # -- what to record ---------------------------------------------------------------------
    def taps(self, layer: int) -> list[Tap]:
        """Every tensor the split of layer ``layer``'s score needs from the forward pass."""
        taps = [Tap("resid", self.layers[layer], "in")]
        if self.family in BERT_LIKE:
            emb = self.base.embeddings
            taps += [Tap("embed", emb.word_embeddings, "out")]
            taps += [Tap("pos_embed", emb.position_embeddings, "out")]
            if getattr(emb, "token_type_embeddings", None) is not None:
                taps += [Tap("type_embed", emb.token_type_embeddings, "out")]
            taps += _norm_taps("embed.norm", emb.LayerNorm)
        elif self.family == "gpt2":
            taps += [Tap("embed", self.base.wte, "out"), Tap("pos_embed", self.base.wpe, "out")]
        else:
            taps += [Tap("embed", self.layers[0], "in")]
        for index in range(layer):
            block = self.layers[index]
            taps += [Tap(f"z{index}", self._o_proj(index), "in")]
            taps += [Tap(f"mlp{index}", self._mlp_added(index), "out")]
            if self.family in BERT_LIKE:
                taps += _norm_taps(f"L{index}.attn.norm", block.attention.output.LayerNorm)
                taps += _norm_taps(f"L{index}.mlp.norm", block.output.LayerNorm)
            elif self._gemma_post_norms(index):
                taps += _norm_taps(f"L{index}.attn.norm", block.post_attention_layernorm)
        if self.family not in BERT_LIKE:
            taps += _norm_taps("input_norm", self._input_norm(layer))
        attention = self.attention(layer)
        if self.family in LLAMA_LIKE:
            taps += [Tap("rope", attention, "rope")]
        return taps

    # -- the walk ---------------------------------------------------------------------------
    def residual(self, seen: dict[str, torch.Tensor], layer: int) -> Parts:
        """Layer ``layer``'s input at the two positions as named parts (checked)."""
        names = ("embed", "pos_embed", "type_embed")
        parts: Parts = {name: seen[name] for name in names if name in seen}
        if self.family in BERT_LIKE:
            parts = through_norm(
                parts,
                _frozen(self, seen, "embed.norm", self.base.embeddings.LayerNorm),
                "embed.norm.bias",
            )
        for index in range(layer):
            heads = _heads(seen[f"z{index}"], self._o_proj(index), self.head_dim(index), index)
            block = self.layers[index]
            if self.family in BERT_LIKE:
                add_parts(parts, heads)
                norm = _frozen(self, seen, f"L{index}.attn.norm", block.attention.output.LayerNorm)
                parts = through_norm(parts, norm, f"L{index}.attn.norm.bias")
                parts[f"L{index}.mlp"] = seen[f"mlp{index}"]
                norm = _frozen(self, seen, f"L{index}.mlp.norm", block.output.LayerNorm)
                parts = through_norm(parts, norm, f"L{index}.mlp.norm.bias")
                continue
            if self._gemma_post_norms(index):
                norm = _frozen(self, seen, f"L{index}.attn.norm", block.post_attention_layernorm)
                heads = through_norm(heads, norm, f"L{index}.attn.norm.bias")
            add_parts(parts, heads)
            parts[f"L{index}.mlp"] = seen[f"mlp{index}"]
        check_close(total(parts), seen["resid"], self.rtol, f"the input of layer {layer}")
        return parts

    def project(
        self, seen: dict[str, torch.Tensor], parts: Parts, layer: int, head: int, kv_head: int
    ) -> tuple[Parts, Parts]:
        """Q of ``head`` at the query and k of ``kv_head`` at the key, each split by source."""
        if self.family not in BERT_LIKE:
            norm = _frozen(self, seen, "input_norm", self._input_norm(layer))
            parts = through_norm(parts, norm, "bias")
        wq, bq, wk, bk = self.qk_weights(layer, head, kv_head)
        q_parts, k_parts = _project(parts, wq, bq, 0), _project(parts, wk, bk, 1)
        attention = self.attention(layer)
        for side, found, row in (("q", q_parts, 0), ("k", k_parts, 1)):
            norm_module = getattr(attention, f"{side}_norm", None)
            if norm_module is not None:  # per-head q/k norm, frozen at the vector it was given
                before = total(found).expand(2, -1)
                frozen = freeze_norm(norm_module, before, f"layer {layer}'s {side}_norm")
                for name in found:
                    found[name] = found[name] * frozen.scale[0]
            if "rope.cos" in seen:
                cos, sin = seen["rope.cos"][row], seen["rope.sin"][row]
                if cos.shape[-1] != next(iter(found.values())).shape[-1]:
                    raise CannotSplitError(
                        f"layer {layer}'s rotary embedding turns {cos.shape[-1]} of "
                        f"{next(iter(found.values())).shape[-1]} dimensions (partial rotary)."
                    )
                for name in found:
                    found[name] = rotate(found[name], cos, sin)
        return q_parts, k_parts


def split_for(model: Any, rtol: float) -> Split:
    """The :class:`Split` of ``model``'s family, or a :class:`CannotSplitError` naming the part.

    Examples
    --------
    >>> from transformers import GPT2Config, GPT2Model
    >>> split = split_for(GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8)), 1e-4)
    >>> split.family, len(split.layers)
    ('gpt2', 1)
    """
    config = getattr(model, "config", None)
    family = str(getattr(config, "model_type", type(model).__name__))
    if family not in SUPPORTED:
        part = _WHY_NOT.get(family, f"its layers ({type(model).__name__})")
        raise CannotSplitError(
            f"qk_sources cannot split the scores of {family} models: {part} is not something "
            "the split follows exactly. It splits GPT-2, Llama, Mistral, Qwen2/Qwen3, Gemma "
            "1/2/3 and BERT-family encoders (BERT, RoBERTa, XLM-R)."
        )
    try:
        split = Split(model, family, rtol)
        for index in range(len(split.layers)):
            split.attention(index), split._o_proj(index), split._mlp_added(index)
            if family not in BERT_LIKE:
                split._input_norm(index)
    except AttributeError as err:
        raise CannotSplitError(
            f"this {family} model lacks a part the split reads ({err}); qk_sources reads the "
            "module layout of transformers' own model classes."
        ) from None
    if (
        family in BERT_LIKE
        and split.base.embeddings.word_embeddings.embedding_dim != split.base.config.hidden_size
    ):
        raise CannotSplitError(
            f"{family}: its embedding projection (embedding size != hidden size)."
        )
    return split
