"""capture(..., value_norms=True): ‖f_h(x_j)‖ = ‖(x_j W_V + b_V) W_O^h‖ per layer, head and key.

Held to a reference written from Kobayashi et al. 2020's definition (the model's own hidden
states and weights, computed here), on real MiniLM, a grouped-query Llama and GPT-2 (fused
c_attn, biases); value-weighted rows and ``sink_value`` against closed forms on hand-set attention.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers

import attnscope
from attnscope.analysis.value_weighted import sink_value, value_weighted_rows
from attnscope.errors import AttnscopeError
from capture_models import bpe_tokenizer, tiny_model, unigram_tokenizer

TEXT = "The cat sat on the mat and looked at the dog."


def kobayashi_norms(
    x: torch.Tensor, wv: torch.Tensor, bv: Any, wo: torch.Tensor, heads: int, kv_heads: int
) -> np.ndarray:
    """``‖(x W_V + b_V) W_O^h‖`` for every head and position, in float64 from the definition.

    ``x`` (N, d) is what the value projection reads; ``wv`` (kv*dh, d), ``wo`` (d, heads*dh) are
    Linear weights (``y = x Wᵀ + b``).
    """
    x, wv, wo = x.detach().double(), wv.detach().double(), wo.detach().double()
    v = x @ wv.T + (0.0 if bv is None else bv.detach().double())
    head_dim = wo.shape[1] // heads
    out = np.empty((heads, x.shape[0]))
    for head in range(heads):
        kv = head // (heads // kv_heads)
        f = (
            v[:, kv * head_dim : (kv + 1) * head_dim]
            @ wo[:, head * head_dim : (head + 1) * head_dim].T
        )
        out[head] = torch.linalg.vector_norm(f, dim=-1).numpy()
    return out


def test_minilm_parity_with_the_papers_definition(minilm_path: Path) -> None:
    model = transformers.AutoModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_path)
    trace = attnscope.capture(
        model, "The cat sat on the mat.", text_pair="It slept.", value_norms=True
    )
    inputs = tokenizer("The cat sat on the mat.", "It slept.", return_tensors="pt")
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True, output_attentions=True)
    stream = trace.stream
    assert stream.value_norms is not None
    assert stream.value_norms.shape == (6, 12, len(trace.tokens))
    for layer in range(6):
        attention = model.encoder.layer[layer].attention
        expected = kobayashi_norms(
            out.hidden_states[layer][0],
            attention.self.value.weight,
            attention.self.value.bias,
            attention.output.dense.weight,
            12,
            12,
        )
        np.testing.assert_allclose(stream.value_norms[layer], expected, rtol=1e-5)
        # value-weighted attention: α_ij ‖f(x_j)‖ renormalised per row
        alpha = out.attentions[layer][0].double().numpy()
        weighted = alpha * expected[:, None, :]
        weighted /= weighted.sum(-1, keepdims=True)
        for head in (0, 7):
            rows = value_weighted_rows(stream, layer, head, slice(0, stream.q_len)).numpy()
            np.testing.assert_allclose(rows, weighted[head], rtol=1e-5, atol=1e-7)
        stats = sink_value(stream)[layer]
        np.testing.assert_allclose(stats, weighted[:, :, 0].mean(-1), rtol=1e-5)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_grouped_query_and_biases(family: str) -> None:
    tokenizer = bpe_tokenizer()
    model = tiny_model(family, len(tokenizer))
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, value_norms=True)
    inputs = dict(tokenizer(TEXT, return_tensors="pt"))
    inputs.pop("token_type_ids", None)
    with torch.no_grad():
        hidden = model(**inputs, output_hidden_states=True).hidden_states
        for layer in range(2):
            if family == "llama":
                block = model.layers[layer]
                x = block.input_layernorm(hidden[layer])[0]
                attn = block.self_attn
                args = (attn.v_proj.weight, attn.v_proj.bias, attn.o_proj.weight, 4, 2)
            else:
                block = model.h[layer]
                x = block.ln_1(hidden[layer])[0]
                c_attn, c_proj = block.attn.c_attn, block.attn.c_proj
                args = (c_attn.weight[:, 64:].T, c_attn.bias[64:], c_proj.weight.T, 4, 4)
            expected = kobayashi_norms(x, *args)
            np.testing.assert_allclose(trace.stream.value_norms[layer], expected, rtol=1e-5)


def test_closed_forms_on_hand_set_attention() -> None:
    # uniform over 4 keys, the last key's value 5 times the others': it carries 5/8 of each row
    trace = attnscope.AttentionTrace(list("abcd"), np.full((1, 1, 4, 4), 0.25, np.float32))
    trace.stream.set_value_norms(np.array([[[1.0, 1.0, 1.0, 5.0]]], np.float32))
    assert sink_value(trace.stream).tolist() == [[0.125]]
    assert value_weighted_rows(trace.stream, 0, 0, slice(0, 1)).tolist() == [
        [0.125, 0.125, 0.125, 0.625]
    ]
    # causal rows [1], [.5, .5]; the first key's value twice the second's: 1 and 2/3
    causal = np.array([[[[1.0, 0.0], [0.5, 0.5]]]], np.float32)
    trace = attnscope.AttentionTrace(["a", "b"], causal)
    trace.stream.set_value_norms(np.array([[[2.0, 1.0]]], np.float32))
    stats = attnscope.head_stats(trace)
    assert list(stats.columns).index("sink_value") == list(stats.columns).index("sink") + 1
    assert stats.sink.iloc[0] == pytest.approx(0.75, rel=1e-7)
    assert stats.sink_value.iloc[0] == pytest.approx(5 / 6, rel=1e-7)
    assert "sink_value" not in attnscope.head_stats(attnscope.AttentionTrace(["a", "b"], causal))


def test_saved_and_loaded_and_per_layer(tmp_path: Path) -> None:
    tokenizer = unigram_tokenizer()
    model = tiny_model("llama", len(tokenizer))
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, value_norms=True)
    loaded = attnscope.AttentionTrace.load(trace.save(tmp_path / "t.npz"))
    assert loaded.stream.value_norms is not None
    np.testing.assert_array_equal(loaded.stream.value_norms, trace.stream.value_norms)
    one = attnscope.capture(model, TEXT, tokenizer=tokenizer, layers=[1], value_norms=True)
    np.testing.assert_allclose(one.stream.value_norms[0], trace.stream.value_norms[1], rtol=1e-6)
    assert attnscope.capture(model, TEXT, tokenizer=tokenizer).stream.value_norms is None


def test_refused_before_any_forward() -> None:
    tokenizer = unigram_tokenizer()
    model = tiny_model("t5", len(tokenizer))
    calls: list[int] = []
    handle = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(AttnscopeError, match="encoder–decoder"):
            attnscope.capture(model, TEXT, tokenizer=tokenizer, value_norms=True)
    finally:
        handle.remove()
    assert calls == []
    stream = attnscope.AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)).stream
    with pytest.raises(AttnscopeError, match="expected \\(1, 1, 1\\)"):
        stream.set_value_norms(np.ones((1, 2, 1), np.float32))
    with pytest.raises(AttnscopeError, match="negative"):
        stream.set_value_norms(-np.ones((1, 1, 1), np.float32))


def test_vnorm_chunk_gives_the_views_value_weighted_rows() -> None:
    from attnscope.encode.chunks import encode_chunk, parse_key
    from attnscope.encode.meta import build_meta

    tokenizer = unigram_tokenizer()
    model = tiny_model("llama", len(tokenizer))
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, value_norms=True)
    assert build_meta(trace)["streams"]["self"]["has_value_norms"] is True
    arrays = dict(encode_chunk(trace, parse_key("vnorm:self:1", trace)))
    stream = trace.stream
    np.testing.assert_array_equal(arrays["norm"], stream.value_norms[1])
    alpha = stream.layer_attention(1)
    np.testing.assert_allclose(
        arrays["rowsum"], (alpha * stream.value_norms[1][:, None, :]).sum(-1), rtol=1e-5
    )
    drawn = alpha[2] * arrays["norm"][2] / arrays["rowsum"][2][:, None]
    expected = value_weighted_rows(stream, 1, 2, slice(0, stream.q_len)).numpy()
    np.testing.assert_allclose(drawn, expected, rtol=1e-5, atol=1e-7)
    plain = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    assert "has_value_norms" not in build_meta(plain)["streams"]["self"]
    with pytest.raises(AttnscopeError, match="value_norms=True"):
        parse_key("vnorm:self:1", plain)
