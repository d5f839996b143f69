"""Models whose layers, tokens or weights do not fit one plain (layers, heads, q, k) array.

Each model is built tiny by :mod:`zoo_models` and judged against its own
eager attention by :func:`zoo_run.judge` (every stream within 1e-5, and
``check()`` within 1e-5 where q and k were kept).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import AttnscopeError
from capture_models import bpe_tokenizer
from zoo_models import build
from zoo_run import _inputs, _reference, fingerprint, judge


def captured(model_type: str, **changes: Any) -> tuple[Any, Any, str]:
    """(trace, the model's eager outputs, judged outcome) for a tiny ``model_type``."""
    built = build(model_type, **changes)
    text, options, inputs = _inputs(built, bpe_tokenizer(wrap=True))
    outputs = _reference(built.model, inputs)
    before = fingerprint(built.model)
    trace = attnscope.capture(built.model, text, **options)
    assert fingerprint(built.model) == before
    outcome, _, detail = judge(trace, outputs)
    assert outcome in ("exact", "attention-only"), detail
    return trace, outputs, outcome


def test_gemma4_global_layers_twice_as_wide_are_exact() -> None:
    # The default text config: sliding layers head_dim 256, global layers 512.
    trace, _, outcome = captured("gemma4_text", head_dim=256)
    assert outcome == "exact"
    assert trace.stream.has_qk
    assert trace.stream.head_dim == 512
    assert any("head_dim 512, the others 256" in n and "zero-padded" in n for n in trace.notes)


def test_layers_with_other_head_counts_become_their_own_stream() -> None:
    trace, outputs, outcome = captured("dots3_note_text")
    assert outcome == "exact"
    heads = {name: s.num_heads for name, s in trace.streams.items()}
    assert len(heads) == 2
    other = next(name for name in heads if name != "self")
    assert heads[other] != heads["self"]
    assert other == f"self-{heads[other]}heads"
    layers = sorted(layer for s in trace.streams.values() for layer in s.layers)
    assert layers == list(range(len(outputs.attentions)))
    assert any("separate streams" in n for n in trace.notes)


def test_pooled_layers_are_left_out_with_a_note() -> None:
    trace, outputs, _ = captured("funnel")
    shown = trace.stream.layers
    assert 0 < len(shown) < len(outputs.attentions)
    assert any("pools or compresses" in n for n in trace.notes)


@pytest.mark.parametrize(
    ("model_type", "first", "last"),
    [
        ("deit", ["[CLS]", "[DIST]", "patch 0,0"], "patch 3,3"),
        ("dinov2_with_registers", ["[CLS]", "[REG 0]", "[REG 1]"], "patch 3,3"),
        ("yolos", ["[CLS]", "patch 0,0"], "[DET 99]"),
        ("siglip_vision_model", ["patch 0,0", "patch 0,1"], "patch 3,3"),
        ("ijepa", ["patch 0,0"], "patch 3,3"),
    ],
)
def test_vision_tokens_beyond_cls_and_patches(model_type: str, first: list[str], last: str) -> None:
    trace, _, outcome = captured(model_type)
    assert outcome == "exact"
    assert trace.tokens[: len(first)] == first
    assert trace.tokens[-1] == last


def test_longformer_shows_the_whole_key_axis() -> None:
    trace, outputs, outcome = captured("longformer", attention_window=[4, 4])
    assert outcome == "attention-only"
    n = len(trace.tokens)
    assert trace.attention.shape[-2:] == (n, n)
    assert outputs.attentions[0].shape[-1] == 5  # what the model returns: a band of 4 + 1
    assert trace.stream.mask is not None
    assert np.all(trace.attention[:, :, 0, 3:] == 0)  # outside query 0's window
    assert trace.stream.mask[0, 0, 0, 3]
    assert any("sliding window" in n for n in trace.notes)


def test_sinks_that_scale_the_output_are_not_recorded_as_logits() -> None:
    trace, _, outcome = captured("granite_swa")
    assert outcome == "exact"
    assert trace.stream.sinks is None
    assert any("sinks scale each head's output" in n for n in trace.notes)


def test_gpt_oss_sinks_stay_logits() -> None:
    trace, _, outcome = captured("gpt_oss")
    assert outcome == "exact"
    assert trace.stream.sinks is not None


def test_fsmt_decoder_stays_causal() -> None:
    trace, _, _ = captured("fsmt")
    decoder = trace.streams["decoder"].attention
    assert np.all(np.triu(decoder[0, 0], 1) == 0)


@pytest.mark.parametrize("model_type", ["bigbird_pegasus", "longt5", "pegasus_x"])
def test_encoder_streams_are_shown_or_named(model_type: str) -> None:
    trace, _, _ = captured(model_type)
    if "encoder" in trace.streams:
        assert trace.streams["encoder"].has_qk or any(
            n.startswith("neuron view unavailable for encoder") for n in trace.notes
        )
    else:
        assert any(n.startswith("encoder:") for n in trace.notes)


def test_mla_attention_is_found_by_what_it_does() -> None:
    from attnscope.sources.hf.checks import check_has_attention

    built = build("longcat_flash")
    assert not any("Attention" in type(m).__name__ for m in built.model.modules())
    check_has_attention(built.model)  # raises if not found


@pytest.mark.parametrize("model_type", ["rwkv", "yoso"])
def test_attention_that_is_no_matrix_is_refused(model_type: str) -> None:
    built = build(model_type)
    text, options, _ = _inputs(built, bpe_tokenizer(wrap=True))
    before = fingerprint(built.model)
    with pytest.raises(AttnscopeError, match=r"not \(heads, queries, keys\)"):
        attnscope.capture(built.model, text, **options)
    assert fingerprint(built.model) == before


def test_xlnet_has_no_position_limit() -> None:
    trace, _, outcome = captured("xlnet")
    assert outcome == "attention-only"
    assert trace.metadata["route"] == "attention-only"


def test_bigbird_settling_on_full_attention_is_undone() -> None:
    built = build("big_bird")
    modules = [id(m) for m in built.model.modules()]
    text, options, _ = _inputs(built, bpe_tokenizer(wrap=True))
    attnscope.capture(built.model, text, **options)
    assert [id(m) for m in built.model.modules()] == modules
    assert built.model.attention_type == "block_sparse"


def test_stream_names_are_chunk_key_safe() -> None:
    trace, _, _ = captured("dots3_note_text")
    assert all(":" not in name and "/" not in name for name in trace.streams)
    torch.testing.assert_close(torch.tensor(trace.check()), torch.tensor(0.0), atol=1e-5, rtol=0)
