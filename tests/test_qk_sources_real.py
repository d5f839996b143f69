"""The README's real-model claims for issue 36, on trained SmolLM2-135M-Instruct and Gemma-3-270M.

- K-composition: SmolLM2's strongest induction head (ARENA's stripe on 20 random tokens
  repeated) looks at the token after the earlier copy mostly because of what the model's
  strongest previous-token head wrote at the key (qk_sources' key side).
- qk_sources sums to the score on trained weights of both (Gemma 3: q/k-norm, sliding window).
- The first token's value-weighted share (sink_value) is below its raw share (sink).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnscope
from real_models import gemma3_270m, smollm2

pytestmark = pytest.mark.real

SEQ = 20
TEXT = (
    "The quick brown fox jumps over the lazy dog. It was a sunny day, and the children were "
    "playing in the park near the river."
)


def _repeated(tokenizer: object) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    rand = torch.randint(1000, 10000, (SEQ,), generator=generator)
    bos = getattr(tokenizer, "bos_token_id", None) or 1
    return torch.cat([torch.tensor([bos]), rand, rand])


def test_smollm2_induction_head_key_side_is_a_previous_token_head() -> None:
    model, tokenizer = smollm2()
    ids = _repeated(tokenizer)
    trace = attnscope.capture(model, ids, tokenizer=tokenizer)
    n = len(ids)
    stripe, previous = [], []
    for layer in range(model.config.num_hidden_layers):
        weights = trace.stream.layer_attention(layer)
        second = np.arange(SEQ + 1, n)
        stripe.append(weights[:, second, second - SEQ + 1].mean(-1))
        rows = np.arange(1, n)
        previous.append(weights[:, rows, rows - 1].mean(-1))
    induction, prev = np.array(stripe), np.array(previous)
    layer, head = (int(i) for i in np.unravel_index(induction.argmax(), induction.shape))
    assert induction[layer, head] > 0.5
    query = n - 5
    table = attnscope.qk_sources(
        model, trace, layer=layer, head=head, query=query, key=query - SEQ + 1, tokenizer=tokenizer
    )
    assert table.contribution.sum() == pytest.approx(table.attrs["score"], rel=1e-4)
    by_key = table.groupby("key_source").contribution.sum()
    top = str(by_key.abs().idxmax())
    top_layer, top_head = (int(x) for x in top[1:].split("H"))
    assert top_layer < layer
    assert prev[top_layer, top_head] == prev.max()  # the model's strongest previous-token head


def test_gemma3_sums_on_trained_weights() -> None:
    model, tokenizer = gemma3_270m()
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    n = len(trace.tokens)
    for layer, head, query, key in ((5, 1, n - 1, n - 4), (11, 3, n - 2, 0)):
        table = attnscope.qk_sources(
            model, trace, layer=layer, head=head, query=query, key=key, tokenizer=tokenizer
        )
        assert table.contribution.sum() == pytest.approx(table.attrs["score"], rel=1e-4)


def test_smollm2_value_weighted_sink_below_raw_sink() -> None:
    model, tokenizer = smollm2()
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, value_norms=True)
    stats = attnscope.head_stats(trace)
    assert stats.sink_value.mean() < stats.sink.mean()
