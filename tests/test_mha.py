"""attnscope.MultiHeadAttention against torch's own attention, step by step."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import Tensor, nn
from torch.nn.functional import scaled_dot_product_attention

from attnscope import MultiHeadAttention

TOL = 1e-5


def _pair(
    d_model: int, heads: int, *, seed: int = 0, **kwargs: Any
) -> tuple[nn.MultiheadAttention, MultiHeadAttention]:
    """A torch MultiheadAttention with non-zero biases and our copy of it, both in eval."""
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, heads, batch_first=True, **kwargs).eval()
    with torch.no_grad():
        for p in ref.parameters():
            if p.dim() == 1:  # torch starts biases at 0: make them matter
                p.normal_(0.0, 0.5)
    return ref, MultiHeadAttention.from_torch(ref).eval()


def _compare(
    ref: nn.MultiheadAttention,
    mine: MultiHeadAttention,
    query: Tensor,
    key: Tensor | None = None,
    value: Tensor | None = None,
    **masks: Tensor,
) -> tuple[float, float]:
    """Max abs difference of (output, head-averaged weights) between the two modules."""
    k = query if key is None else key
    v = query if value is None else value
    with torch.no_grad():
        want, want_w = ref(query, k, v, need_weights=True, average_attn_weights=True, **masks)
        got, trace = mine(query, key, value, need_trace=True, **masks)
    assert torch.isfinite(want).all(), "the reference has NaN: a case with a fully masked row"
    return (
        (got - want).abs().max().item(),
        (trace.weights.mean(dim=1) - want_w).abs().max().item(),
    )


def _causal(n: int, s: int | None = None) -> Tensor:
    return torch.ones(n, n if s is None else s, dtype=torch.bool).triu(1)


def _padding(batch: int, s: int) -> Tensor:
    pad = torch.zeros(batch, s, dtype=torch.bool)
    for b in range(batch):
        pad[b, s - b :] = True  # item b has b padded keys at the end
    return pad


def _additive(rows: int, cols: int, *, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    mask = torch.randn(rows, cols, generator=g)
    mask[:, -1] = float("-inf")  # some keys hidden outright, never all of a row
    mask[0, 0] = float("-inf")
    return mask


def test_plain_self_attention_matches_torch() -> None:
    ref, mine = _pair(32, 4)
    assert max(_compare(ref, mine, torch.randn(3, 6, 32))) <= TOL


def test_causal_matches_torch_with_a_causal_mask() -> None:
    ref, _ = _pair(32, 4)
    mine = MultiHeadAttention.from_torch(ref, causal=True).eval()
    x = torch.randn(2, 6, 32)
    with torch.no_grad():
        want, want_w = ref(x, x, x, attn_mask=_causal(6))
        got, trace = mine(x, need_trace=True)
    assert (got - want).abs().max().item() <= TOL
    assert (trace.weights.mean(1) - want_w).abs().max().item() <= TOL
    # the same mask given per call instead of built in
    assert max(_compare(ref, MultiHeadAttention.from_torch(ref), x, attn_mask=_causal(6))) <= TOL


def test_key_padding_matches_torch() -> None:
    ref, mine = _pair(32, 4)
    x = torch.randn(3, 6, 32)
    assert max(_compare(ref, mine, x, key_padding_mask=_padding(3, 6))) <= TOL


def test_causal_and_padding_together_match_torch() -> None:
    ref, mine = _pair(32, 4)
    x = torch.randn(3, 6, 32)
    errors = _compare(ref, mine, x, attn_mask=_causal(6), key_padding_mask=_padding(3, 6))
    assert max(errors) <= TOL


def test_per_head_3d_attn_mask_matches_torch() -> None:
    ref, mine = _pair(16, 4)
    batch, n = 2, 5
    g = torch.Generator().manual_seed(3)
    mask = torch.rand(batch * 4, n, n, generator=g) < 0.4
    mask[:, :, 0] = False  # every row keeps a key
    assert max(_compare(ref, mine, torch.randn(batch, n, 16), attn_mask=mask)) <= TOL


def test_cross_attention_with_kdim_vdim_matches_torch() -> None:
    ref, mine = _pair(24, 3, kdim=10, vdim=14)
    assert ref.in_proj_weight is None  # torch keeps separate q/k/v weights here
    q, k, v = torch.randn(2, 4, 24), torch.randn(2, 9, 10), torch.randn(2, 9, 14)
    assert max(_compare(ref, mine, q, k, v, key_padding_mask=_padding(2, 9))) <= TOL


def test_odd_sizes_match_torch() -> None:
    ref, mine = _pair(30, 5, kdim=30, vdim=30, seed=1)
    q, kv = torch.randn(2, 7, 30), torch.randn(2, 11, 30)
    errors = _compare(
        ref, mine, q, kv, kv, attn_mask=_causal(7, 11), key_padding_mask=_padding(2, 11)
    )
    assert max(errors) <= TOL


def test_float_additive_masks_match_torch() -> None:
    ref, mine = _pair(32, 4)
    x = torch.randn(2, 6, 32)
    attn = _additive(6, 6, seed=1)
    pad = torch.zeros(2, 6)
    pad[1, 2] = float("-inf")
    pad[0, 3] = -2.5
    assert max(_compare(ref, mine, x, attn_mask=attn, key_padding_mask=pad)) <= TOL
    with torch.no_grad():
        _, trace = mine(x, attn_mask=attn, key_padding_mask=pad, need_trace=True)
    assert trace.bias is not None  # the finite part is kept apart from the mask
    assert trace.mask[1, 0, 0, 2]
    assert trace.mask[0, 0, 0, 5]
    assert not trace.mask[0, 0, 1, 3]


def test_without_bias_matches_torch() -> None:
    ref, mine = _pair(16, 2, bias=False)
    assert mine.q_proj.bias is None
    assert mine.out_proj.bias is None
    assert max(_compare(ref, mine, torch.randn(2, 5, 16))) <= TOL


def test_from_torch_accepts_sequence_first_modules() -> None:
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(16, 4).eval()  # batch_first=False, torch's default
    mine = MultiHeadAttention.from_torch(ref).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        want = ref(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1))[0].transpose(0, 1)
        assert (mine(x) - want).abs().max().item() <= TOL


def test_from_torch_copies_dropout_and_training_mode() -> None:
    ref = nn.MultiheadAttention(8, 2, dropout=0.25, batch_first=True)
    mine = MultiHeadAttention.from_torch(ref)
    assert mine.dropout.p == 0.25
    assert mine.training


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"add_bias_kv": True}, "add_bias_kv"), ({"add_zero_attn": True}, "add_zero_attn")],
)
def test_from_torch_refuses_what_it_cannot_mirror(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, **kwargs))


def test_from_torch_refuses_other_modules() -> None:
    with pytest.raises(TypeError, match=r"torch\.nn\.MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(8, 8))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "masks",
    [{}, {"causal": True}, {"pad": True}, {"causal": True, "pad": True}, {"float": True}],
)
def test_each_head_matches_scaled_dot_product_attention(masks: dict[str, bool]) -> None:
    torch.manual_seed(2)
    mha = MultiHeadAttention(24, 3, causal=masks.get("causal", False)).eval()
    x = torch.randn(2, 6, 24)
    kwargs: dict[str, Tensor] = {}
    if masks.get("pad"):
        kwargs["key_padding_mask"] = _padding(2, 6)
    if masks.get("float"):
        kwargs["attn_mask"] = _additive(6, 6, seed=4)
    with torch.no_grad():
        _, t = mha(x, need_trace=True, **kwargs)
        # sdpa takes one additive mask; build it from what the trace recorded.
        additive = torch.zeros(t.logits.shape).masked_fill(t.mask, float("-inf"))
        if t.bias is not None:
            additive = additive + t.bias
        want = scaled_dot_product_attention(t.q, t.k, t.v, attn_mask=additive)
    assert (t.context - want).abs().max().item() <= TOL


def test_masked_weights_are_exactly_zero_and_rows_sum_to_one() -> None:
    mha = MultiHeadAttention(16, 4, causal=True).eval()
    pad = _padding(3, 7)
    with torch.no_grad():
        _, t = mha(torch.randn(3, 7, 16), key_padding_mask=pad, need_trace=True)
    hidden = t.mask.expand_as(t.weights)
    assert hidden.any()
    assert (t.weights[hidden] == 0).all()
    assert (t.weights.sum(-1) - 1).abs().max().item() <= 1e-6


def test_a_fully_masked_row_gives_zeros_not_nan() -> None:
    mha = MultiHeadAttention(8, 2).eval()
    mask = torch.zeros(3, 3, dtype=torch.bool)
    mask[1] = True  # query 1 may see nothing
    with torch.no_grad():
        out, t = mha(torch.randn(1, 3, 8), attn_mask=mask, need_trace=True)
    assert torch.isfinite(out).all()
    assert (t.weights[0, :, 1] == 0).all()
    assert (t.weights[0, :, 0].sum(-1) - 1).abs().max().item() <= 1e-6
    assert torch.equal(t.context[0, :, 1], torch.zeros(2, 4))


def test_trace_steps_fit_together() -> None:
    torch.manual_seed(5)
    mha = MultiHeadAttention(16, 4, causal=True).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        out, t = mha(x, need_trace=True)
        assert t.scaling == pytest.approx(0.5)
        assert torch.allclose(t.scores, t.q @ t.k.transpose(-2, -1))
        visible = ~t.mask.expand_as(t.logits)
        assert torch.allclose(t.logits[visible], (t.scores * t.scaling)[visible])
        assert torch.isneginf(t.logits[~visible]).all()
        assert torch.allclose(t.weights, torch.softmax(t.logits, -1))
        assert torch.allclose(t.context, t.weights @ t.v)
        merged = t.context.transpose(1, 2).reshape(2, 5, 16)
        assert torch.allclose(out, mha.out_proj(merged))


def test_trace_weights_are_taken_before_dropout() -> None:
    torch.manual_seed(6)
    mha = MultiHeadAttention(16, 4, dropout=0.5).train()
    _, t = mha(torch.randn(1, 6, 16), need_trace=True)
    assert (t.weights.sum(-1) - 1).abs().max().item() <= 1e-6
    assert not torch.allclose(t.context, t.weights @ t.v)  # dropout acted after


def test_parameter_count_does_not_depend_on_heads() -> None:
    counts = {
        h: sum(p.numel() for p in MultiHeadAttention(64, h).parameters()) for h in (1, 2, 4, 8)
    }
    assert set(counts.values()) == {4 * (64 * 64 + 64)}


def test_grouped_query_attention_shrinks_kv_and_equals_repeated_mha() -> None:
    torch.manual_seed(7)
    gqa = MultiHeadAttention(32, 8, num_kv_heads=2, causal=True).eval()
    assert gqa.k_proj.weight.shape == (8, 32)
    assert gqa.v_proj.weight.shape == (8, 32)
    mha = MultiHeadAttention(32, 8, causal=True).eval()
    group, head_dim = 4, 4
    with torch.no_grad():
        for proj in ("q_proj", "out_proj"):
            getattr(mha, proj).load_state_dict(getattr(gqa, proj).state_dict())
        for proj in ("k_proj", "v_proj"):
            src, dst = getattr(gqa, proj), getattr(mha, proj)
            # kv head j serves query heads j*group .. j*group+group-1
            w = src.weight.view(2, head_dim, 32).repeat_interleave(group, dim=0)
            dst.weight.copy_(w.reshape(32, 32))
            dst.bias.copy_(src.bias.view(2, head_dim).repeat_interleave(group, dim=0).reshape(32))
        x = torch.randn(2, 6, 32)
        out_g, t_g = gqa(x, need_trace=True)
        out_m, t_m = mha(x, need_trace=True)
    assert t_g.k.shape == (2, 2, 6, 4)
    assert t_m.k.shape == (2, 8, 6, 4)
    assert (out_g - out_m).abs().max().item() <= TOL
    assert (t_g.weights - t_m.weights).abs().max().item() <= TOL


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 30, "num_heads": 4}, "cannot be split evenly over num_heads=4"),
        ({"d_model": 32, "num_heads": 8, "num_kv_heads": 3}, "not a multiple of num_kv_heads"),
        ({"d_model": 0, "num_heads": 1}, "d_model must be a positive integer"),
        ({"d_model": 8, "num_heads": 2, "kdim": -1}, "kdim must be a positive integer"),
        ({"d_model": 8, "num_heads": 2, "dropout": 1.0}, r"dropout must be a probability"),
    ],
)
def test_bad_sizes_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**kwargs)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"query": torch.randn(4, 8)}, r"Add a batch axis"),
        ({"query": torch.randn(1, 4, 6)}, r"expected \(batch, seq, d_model=8\)"),
        ({"key": torch.randn(1, 4, 8)}, "pass both key and value"),
        ({"key": torch.randn(2, 4, 8), "value": torch.randn(2, 4, 8)}, "share the batch"),
        ({"attn_mask": torch.zeros(4, 5, dtype=torch.bool)}, r"attn_mask has shape \(4, 5\)"),
        ({"key_padding_mask": torch.zeros(1, 3, dtype=torch.bool)}, "key_padding_mask has shape"),
        ({"attn_mask": torch.zeros(4, 4, dtype=torch.long)}, r"dtype torch.int64.*mask.bool"),
        ({"attn_mask": torch.full((4, 4), float("nan"))}, "NaN or \\+inf"),
    ],
)
def test_bad_calls_are_refused(call: dict[str, Tensor], message: str) -> None:
    mha = MultiHeadAttention(8, 2)
    query = call.pop("query", torch.randn(1, 4, 8))
    with pytest.raises((ValueError, TypeError), match=message):
        mha(query, **call)
