"""Tiny random models of every family capture supports, and small local tokenizers.

Every model has 2 layers and 4 heads (2 key heads where the family has
grouped-query attention). Tokenizers are trained in memory on a few
sentences, so the byte-level BPE (``Ġ``) and SentencePiece (``▁``) label
paths run for real with no download.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A café in Zürich serves crème brûlée.",
    "Attention is all you need, they said.",
    "The cat sat on the mat and looked at the dog.",
]
TEXT = "The quick brown fox jumps over the lazy dog."
TARGET = "The cat sat."
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]

SMALL = {
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "hidden_size": 32,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "decoder_start_token_id": 0,
}
GQA = {"num_key_value_heads": 2}

# family -> (config overrides, tokenizer kind)
FAMILIES: dict[str, tuple[dict[str, Any], str]] = {
    "bert": ({}, "wordpiece"),
    "roberta": ({}, "bpe"),
    "distilbert": ({"n_layers": 2, "n_heads": 4, "dim": 32, "hidden_dim": 64}, "wordpiece"),
    "albert": ({"embedding_size": 16}, "unigram"),
    "electra": ({"embedding_size": 16}, "wordpiece"),
    "gpt2": ({"n_layer": 2, "n_head": 4, "n_embd": 32, "n_positions": 64}, "bpe"),
    "gpt_neox": ({}, "bpe"),
    "llama": (GQA, "unigram"),
    "mistral": ({**GQA, "sliding_window": 4}, "bpe"),
    "qwen2": (GQA, "bpe"),
    "qwen3": ({**GQA, "head_dim": 8}, "bpe"),
    "gemma2": (
        {
            **GQA,
            "head_dim": 8,
            "query_pre_attn_scalar": 16,
            "attn_logit_softcapping": 5.0,
            "sliding_window": 4,
        },
        "unigram",
    ),
    "phi3": (GQA, "bpe"),
    "gpt_oss": (
        {
            **GQA,
            "head_dim": 8,
            "intermediate_size": 32,
            "num_local_experts": 2,
            "num_experts_per_tok": 1,
            "sliding_window": 4,
        },
        "bpe",
    ),
    "t5": ({"d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2, "num_heads": 4}, "unigram"),
    "bart": (
        {
            "d_model": 32,
            "encoder_layers": 2,
            "decoder_layers": 2,
            "encoder_attention_heads": 4,
            "decoder_attention_heads": 4,
            "encoder_ffn_dim": 64,
            "decoder_ffn_dim": 64,
        },
        "bpe",
    ),
    "vit": ({"image_size": 16, "patch_size": 4}, ""),
    "bloom": ({"n_layer": 2, "n_head": 4}, "bpe"),
    "gpt_neo": (
        {
            "num_layers": 2,
            "num_heads": 4,
            "attention_types": [[["global", "local"], 1]],
            "window_size": 4,
        },
        "bpe",
    ),
    "deberta-v2": ({}, "wordpiece"),
}
SEQ2SEQ = {"t5", "bart"}


def _train(model: Any, pre: Any, decoder: Any, trainer: Any, post: Any = None) -> Any:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(model)
    tok.pre_tokenizer = pre
    tok.decoder = decoder
    tok.train_from_iterator(CORPUS, trainer)
    if post is not None:
        tok.post_processor = post
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )


@lru_cache(maxsize=2)
def bpe_tokenizer(*, wrap: bool = False) -> Any:
    """Byte-level BPE (GPT-2 style: ``Ġ`` word starts, non-ASCII as byte symbols)."""
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    post = (
        processors.TemplateProcessing(
            single="<s> $A </s>",
            pair="<s> $A </s> </s> $B </s>",
            special_tokens=[("<s>", 1), ("</s>", 2)],
        )
        if wrap
        else None
    )
    return _train(
        models.BPE(unk_token=None),
        pre_tokenizers.ByteLevel(add_prefix_space=False),
        decoders.ByteLevel(),
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=SPECIALS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
        post,
    )


@lru_cache(maxsize=1)
def unigram_tokenizer() -> Any:
    """SentencePiece-style Unigram with ``▁`` word starts and ``</s>`` appended."""
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    return _train(
        models.Unigram(),
        pre_tokenizers.Metaspace(),
        decoders.Metaspace(),
        trainers.UnigramTrainer(vocab_size=120, special_tokens=SPECIALS, unk_token="<unk>"),
        processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 2)]
        ),
    )


def tiny_model(family: str, vocab_size: int) -> Any:
    """A 2-layer, 4-head random model of ``family`` in eval mode, default (sdpa) attention."""
    import transformers

    overrides, _ = FAMILIES[family]
    config = transformers.AutoConfig.for_model(
        family, **{**SMALL, "vocab_size": vocab_size, **overrides}
    )
    torch.manual_seed(0)
    auto = transformers.AutoModelForSeq2SeqLM if family in SEQ2SEQ else transformers.AutoModel
    return auto.from_config(config).eval()


def image() -> torch.Tensor:
    """A fixed random 16x16 RGB image as pixel values."""
    return torch.randn(3, 16, 16, generator=torch.Generator().manual_seed(0))


def tokenizer_for(family: str, wordpiece: Any) -> Any:
    """The tokenizer a family's tiny model is tested with (None for images)."""
    kind = FAMILIES[family][1]
    if kind == "wordpiece":
        return wordpiece
    if kind == "bpe":
        return bpe_tokenizer(wrap=family in ("roberta", "bart"))
    return unigram_tokenizer() if kind else None


def forward_inputs(model: Any, tokenizer: Any, family: str) -> dict[str, torch.Tensor]:
    """The inputs capture gives the model for TEXT (and TARGET), built independently."""
    import inspect

    if tokenizer is None:
        return {"pixel_values": image()[None]}
    inputs = dict(tokenizer(TEXT, return_tensors="pt"))
    if family in SEQ2SEQ:
        target = tokenizer(TARGET, return_tensors="pt")["input_ids"]
        start = torch.tensor([[model.config.decoder_start_token_id]])
        inputs["decoder_input_ids"] = torch.cat([start, target], dim=1)
    accepted = inspect.signature(model.forward).parameters
    return {k: v for k, v in inputs.items() if k in accepted}


def llama_over(tokenizer: Any, positions: int) -> Any:
    """A tiny random grouped-query Llama (4 heads, 2 key heads) over ``tokenizer``'s vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=positions,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config).eval()
