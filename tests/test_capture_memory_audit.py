"""Capture allocates nothing that grows as N² (issue 33): an audit of every tensor it creates.

A ``TorchDispatchMode`` sees every aten operation run during
``attnscope.capture`` (the model's forward, the recorder, reference rows,
checks, streams, labels, metadata) and notes the largest tensor each one
returns. At 8192 tokens a single N x N tensor holds 67 M elements; what
capture may hold is O(N · d) per tensor, plus one block of one layer's
scores (:data:`~attnscope.sources.hf.recorder.EAGER_BLOCK_VALUES`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import attnscope
from attnscope.sources.hf.recorder import EAGER_BLOCK_VALUES

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))

from bench_inputs import encode, minilm, text_of

TOKENS = 8192
WIDEST = 64  # the MLP's intermediate size, the widest per-token tensor of the model
PER_TOKEN = 8  # tensors of up to PER_TOKEN x WIDEST values per token are O(N · d)


class LargestTensors(TorchDispatchMode):
    """Notes the largest tensor each aten operation returns while the mode is on."""

    def __init__(self) -> None:
        super().__init__()
        self.largest: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                name = str(func)
                self.largest[name] = max(self.largest.get(name, 0), leaf.numel())
        return out


def _tiny_llama(dtype: torch.dtype, window: int | None = None) -> Any:
    """A causal LM (its head would make N x 30522 logits), 2 layers, 2 heads, 1 kv head, sdpa.

    With ``window``, a Mistral of the same shape whose keys are a sliding window.
    """
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    kind, extra = (
        (LlamaConfig, {}) if window is None else (MistralConfig, {"sliding_window": window})
    )
    config = kind(
        vocab_size=minilm()[1].vocab_size,
        hidden_size=32,
        intermediate_size=WIDEST,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=TOKENS,
        **extra,
    )
    model = (LlamaForCausalLM if window is None else MistralForCausalLM)(config)
    return model.eval().to(dtype)


@pytest.mark.parametrize(
    ("dtype", "window"),
    [(torch.float32, None), (torch.bfloat16, None), (torch.bfloat16, 512)],
    ids=["causal-float32", "causal-bfloat16", "window-bfloat16"],
)
def test_capture_creates_no_tensor_that_grows_as_n_squared(
    dtype: torch.dtype, window: int | None
) -> None:
    model = _tiny_llama(dtype, window)
    tokenizer = minilm()[1]
    assert encode(tokenizer, TOKENS)["input_ids"].shape[1] == TOKENS
    audit = LargestTensors()
    with audit:
        trace = attnscope.capture(model, text_of(TOKENS), tokenizer=tokenizer)
    stream = trace.streams["self"]
    assert stream.queries is not None
    assert stream.queries.shape == (2, 2, TOKENS, 16)
    assert stream.mask is None  # the mask is a rule or key spans, not a stored N x N array
    if window is not None:
        spans = np.asarray(stream.key_spans)[0]
        assert spans[-1].tolist() == [TOKENS - window, TOKENS]
    limit = max(EAGER_BLOCK_VALUES, PER_TOKEN * WIDEST * TOKENS)
    assert limit * 16 <= TOKENS * TOKENS  # an N x N tensor would be obvious
    over = {op: n for op, n in audit.largest.items() if n > limit}
    assert over == {}, f"tensors above {limit} elements (N = {TOKENS}): {over}"
    assert audit.largest  # the audit saw capture's operations
    # The recomputed rows are still the model's own (the check holds them to eager's).
    assert trace.check() <= (1e-4 if dtype == torch.float32 else 2e-2)
    assert model.config._attn_implementation == "sdpa"
