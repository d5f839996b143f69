"""Protocol-named detectors (issue 34): head_detector against TransformerLens's own
``detect_head`` (run through a TransformerBridge of the same tiny model), and
induction_sweep against the TransformerLens/ARENA protocol computed independently
from the model's eager attention."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.display.scan_ranking import scan_ranking
from attnscope.errors import AttnscopeError
from test_capture_generate import causal_lm, model_state
from test_interop import gpt2, llama

# BOS, then a phrase repeated: every detector has something to find.
IDS = [0, 5, 7, 9, 11, 5, 7, 9, 11, 13, 5, 7]
OTHER = [0, 3, 3, 8, 3, 8, 21, 8]
KINDS = ["previous_token", "duplicate_token", "induction"]
OPTIONS = [
    {"exclude_bos": False, "exclude_current_token": False},
    {"exclude_bos": True, "exclude_current_token": False},
    {"exclude_bos": False, "exclude_current_token": True},
    {"exclude_bos": True, "exclude_current_token": True},
]


class Prompts:
    """What TransformerLens's detect_head needs of a model, over a TransformerBridge.

    The bridge of a config-built model has no tokenizer, so ``to_tokens`` maps
    each prompt name to its ids; everything else is the bridge's own.
    """

    def __init__(self, model: Any, architecture: str, prompts: dict[str, list[int]]) -> None:
        from transformer_lens.model_bridge.sources import build_bridge_from_module

        # The bridge rebuilds the model's modules in place: give it a copy.
        self.bridge = build_bridge_from_module(
            copy.deepcopy(model), architecture, hf_config=model.config
        )
        self.cfg = self.bridge.cfg
        self.prompts = prompts

    def to_tokens(self, seq: str | list[str]) -> torch.Tensor:
        # detect_head tokenizes a list too before scoring each prompt; only its length is read.
        return torch.tensor([self.prompts[seq if isinstance(seq, str) else seq[0]]])

    def run_with_cache(self, *args: Any, **kwargs: Any) -> Any:
        with torch.no_grad():
            return self.bridge.run_with_cache(*args, **kwargs)


@pytest.mark.parametrize(("make", "architecture"), [(gpt2, "GPT2LMHeadModel"),
                                                    (llama, "LlamaForCausalLM")])  # fmt: skip
def test_head_detector_equals_transformer_lens_detect_head(make: Any, architecture: str) -> None:
    from transformer_lens.head_detector import detect_head

    model = make()
    tl_model = Prompts(model, architecture, {"a": IDS, "b": OTHER})
    trace = attnscope.capture(model, IDS)
    shape = (tl_model.cfg.n_layers, tl_model.cfg.n_heads)
    for kind in KINDS:
        for options in OPTIONS:
            for measure in ("mul", "abs"):
                expected = detect_head(
                    tl_model, "a", f"{kind}_head", error_measure=measure, **options
                )
                got = attnscope.head_detector(
                    trace, kind.replace("_", "-"), error_measure=measure, **options
                )
                scores = got["score"].to_numpy().reshape(shape)
                apart = np.abs(scores - expected.numpy()) > 1e-6
                if measure == "abs":
                    # Both round the error to 3 decimals; float32 (theirs) and float64 (ours)
                    # may round an error within ~1e-7 of x.xxx5 apart, by one step.
                    apart &= ~on_a_rounding_edge(trace, kind, options)
                assert not apart.any(), f"{kind} {options} {measure}: {scores} vs {expected}"
        # A list of prompts: detect_head's mean over them, from the model directly.
        both = detect_head(tl_model, ["a", "b"], f"{kind}_head")
        ours = attnscope.head_detector(model, kind, [IDS, OTHER])
        np.testing.assert_allclose(ours["score"].to_numpy().reshape(shape), both.numpy(), atol=1e-6)
        assert ours.attrs["inputs"] == 2


def on_a_rounding_edge(trace: attnscope.AttentionTrace, kind: str, options: dict[str, bool]) -> Any:
    """Where the unrounded "abs" error lies within 1e-6 of a 3-decimal rounding edge."""
    from attnscope.analysis.head_detector import detection_pattern

    n = len(trace.tokens)
    diff = np.abs(trace.attention.astype(np.float64) - detection_pattern(kind, IDS))
    if options["exclude_bos"]:
        diff[..., 0] = 0.0
    if options["exclude_current_token"]:
        diff[..., np.eye(n, dtype=bool)] = 0.0
    raw = diff.sum(axis=(-2, -1)) / n
    return np.abs((raw * 1000) % 1 - 0.5) < 1e-3


def test_same_patterns_as_transformer_lens_on_minilm(minilm: tuple[Any, Any]) -> None:
    from transformer_lens import head_detector as tl

    model, tok = minilm
    encoding = tok("the cat sat on the mat, the cat sat on the hat", return_tensors="pt")
    trace = attnscope.capture(model, encoding, tokenizer=tok)
    ids = encoding["input_ids"]
    for kind in KINDS:
        pattern = getattr(tl, f"get_{kind}_head_detection_pattern")(ids)
        for options in OPTIONS:
            expected = [
                tl.compute_head_attention_similarity_score(
                    torch.from_numpy(trace.attention[layer, head]),
                    pattern,
                    error_measure="mul",
                    **options,
                )
                for layer in range(6)
                for head in range(12)
            ]
            got = attnscope.head_detector(trace, kind, **options)["score"].to_numpy()
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
        # A pattern of one's own is scored as given.
        custom = attnscope.head_detector(trace, pattern.numpy())
        np.testing.assert_allclose(
            custom["score"], attnscope.head_detector(trace, kind)["score"], atol=1e-12
        )


def test_head_stats_induction_is_detect_head_mul_on_the_input(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    trace = attnscope.capture(model, "the cat sat. the cat sat. the cat", tokenizer=tok)
    stats = attnscope.head_stats(trace)
    for kind, column in (("induction", "induction"), ("duplicate", "duplicate")):
        np.testing.assert_allclose(
            stats[column], attnscope.head_detector(trace, kind)["score"], rtol=1e-5
        )
    assert "ARENA" in attnscope.analysis.STATISTICS["induction"].source


def test_head_detector_heads_and_refusals() -> None:
    model = gpt2()
    trace = attnscope.capture(model, IDS)
    some = attnscope.head_detector(trace, "induction", heads=[(1, 2), (0, 1)])
    assert some[["layer", "head"]].values.tolist() == [[0, 1], [1, 2]]
    same = attnscope.head_detector(trace, "induction", heads={0: [1], 1: [2]})
    assert same.equals(some)
    with pytest.raises(AttnscopeError, match="choose one of"):
        attnscope.head_detector(trace, "copying")
    with pytest.raises(AttnscopeError, match="'mul'"):
        attnscope.head_detector(trace, "induction", error_measure="l2")  # type: ignore[arg-type]
    with pytest.raises(AttnscopeError, match=r"\(12, 12\)"):
        attnscope.head_detector(trace, np.eye(3))
    with pytest.raises(TypeError, match="needs a trace, or a model with inputs"):
        attnscope.head_detector(model, "induction")


def arena_reference(model: Any, tokens: torch.Tensor, seq_len: int) -> tuple[Any, float, float]:
    """The protocol computed from the model's own eager attention (an eager copy, batched)."""
    eager = copy.deepcopy(model)
    eager.set_attn_implementation("eager")
    with torch.no_grad():
        out = eager(tokens, output_attentions=True)
    scores = np.stack(
        [
            a.diagonal(offset=1 - seq_len, dim1=-2, dim2=-1).mean(dim=(0, -1)).numpy()
            for a in out.attentions
        ]
    )
    log_probs = torch.log_softmax(out.logits[:, :-1], dim=-1)
    picked = log_probs.gather(-1, tokens[:, 1:, None])[..., 0]
    return scores, float(-picked[:, :seq_len].mean()), float(-picked[:, seq_len:].mean())


