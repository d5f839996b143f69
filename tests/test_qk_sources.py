"""attnscope.qk_sources: the score split into query-side x key-side sources sums to the model's.

Families on tiny random models of 3 layers (so the chosen layer has earlier heads and MLPs to
split), real MiniLM, closed forms on hand-set weights, and bad input refused before any forward.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import transformers

import attnscope
from attnscope.errors import AttnscopeError, AttnscopeIndexError, AttnscopeTypeError
from capture_models import bpe_tokenizer, unigram_tokenizer

TEXT = "The cat sat on the mat and looked at the dog."
RTOL = 1e-4

LLAMA_LIKE: dict[str, tuple[type, dict[str, Any]]] = {
    "llama": (transformers.LlamaConfig, {}),
    "mistral": (transformers.MistralConfig, {"sliding_window": 4}),
    "qwen2": (transformers.Qwen2Config, {}),
    "qwen3": (transformers.Qwen3Config, {"head_dim": 8}),
    "gemma2": (
        transformers.Gemma2Config,
        {
            "head_dim": 8,
            "query_pre_attn_scalar": 16,
            "attn_logit_softcapping": 5.0,
            "sliding_window": 4,
        },
    ),
    "gemma3_text": (
        transformers.Gemma3TextConfig,
        {"head_dim": 8, "query_pre_attn_scalar": 16, "sliding_window": 4},
    ),
}


def _randomise(model: Any) -> Any:
    """Weights of std 0.3 (and norm weights around 1), so that every source matters."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator, dtype=param.dtype)
            if "norm" in name or name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                param.copy_((0.0 if "gemma" in type(model).__name__.lower() else 1.0) + 0.2 * noise)
            else:
                param.copy_(0.3 * noise)
    return model


SHAPE = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3}
HEADS = {"num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}
GPT2 = {"n_layer": 3, "n_head": 4, "n_embd": 32, "n_positions": 64}


def _built(config: Any) -> Any:
    torch.manual_seed(0)
    return _randomise(transformers.AutoModelForCausalLM.from_config(config).eval())


def llama_like(family: str, vocab: int) -> Any:
    """A 3-layer, 4-head (2 key heads) model of a Llama-like family."""
    config_class, extra = LLAMA_LIKE[family]
    bias = {"attention_bias": True} if family == "qwen2" else {}
    ids = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
    return _built(config_class(vocab_size=vocab, **SHAPE, **HEADS, **ids, **bias, **extra))


def gpt2(vocab: int) -> Any:
    """A 3-layer, 4-head GPT-2."""
    return _built(transformers.GPT2Config(vocab_size=vocab, bos_token_id=1, eos_token_id=2, **GPT2))


def _check_sum(model: Any, trace: Any, tokenizer: Any, **where: int) -> Any:
    table = attnscope.qk_sources(model, trace, tokenizer=tokenizer, **where)
    score = table.attrs["score"]
    assert table.contribution.dtype == np.float64
    assert list(table.columns) == ["query_source", "key_source", "contribution"]
    assert table.contribution.sum() == pytest.approx(score, rel=RTOL)
    # the score is the trace's own q·k * scaling, recomputed independently
    stream = trace.stream
    position = stream.layers.index(where["layer"])
    q = stream.queries[position, where["head"], where["query"]].astype(np.float64)
    k = stream.keys[position, stream.kv_head(where["head"]), where["key"]].astype(np.float64)
    assert score == pytest.approx(float(stream.scaling[position]) * float(q @ k), rel=1e-6)
    return table


@pytest.mark.parametrize("family", list(LLAMA_LIKE))
def test_llama_like_families_sum_to_the_score(family: str) -> None:
    tokenizer = bpe_tokenizer() if family != "gemma2" else unigram_tokenizer()
    model = llama_like(family, len(tokenizer))
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    n = len(trace.tokens)
    for layer, head, query, key in ((2, 3, n - 1, n - 3), (1, 0, 5, 5), (2, 1, 4, 2), (0, 2, 3, 0)):
        table = _check_sum(model, trace, tokenizer, layer=layer, head=head, query=query, key=key)
        sources = set(table.query_source)
        assert {f"L{lay}H{h}" for lay in range(layer) for h in range(4)} <= sources
        assert {f"L{lay}.mlp" for lay in range(layer)} | {"embed"} <= sources
        assert set(table.key_source) == sources
        assert table.attrs["kv_head"] == head // 2
    assert ("bias" in sources) == (family == "qwen2")


def test_gpt2_sums_with_positions_and_biases() -> None:
    tokenizer = bpe_tokenizer()
    model = gpt2(len(tokenizer))
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    table = _check_sum(model, trace, tokenizer, layer=2, head=1, query=8, key=3)
    expected = {"embed", "pos_embed", "bias", "L0.attn.bias", "L1.attn.bias", "L0.mlp", "L1.mlp"}
    assert expected | {f"L{lay}H{h}" for lay in range(2) for h in range(4)} == set(
        table.query_source
    )


def test_minilm_real_weights(minilm_path: Any) -> None:
    model = transformers.AutoModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_path)
    trace = attnscope.capture(model, "The cat sat on the mat.", text_pair="It was tired.")
    for layer, head, query, key in ((5, 11, 4, 2), (3, 2, 9, 0), (0, 0, 1, 12)):
        table = _check_sum(model, trace, tokenizer, layer=layer, head=head, query=query, key=key)
        assert {"embed", "pos_embed", "type_embed", "embed.norm.bias"} <= set(table.query_source)
        assert f"L{layer - 1}.mlp.norm.bias" in set(table.query_source) or layer == 0
    # the split of one row, key by key, is the model's own softmax: log-weight differences
    with torch.no_grad():
        inputs = tokenizer("The cat sat on the mat.", "It was tired.", return_tensors="pt")
        weights = model(**inputs, output_attentions=True).attentions[4][0, 7, 6]
    totals = [
        attnscope.qk_sources(model, trace, layer=4, head=7, query=6, key=key).contribution.sum()
        for key in (1, 9)
    ]
    assert totals[0] - totals[1] == pytest.approx(
        float(torch.log(weights[1] / weights[9])), rel=1e-4
    )


