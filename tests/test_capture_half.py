"""Half-precision capture: the fast path is kept, q/k stay float16, nothing holds N² scores.

bfloat16 and float16 tiny models of several families are captured as they are
(default sdpa attention) and held to the same model's eager attention in that
dtype; eager attention, where capture needs it, is watched to see no more
than one block of query rows at a time.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.sources.hf import generic, recorder
from attnscope.trace.rows import layer_keys
from capture_models import TEXT, bpe_tokenizer, forward_inputs, tiny_model, unigram_tokenizer

FAMILIES = ["llama", "gemma2", "mistral", "gpt2", "t5"]
# Calls the fast function cannot take (softcap) or models without sdpa run eager in blocks.
FAST = {"llama", "mistral", "gpt2"}
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}
# Largest |capture - the model's own eager weights in that dtype|: its rounding of the
# scores and the softmax, a few of its epsilons (bfloat16 2**-8, float16 2**-11).
WITHIN = {"bfloat16": 2e-2, "float16": 4e-3}
FIELDS = {stream: field for field, stream in generic.FIELDS.items()}  # the outputs' fields


def _tokenizer(family: str) -> Any:
    return unigram_tokenizer() if family in ("llama", "gemma2", "t5") else bpe_tokenizer()


def _half(family: str, dtype: str) -> tuple[Any, Any]:
    tokenizer = _tokenizer(family)
    return tiny_model(family, len(tokenizer)).to(DTYPES[dtype]), tokenizer


def _capture(model: Any, tokenizer: Any, family: str, text: str = TEXT) -> Any:
    extra = {"target": "The cat sat."} if family == "t5" else {}
    return attnscope.capture(model, text, tokenizer=tokenizer, **extra)


def _eager_weights(
    model: Any, trace: Any, family: str, tokenizer: Any
) -> dict[str, np.ndarray[Any, Any]]:
    """The model's own eager attention (in its dtype) on the trace's input, per stream."""
    reference = copy.deepcopy(model)
    reference.set_attn_implementation("eager")
    inputs = forward_inputs(model, tokenizer, family)
    with torch.inference_mode():
        out = reference(**inputs, output_attentions=True, use_cache=False)
    return {
        name: np.stack([getattr(out, FIELDS[name])[layer][0].float().numpy() for layer in s.layers])
        for name, s in trace.streams.items()
    }


class EagerCalls:
    """Every call of any model's eager attention function: the scores each one computed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scores: list[int] = []
        self.calls = 0
        found = recorder.eager_forward_for

        def watched(module: torch.nn.Module) -> Any:
            eager = found(module)

            def run(module: Any, query: Any, key: Any, *rest: Any, **kwargs: Any) -> Any:
                self.calls += 1
                self.scores.append(query.shape[1] * query.shape[2] * key.shape[2])
                mask = rest[1] if len(rest) > 1 else None
                if isinstance(mask, torch.Tensor):  # the float mask eager adds: a block too
                    assert mask.shape[-2] <= query.shape[2]
                return eager(module, query, key, *rest, **kwargs)

            return run

        monkeypatch.setattr(recorder, "eager_forward_for", watched)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("family", FAMILIES)