def test_induction_sweep_follows_the_arena_protocol() -> None:
    model, tok = causal_lm("llama")
    before = model_state(model)
    sweep = attnscope.induction_sweep(model, tok, seq_len=12, batch=3, seed=5)
    assert model_state(model) == before
    tokens = torch.tensor(sweep.attrs["tokens"])
    # The tokens: torch.manual_seed(seed); randint over the embeddings' rows; BOS first.
    torch.manual_seed(5)
    half = torch.randint(0, model.get_input_embeddings().num_embeddings, (3, 12))
    expected = torch.cat([torch.full((3, 1), tok.bos_token_id), half, half], dim=1)
    assert torch.equal(tokens, expected)
    scores, first, second = arena_reference(model, tokens, 12)
    np.testing.assert_allclose(sweep["score"].to_numpy().reshape(2, 4), scores, atol=1e-6)
    assert sweep.attrs["loss_first_copy"] == pytest.approx(first, rel=1e-5)
    assert sweep.attrs["loss_second_copy"] == pytest.approx(second, rel=1e-5)
    # The second copy's queries alone, by hand from one capture.
    trace = attnscope.capture(model, tokens[0], tokenizer=tok)
    by_hand = [trace.attention[1, 3, 13 + k, 2 + k] for k in range(12)]
    one_row = attnscope.induction_sweep(model, tok, seq_len=12, batch=1, seed=5)
    assert one_row["score_second_copy"].iloc[-1] == pytest.approx(np.mean(by_hand), rel=1e-5)
    assert attnscope.induction_sweep(model, tok, seq_len=12, batch=3, seed=5).equals(sweep)


def test_induction_sweep_ranks_in_the_widget_under_its_protocol() -> None:
    model, tok = causal_lm("gpt2")
    sweep = attnscope.induction_sweep(model, tok, seq_len=8, batch=2)
    trace = attnscope.capture(model, sweep.attrs["tokens"][0], tokenizer=tok)
    ranking = scan_ranking(sweep, trace)
    labels = {s["name"]: s["label"] for s in ranking.statistics}
    assert "TransformerLens/ARENA" in labels["scan:score"]
    widget = attnscope.AttentionWidget(trace, scan=sweep)
    assert any("ARENA" in s["label"] for s in widget._meta["statistics"])
    widget.close()


def test_induction_sweep_refusals() -> None:
    model, tok = causal_lm("gpt2")
    with pytest.raises(AttnscopeError, match="seq_len must be at least 2"):
        attnscope.induction_sweep(model, tok, seq_len=1)
    with pytest.raises(TypeError, match="batch must be an int"):
        attnscope.induction_sweep(model, tok, batch=2.0)  # type: ignore[arg-type]
    with pytest.raises(AttnscopeError, match="positions"):
        attnscope.induction_sweep(model, tok, seq_len=100)