# -- closed forms on hand-set weights -------------------------------------------------------
def test_closed_form_bias_only_gpt2() -> None:
    """q and k weights zero in layer 1: only (bias, bias) is left, scaling * b_q · b_k."""
    tokenizer = bpe_tokenizer()
    model = gpt2(len(tokenizer))
    attn = model.transformer.h[1].attn
    with torch.no_grad():
        attn.c_attn.weight[:, :64] = 0.0
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    table = attnscope.qk_sources(model, trace, layer=1, head=2, query=6, key=1, tokenizer=tokenizer)
    bias = attn.c_attn.bias.detach().double()
    assert table.attrs["scaling"] == pytest.approx(8**-0.5, rel=1e-7)
    expected = float(bias[16:24] @ bias[32 + 16 : 32 + 24]) * table.attrs["scaling"]
    pair = table.set_index(["query_source", "key_source"]).contribution
    assert pair["bias", "bias"] == pytest.approx(expected, rel=1e-12)
    assert np.abs(pair.drop(("bias", "bias")).to_numpy()).max() < 1e-12 * abs(expected)


def test_closed_form_silent_heads_llama() -> None:
    """o_proj of layer 0 zero except head 2's columns: every other head writes exactly nothing."""
    tokenizer = bpe_tokenizer()
    model = llama_like("llama", len(tokenizer))
    with torch.no_grad():
        o_proj = model.model.layers[0].self_attn.o_proj.weight
        o_proj[:, :16] = 0.0
        o_proj[:, 24:] = 0.0
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    table = _check_sum(model, trace, tokenizer, layer=1, head=0, query=7, key=2)
    by_source = table.groupby("query_source").contribution.apply(lambda c: c.abs().max())
    assert (by_source[["L0H0", "L0H1", "L0H3"]] == 0.0).all()
    assert by_source["L0H2"] > 0.0


# -- the ablation identity: removing a source moves the score by its row ---------------------
def _clean_shares(model: Any, inputs: dict[str, Any], layer: int, family: str) -> dict[str, Any]:
    """Each source's share of layer ``layer``'s input at every position, from the model's run."""
    seen: dict[str, torch.Tensor] = {}
    base = model.model if family == "llama" else model.transformer
    blocks = base.layers if family == "llama" else base.h
    handles = []
    for index in range(layer):
        attention = blocks[index].self_attn if family == "llama" else blocks[index].attn
        o_proj = attention.o_proj if family == "llama" else attention.c_proj

        def keep_z(_m: Any, args: Any, index: int = index) -> None:
            seen[f"z{index}"] = args[0][0].double()

        def keep_mlp(_m: Any, _a: Any, out: Any, index: int = index) -> None:
            seen[f"L{index}.mlp"] = out[0].double()

        handles += [o_proj.register_forward_pre_hook(keep_z)]
        handles += [blocks[index].mlp.register_forward_hook(keep_mlp)]
    norm = blocks[layer].input_layernorm if family == "llama" else blocks[layer].ln_1
    handles += [norm.register_forward_pre_hook(lambda _m, a: seen.update(norm_in=a[0][0].double()))]
    with torch.no_grad():
        model(**inputs)
    for handle in handles:
        handle.remove()
    shares = {"norm_in": seen["norm_in"]}
    for index in range(layer):
        attention = blocks[index].self_attn if family == "llama" else blocks[index].attn
        o_proj = attention.o_proj if family == "llama" else attention.c_proj
        weight = o_proj.weight.double() if family == "llama" else o_proj.weight.double().T
        for head in range(4):
            cols = slice(head * 8, head * 8 + 8)
            shares[f"L{index}H{head}"] = seen[f"z{index}"][:, cols] @ weight[:, cols].T
        shares[f"L{index}.mlp"] = seen[f"L{index}.mlp"]
    return shares