def test_half_capture_equals_eager_and_keeps_the_fast_path(
    family: str, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, tokenizer = _half(family, dtype)
    full_rows: list[int] = []
    blocks = recorder.eager_in_blocks

    def counted(
        eager: Any, call: Any, args: Any, kwargs: Any, rows: Any = None, **rule: Any
    ) -> Any:
        if rows is None:  # a call's whole output from eager, not reference rows
            full_rows.append(call[1].shape[-2])
        return blocks(eager, call, args, kwargs, rows, **rule)

    monkeypatch.setattr(recorder, "eager_in_blocks", counted)
    trace = _capture(model, tokenizer, family)
    expected = _eager_weights(model, trace, family, tokenizer)
    for name, stream in trace.streams.items():
        assert stream.queries is not None
        assert stream.keys is not None
        assert stream.queries.dtype == np.float16
        assert stream.keys.dtype == np.float16
        assert float(np.abs(stream.attention - expected[name]).max()) <= WITHIN[dtype]
    assert trace.check() <= WITHIN[dtype]
    assert trace.metadata["qk_dtype"] == ["float16"]
    assert any(f"ran in {dtype}" in n and "stored as float16" in n for n in trace.notes)
    assert not any("differs from its eager" in n for n in trace.notes)
    if family in FAST:
        assert full_rows == []  # every recorded call's output came from sdpa


def test_a_fast_path_that_is_not_eagers_is_named_and_run_in_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fast function off by more than bfloat16 rounding: eager instead, in blocks, said."""
    model, tokenizer = _half("llama", "bfloat16")
    sdpa = generic._fast_function(model)
    assert sdpa is not None

    def off(*args: Any, **kwargs: Any) -> Any:
        out, weights = sdpa(*args, **kwargs)
        return out + 0.5, weights  # a dropped term: off by far more than rounding

    monkeypatch.setattr(generic, "_fast_function", lambda model: off)
    monkeypatch.setattr(recorder, "EAGER_BLOCK_VALUES", 4 * 16 * 4)  # 16 keys: 4 rows a block
    watch = EagerCalls(monkeypatch)
    trace = _capture(model, tokenizer, "llama")
    assert trace.stream.q_len > 8  # several blocks
    assert any("differs from its eager" in n and "block of query rows" in n for n in trace.notes)
    k_len = trace.stream.k_len
    assert max(watch.scores) <= max(recorder.EAGER_BLOCK_VALUES, 4 * k_len)
    assert (
        float(
            np.abs(trace.attention - _eager_weights(model, trace, "llama", tokenizer)["self"]).max()
        )
        <= 2e-2
    )


def test_no_capture_step_holds_more_than_one_block_of_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gemma 2 (softcap: every call eager) at 60 tokens, blocks of 2 rows: N² never held."""
    model, tokenizer = _half("gemma2", "bfloat16")
    text = " ".join([TEXT] * 6)
    heads = model.config.num_attention_heads
    monkeypatch.setattr(recorder, "EAGER_BLOCK_VALUES", heads * 2 * 64)  # 2 rows of 64 keys
    watch = EagerCalls(monkeypatch)
    trace = attnscope.capture(model, text, tokenizer=tokenizer, max_tokens=60)
    n = trace.stream.q_len
    assert n >= 40
    assert watch.calls > 2 * n // 2  # each layer's rows went in many blocks
    assert max(watch.scores) <= heads * 2 * n < heads * n * n // 10
    assert trace.check() <= 2e-2  # the recomputed rows are still the model's own


def test_half_trace_saves_and_loads_as_float16(tmp_path: Any) -> None:
    model, tokenizer = _half("llama", "bfloat16")
    trace = _capture(model, tokenizer, "llama")
    path = trace.save(tmp_path / "half.npz")
    loaded = attnscope.AttentionTrace.load(path)
    assert loaded.stream.queries is not None
    assert loaded.stream.keys is not None
    assert loaded.stream.queries.dtype == np.float16
    assert np.array_equal(loaded.stream.keys, trace.stream.keys)
    assert loaded.check() == pytest.approx(trace.check())
    assert np.array_equal(loaded.attention, trace.attention)


def test_views_and_statistics_of_a_half_trace_compute_in_float32() -> None:
    """Top keys, thumbnails, statistics and the neuron view's q/k of float16 q/k equal
    those of the same values as float32."""
    from attnscope.analysis.head_stats import head_stats
    from attnscope.encode.arrays import qk_arrays
    from attnscope.encode.from_logits import any_thumbnails, layer_top_keys

    model, tokenizer = _half("llama", "float16")
    half = _capture(model, tokenizer, "llama")
    stream = half.stream
    assert stream.queries is not None
    assert stream.keys is not None
    wide = copy.copy(stream)
    wide.queries = stream.queries.astype(np.float32)
    wide.keys = stream.keys.astype(np.float32)
    assert layer_keys(stream, 1).dtype == torch.float32
    for a, b in zip(layer_top_keys(stream, 1, 3), layer_top_keys(wide, 1, 3), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(any_thumbnails(stream, 4, 4), any_thumbnails(wide, 4, 4))
    assert np.allclose(stream.attention, wide.attention, atol=1e-6)
    assert all(a.dtype == np.float32 for name, a in qk_arrays(stream, 0, 0) if name in "qk")
    stats = head_stats(half)
    assert len(stats) == stream.num_layers * stream.num_heads
    assert np.isfinite(stats.select_dtypes("number").to_numpy(dtype=float)).all()


def test_trace_device_is_the_models_and_can_be_changed() -> None:
    model, tokenizer = _half("gpt2", "bfloat16")
    trace = _capture(model, tokenizer, "gpt2")
    assert trace.device == "cpu"  # the model's device: on-demand blocks compute there
    before = trace.stream.attention_rows(0, 0, slice(0, 3))
    trace.device = "cpu"
    assert all(s.device == "cpu" for s in trace.streams.values())
    assert torch.equal(trace.stream.attention_rows(0, 0, slice(0, 3)), before)
    with pytest.raises(ValueError, match=r"device 'nowhere' cannot hold tensors here.*'cpu'"):
        trace.device = "nowhere"
    assert trace.device == "cpu"
