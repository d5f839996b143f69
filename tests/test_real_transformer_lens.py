"""head_detector and induction_sweep equal TransformerLens on trained SmolLM2-135M (issue 34).

TransformerLens 4.x has no ``HookedTransformer`` (its ``from_pretrained`` would also fetch
from the hub); ``build_bridge_from_module`` wraps the already-loaded model offline, with
the model's own tokenizer, and TransformerLens then runs its own code: ``detect_head``
(tokenizing with ``to_tokens``, which prepends BOS) and ``run_with_cache`` for the
ARENA induction protocol's patterns and losses. The tiny-model counterparts are in
tests/test_head_detectors.py.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from real_models import smollm2

pytestmark = pytest.mark.real

TEXT = (
    "When Mary and John went to the store, John gave a drink to Mary. "
    "When Mary and John went to the store, John gave a drink to"
)
OTHER = "The cat sat on the mat. The cat sat on the mat again, and the dog sat on the rug."
KINDS = ["previous_token", "duplicate_token", "induction"]
OPTIONS = [
    {"exclude_bos": False, "exclude_current_token": False},
    {"exclude_bos": True, "exclude_current_token": True},
]
SEQ_LEN = 50
# Scores of the same float32 patterns: TransformerLens sums in float32, attnscope in
# float64 (measured apart by 2.7e-7 at most here).
ATOL = 1e-6
# Patterns of two forwards of the same weights (the bridge's and attnscope's recorded
# one) differ by up to 3.4e-6 (float32 summation order); excluding BOS divides by the
# attention left off the first token, small in a sink head, which amplifies that: 1.5e-6
# measured on these inputs.
ATOL_EXCLUDED = 5e-6


@pytest.fixture(scope="module")
def bridge() -> Any:
    from transformer_lens.model_bridge.sources import build_bridge_from_module

    model, tokenizer = smollm2()
    # The bridge rebuilds the model's modules in place: give it a copy.
    return build_bridge_from_module(
        copy.deepcopy(model), "LlamaForCausalLM", hf_config=model.config, tokenizer=tokenizer
    )


def test_head_detector_equals_detect_head_on_smollm2(bridge: Any) -> None:
    from transformer_lens.head_detector import detect_head

    model, tokenizer = smollm2()
    ids = bridge.to_tokens(TEXT)  # BOS + the text, as detect_head feeds it
    assert ids[0, 0].item() == tokenizer.bos_token_id
    shape = (bridge.cfg.n_layers, bridge.cfg.n_heads)
    assert shape == (30, 9)
    with torch.no_grad():
        _, cache = bridge.run_with_cache(ids, remove_batch_dim=True)
    labels = [str(i) for i in ids[0].tolist()]
    patterns = np.stack([cache["pattern", layer].numpy() for layer in range(shape[0])])
    theirs = attnscope.AttentionTrace(labels, patterns)  # TransformerLens's own patterns
    ours = attnscope.capture(model, ids, tokenizer=tokenizer)
    for kind in KINDS:
        for options in OPTIONS:
            # detect_head on the bridge's own cache of this prompt (one forward for all)
            expected = detect_head(bridge, TEXT, f"{kind}_head", cache=cache, **options).numpy()
            same = attnscope.head_detector(theirs, kind, **options)["score"].to_numpy()
            np.testing.assert_allclose(same.reshape(shape), expected, rtol=0, atol=ATOL)
            got = attnscope.head_detector(ours, kind, **options)["score"].to_numpy()
            atol = ATOL_EXCLUDED if options["exclude_bos"] else ATOL
            np.testing.assert_allclose(got.reshape(shape), expected, rtol=0, atol=atol)

    # Two prompts, from the model: detect_head's mean over them (it runs each itself).
    with torch.no_grad():
        both = detect_head(bridge, [TEXT, OTHER], "induction_head").numpy()
    inputs = [bridge.to_tokens(TEXT)[0], bridge.to_tokens(OTHER)[0]]
    mean = attnscope.head_detector(model, "induction", inputs, tokenizer=tokenizer)
    np.testing.assert_allclose(mean["score"].to_numpy().reshape(shape), both, atol=ATOL)
    # A trained model has a clear previous-token head on prose.
    assert attnscope.head_detector(ours, "previous_token")["score"].max() >= 0.7


def test_induction_sweep_equals_transformer_lens_on_smollm2(bridge: Any) -> None:
    model, tokenizer = smollm2()
    sweep = attnscope.induction_sweep(model, tokenizer, seq_len=SEQ_LEN, batch=2, seed=0)
    tokens = torch.tensor(sweep.attrs["tokens"])
    # ARENA 1.2's code, run by TransformerLens on the same tokens.
    with torch.no_grad():
        logits, cache = bridge.run_with_cache(tokens)
    layers = bridge.cfg.n_layers
    expected = np.stack(
        [
            cache["pattern", layer]
            .diagonal(offset=1 - SEQ_LEN, dim1=-2, dim2=-1)
            .mean(dim=(0, -1))
            .numpy()
            for layer in range(layers)
        ]
    )
    got = sweep["score"].to_numpy().reshape(expected.shape)
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
    log_probs = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = log_probs.gather(-1, tokens[:, 1:, None])[..., 0]
    assert sweep.attrs["loss_first_copy"] == pytest.approx(
        float(-picked[:, :SEQ_LEN].mean()), rel=1e-5
    )
    assert sweep.attrs["loss_second_copy"] == pytest.approx(
        float(-picked[:, SEQ_LEN:].mean()), rel=1e-5
    )
    assert expected.max() >= 0.8  # the head the README shows (layer 18, head 6)