def _ablated_score(
    model: Any,
    text: str,
    tokenizer: Any,
    family: str,
    layer: int,
    head: int,
    query: int,
    key: int,
    removed: torch.Tensor,
    at: int,
    clean_in: torch.Tensor,
) -> float:
    """The score after subtracting ``removed`` from layer ``layer``'s input at position ``at``,
    with the layer's input norm frozen at its clean statistic (a hook replaces its output)."""
    blocks = model.model.layers if family == "llama" else model.transformer.h
    norm = blocks[layer].input_layernorm if family == "llama" else blocks[layer].ln_1
    clean_length = clean_in.shape[0]

    def subtract(_m: Any, args: Any, kwargs: Any) -> Any:
        hidden = (args[0] if args else kwargs["hidden_states"]).clone()
        if hidden.shape[1] != clean_length:  # a short pass capture makes first: left alone
            return None
        hidden[0, at] -= removed.to(hidden.dtype)
        return (
            ((hidden, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": hidden})
        )

    def frozen(_m: Any, args: Any, _out: Any) -> Any:
        if args[0].shape[1] != clean_length:
            return None
        x = args[0].double()
        if family == "llama":
            rms = clean_in.pow(2).mean(-1, keepdim=True).add(norm.variance_epsilon).sqrt()
            return (norm.weight.double() * x / rms).to(args[0].dtype)
        clean = clean_in - clean_in.mean(-1, keepdim=True)
        std = clean.pow(2).mean(-1, keepdim=True).add(norm.eps).sqrt()
        centred = x - x.mean(-1, keepdim=True)
        return (centred / std * norm.weight.double() + norm.bias.double()).to(args[0].dtype)

    handles = [
        blocks[layer].register_forward_pre_hook(subtract, with_kwargs=True),
        norm.register_forward_hook(frozen),
    ]
    try:
        trace = attnscope.capture(model, text, tokenizer=tokenizer)
    finally:
        for handle in handles:
            handle.remove()
    stream = trace.stream
    q = stream.queries[layer, head, query].astype(np.float64)
    k = stream.keys[layer, stream.kv_head(head), key].astype(np.float64)
    return float(stream.scaling[layer]) * float(q @ k)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_ablation_identity(family: str) -> None:
    tokenizer = bpe_tokenizer()
    model = llama_like("llama", len(tokenizer)) if family == "llama" else gpt2(len(tokenizer))
    layer, head, query, key = 2, 3, 9, 4
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    table = attnscope.qk_sources(
        model, trace, layer=layer, head=head, query=query, key=key, tokenizer=tokenizer
    )
    inputs = dict(tokenizer(TEXT, return_tensors="pt"))
    inputs.pop("token_type_ids", None)
    shares = _clean_shares(model, inputs, layer, family)
    score = table.attrs["score"]
    for source in ("L0H1", "L1H3", "L1.mlp"):
        row = table[table.query_source == source].contribution.sum()
        column = table[table.key_source == source].contribution.sum()
        for removed_at, expected in ((query, row), (key, column)):
            ablated = _ablated_score(
                model,
                TEXT,
                tokenizer,
                family,
                layer,
                head,
                query,
                key,
                shares[source][removed_at],
                removed_at,
                shares["norm_in"],
            )
            assert score - ablated == pytest.approx(expected, rel=1e-3, abs=1e-5 * abs(score))


# -- bad input: refused before any forward, the model unchanged -----------------------------
@pytest.fixture(scope="module")
def llama_and_trace() -> tuple[Any, Any, Any]:
    tokenizer = bpe_tokenizer()
    model = llama_like("llama", len(tokenizer))
    return model, attnscope.capture(model, TEXT, tokenizer=tokenizer), tokenizer


def _state(model: Any) -> tuple[Any, ...]:
    hooks = tuple((len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules())
    params = tuple(p.detach().clone() for p in model.parameters())
    return hooks, params, model.training, model.config._attn_implementation


@pytest.mark.parametrize(
    ("where", "error", "words"),
    [
        ({"layer": 3}, AttnscopeIndexError, "layer=3 is outside 0..2"),
        ({"layer": -1}, AttnscopeIndexError, "layer=-1"),
        ({"head": 4}, AttnscopeIndexError, "head=4 is outside 0..3"),
        ({"query": 99}, AttnscopeIndexError, "query=99 is outside"),
        ({"key": 99}, AttnscopeIndexError, "key=99 is outside"),
        ({"query": 2, "key": 5}, AttnscopeError, "hidden from query 2 by the mask"),
        ({"head": 1.0}, AttnscopeTypeError, "head must be an int"),
    ],
)
def test_bad_positions_refused_before_forward(
    llama_and_trace: tuple[Any, Any, Any], where: dict[str, Any], error: type, words: str
) -> None:
    model, trace, tokenizer = llama_and_trace
    before = _state(model)
    calls: list[int] = []
    handle = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        with pytest.raises(error, match=words):
            attnscope.qk_sources(
                model,
                trace,
                tokenizer=tokenizer,
                **{"layer": 2, "head": 0, "query": 5, "key": 1, **where},
            )
    finally:
        handle.remove()
    assert calls == []
    after = _state(model)
    assert after[0] == before[0]
    assert after[2:] == before[2:]
    assert all(torch.equal(a, b) for a, b in zip(after[1], before[1], strict=True))


def test_trace_changed_after_capture_refused_before_forward(
    llama_and_trace: tuple[Any, Any, Any],
) -> None:
    """q or k arrays cut after capture: a clear error before the model runs (not an IndexError)."""
    model, trace, tokenizer = llama_and_trace
    stream = trace.stream
    kept = stream.queries, stream.keys, stream.scaling
    calls: list[int] = []
    handle = model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        for attribute, cut, words in (
            (
                "keys",
                kept[1][:, :, :3],
                r"keys have shape \(3, 2, 3, 8\); expected \(3, kv_heads, 20, 8",
            ),
            (
                "queries",
                kept[0][:, :, :5],
                r"queries have shape \(3, 4, 5, 8\); expected \(3, heads",
            ),
            ("scaling", kept[2][:1], "do not fit 3 layers"),
        ):
            setattr(stream, attribute, cut)
            try:
                with pytest.raises(AttnscopeError, match=words):
                    attnscope.qk_sources(
                        model, trace, layer=2, head=0, query=5, key=1, tokenizer=tokenizer
                    )
            finally:
                stream.queries, stream.keys, stream.scaling = kept
    finally:
        handle.remove()
    assert calls == []


def test_sliding_window_key_refused() -> None:
    tokenizer = bpe_tokenizer()
    model = llama_like("mistral", len(tokenizer))
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer)
    with pytest.raises(AttnscopeError, match="sliding"):
        attnscope.qk_sources(model, trace, layer=1, head=0, query=9, key=1, tokenizer=tokenizer)


def test_trace_of_another_model_or_input_refused(llama_and_trace: tuple[Any, Any, Any]) -> None:
    model, trace, tokenizer = llama_and_trace
    other = llama_like("llama", len(tokenizer))
    with torch.no_grad():
        other.model.layers[0].self_attn.q_proj.weight.mul_(2.0)
    with pytest.raises(AttnscopeError, match="not captured from this model and input"):
        attnscope.qk_sources(other, trace, layer=1, head=0, query=5, key=1, tokenizer=tokenizer)
    gpt = gpt2(len(tokenizer))
    with pytest.raises(AttnscopeError, match="captured from a llama model and this is a gpt2"):
        attnscope.qk_sources(gpt, trace, layer=1, head=0, query=5, key=1, tokenizer=tokenizer)
    with pytest.raises(AttnscopeError, match="not in this tokenizer's vocabulary"):
        attnscope.qk_sources(
            model, trace, layer=1, head=0, query=5, key=1, tokenizer=unigram_tokenizer()
        )
    partial = attnscope.capture(model, TEXT, tokenizer=tokenizer, layers=[0])
    with pytest.raises(AttnscopeIndexError, match="layer 1 was not captured"):
        attnscope.qk_sources(model, partial, layer=1, head=0, query=5, key=1, tokenizer=tokenizer)
    with pytest.raises(AttnscopeTypeError, match="must be an AttentionTrace"):
        attnscope.qk_sources(model, "text", layer=1, head=0, query=5, key=1)


@pytest.mark.parametrize(
    ("family", "part"), [("t5", "relative position bias"), ("distilbert", "TransformerBlock")]
)
def test_unsupported_family_names_the_part(family: str, part: str) -> None:
    from capture_models import tiny_model

    tokenizer = unigram_tokenizer()
    model = tiny_model(family, len(tokenizer))
    trace = attnscope.AttentionTrace(
        ["a", "b"], np.full((1, 4, 2, 2), 0.5, np.float32), metadata={"model_type": family}
    )
    with pytest.raises(AttnscopeError, match=part):
        attnscope.qk_sources(model, trace, layer=0, head=0, query=1, key=0)
