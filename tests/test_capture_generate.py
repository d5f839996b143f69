"""capture(model, prompt, max_new_tokens=N) against what generate() computed step by step.

The reference is the model's own ``generate(..., output_attentions=True)`` on an
eager copy: one attention tensor per layer and step, the first over the prompt,
then one row per new token over the keys its KV cache held (only the last
``sliding_window`` keys on sliding layers).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import AttnscopeError
from capture_models import FAMILIES, SMALL, TEXT, bpe_tokenizer, tokenizer_for
from test_capture_restore import snapshot

GENERATING = ["gpt2", "llama", "gemma2", "gpt_oss"]
NEW = 6
TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
MESSAGES = [
    {"role": "system", "content": "You are a lazy dog."},
    {"role": "user", "content": "The quick brown fox?"},
]


@cache
def causal_lm(family: str) -> tuple[Any, Any]:
    """A tiny random causal language model of ``family`` (default sdpa attention) and tokenizer."""
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = tokenizer_for(family, None)
    overrides, _ = FAMILIES[family]
    config = AutoConfig.for_model(family, **{**SMALL, "vocab_size": len(tokenizer), **overrides})
    config.max_position_embeddings = 128  # room for chat prompts (GPT-2: n_positions)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).eval(), tokenizer


def model_state(model: Any) -> dict[str, Any]:
    return {**snapshot(model), "generation_config": model.generation_config.to_dict()}


def reference_steps(model: Any, ids: torch.Tensor, **kwargs: Any) -> Any:
    """generate() on an eager copy, keeping each step's attention (the KV-cache computation)."""
    eager = copy.deepcopy(model)
    eager.set_attn_implementation("eager")
    with torch.inference_mode():
        return eager.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=NEW,
            output_attentions=True,
            return_dict_in_generate=True,
            **kwargs,
        )


def step_delta(trace: Any, steps: Any) -> float:
    """Largest difference between the trace and each generation step's attention.

    Step 0 is the prompt (P x P); step s >= 1 is the row of token P + s - 1 over
    the keys the cache held, the last ones when a sliding window dropped the
    oldest, which the trace must then weigh 0.
    """
    prompt = trace.prompt_length
    worst = 0.0
    for step, layers in enumerate(steps):
        for position, layer in enumerate(trace.stream.layers):
            got = layers[layer][0].float().numpy()
            ours = trace.attention[position]
            if step == 0:
                worst = max(worst, float(np.abs(ours[:, :prompt, :prompt] - got).max()))
                continue
            row = ours[:, prompt + step - 1, : prompt + step]
            seen = got.shape[-1]
            assert not row[:, :-seen].any(), "a key outside the cache window has weight"
            worst = max(worst, float(np.abs(row[:, -seen:] - got[:, 0]).max()))
    return worst


@pytest.mark.parametrize("family", GENERATING)
def test_generated_rows_equal_generate_steps(family: str) -> None:
    model, tokenizer = causal_lm(family)
    before = model_state(model)
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, max_new_tokens=NEW)
    assert model_state(model) == before

    prompt_ids = tokenizer(TEXT, return_tensors="pt")["input_ids"]
    reference = reference_steps(model, prompt_ids)
    assert reference.sequences[0].tolist() == prompt_ids[0].tolist() + trace.generated_ids
    assert len(reference.attentions) == NEW  # the last token is never fed back in generate
    assert step_delta(trace, reference.attentions) <= 1e-5
    assert trace.check() <= 1e-5

    prompt = prompt_ids.shape[1]
    assert trace.prompt_length == prompt
    assert len(trace.generated_ids) == NEW
    assert trace.stream.q_len == prompt + NEW
    assert trace.stream.queries is not None
    assert trace.source.segments == (0,) * prompt + (1,) * NEW
    assert trace.generated_text == tokenizer.decode(trace.generated_ids, skip_special_tokens=True)
    assert trace.metadata["generation"]["settings"] == {"max_new_tokens": NEW}


@pytest.mark.parametrize("family", ["gpt2", "gemma2"])
def test_sampling_with_a_seed_gives_generates_ids(family: str) -> None:
    model, tokenizer = causal_lm(family)
    settings = {"do_sample": True, "temperature": 1.5, "top_k": 0}
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    trace = attnscope.capture(
        model, TEXT, tokenizer=tokenizer, max_new_tokens=NEW, seed=7, **settings
    )
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's RNG is untouched
    inputs = tokenizer(TEXT, return_tensors="pt")
    torch.manual_seed(7)
    expected = model.generate(**inputs, max_new_tokens=NEW, **settings)
    assert trace.generated_ids == expected[0, inputs["input_ids"].shape[1] :].tolist()
    greedy = attnscope.capture(model, TEXT, tokenizer=tokenizer, max_new_tokens=NEW)
    assert greedy.generated_ids != trace.generated_ids  # sampling did sample
    assert trace.metadata["generation"]["settings"] == {
        "max_new_tokens": NEW,
        **settings,
        "seed": 7,
    }
    steps = reference_steps(model, inputs["input_ids"])  # greedy: rows still match steps
    assert step_delta(greedy, steps.attentions) <= 1e-5


def test_layers_record_only_those_and_generate_keeps_no_attention(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, tokenizer = causal_lm("llama")
    reference = reference_steps(model, tokenizer(TEXT, return_tensors="pt")["input_ids"])
    seen: list[dict[str, Any]] = []
    original = model.generate

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "generate", spy)
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, max_new_tokens=NEW, layers=[1])
    assert len(seen) == 1
    assert not seen[0].get("output_attentions")
    assert trace.stream.layers == (1,)
    assert trace.attention.shape[0] == 1
    assert step_delta(trace, reference.attentions) <= 1e-5


@pytest.fixture
def chat_tokenizer() -> Any:
    tokenizer = copy.deepcopy(bpe_tokenizer())
    tokenizer.chat_template = TEMPLATE
    return tokenizer


def test_chat_messages_render_with_the_template(chat_tokenizer: Any) -> None:
    model, _ = causal_lm("gpt2")
    trace = attnscope.capture(model, MESSAGES, tokenizer=chat_tokenizer, max_new_tokens=NEW)
    expected = chat_tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True)
    expected = list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    prompt = trace.prompt_length
    assert prompt == len(expected)
    kinds = trace.source.kinds[:prompt]
    labels = trace.tokens[:prompt]
    content = "".join(lab for lab, kind in zip(labels, kinds, strict=True) if kind == "token")
    assert content.replace("␣", " ") == "You are a lazy dog.The quick brown fox?"
    template = "".join(lab for lab, kind in zip(labels, kinds, strict=True) if kind == "special")
    assert template.startswith("<|system|>")
    assert "user" in template
    assert template.endswith("<|assistant|>\\n")  # the generation prompt, newline shown escaped
    assert "</s>" in template
    steps = reference_steps(model, torch.tensor([expected]))
    assert step_delta(trace, steps.attentions) <= 1e-5


def test_chat_without_generating_has_no_generation_prompt(chat_tokenizer: Any) -> None:
    model, _ = causal_lm("gpt2")
    trace = attnscope.capture(model, MESSAGES, tokenizer=chat_tokenizer)
    assert trace.prompt_length is None
    assert trace.generated_text is None
    assert not "".join(trace.tokens).endswith("<|assistant|>\\n")


def test_generation_survives_save_and_load(tmp_path: Any) -> None:
    model, tokenizer = causal_lm("gpt2")
    trace = attnscope.capture(model, TEXT, tokenizer=tokenizer, max_new_tokens=3)
    loaded = attnscope.AttentionTrace.load(trace.save(tmp_path / "gen.npz"))
    assert loaded.generated_ids == trace.generated_ids
    assert loaded.generated_text == trace.generated_text
    assert loaded.prompt_length == trace.prompt_length


def test_show_head_view_generates() -> None:
    model, tokenizer = causal_lm("gpt2")
    widget = attnscope.show_head_view(
        model, TEXT, tokenizer=tokenizer, max_new_tokens=4, do_sample=False, layer=1
    )
    assert widget.trace.prompt_length is not None
    assert len(widget.trace.generated_ids or []) == 4
    assert widget.layer == 1
    with pytest.raises(TypeError, match="unknown or inapplicable option"):
        attnscope.show_head_view(model, TEXT, tokenizer=tokenizer, max_new_tokns=4)


def _base_model() -> Any:
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=300))


def _t5() -> Any:
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(T5Config(d_model=8, d_kv=4, d_ff=8, num_layers=1))


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"max_new_tokens": 0}, AttnscopeError, "at least 1"),
        ({"max_new_tokens": 2.0}, TypeError, "must be an int"),
        ({"do_sample": True}, TypeError, "only apply when capture generates"),
        ({"seed": 1}, TypeError, "only apply when capture generates"),
        ({"max_new_tokens": 2, "seed": "1"}, TypeError, "seed must be an int"),
        ({"max_new_tokens": 2, "output_attentions": True}, TypeError, "records attention"),
        ({"max_new_tokens": 2, "max_length": 9}, TypeError, "max_new_tokens="),
        ({"max_new_tokens": 2, "temprature": 0.5}, TypeError, r"\['temprature'\]"),
        ({"max_new_tokens": 2, "num_return_sequences": 2}, AttnscopeError, "one sequence"),
        ({"max_new_tokens": 2, "text_pair": "B"}, TypeError, "two segments"),
        ({"max_new_tokens": 120}, AttnscopeError, r"27 tokens \+ max_new_tokens=120"),
    ],
)
def test_bad_generation_options_raise_before_any_work(
    options: dict[str, Any], error: type[Exception], match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, tokenizer = causal_lm("gpt2")
    before = model_state(model)
    monkeypatch.setattr(model, "generate", lambda *a, **k: pytest.fail("generate ran"))
    with pytest.raises(error, match=match):
        attnscope.capture(model, TEXT, tokenizer=tokenizer, **options)
    assert model_state(model) == before


@pytest.mark.parametrize(
    ("model", "match"),
    [(_base_model, "no language-model head"), (_t5, "encoder–decoder")],
)
def test_models_that_cannot_generate_this_way_are_refused(model: Any, match: str) -> None:
    with pytest.raises(AttnscopeError, match=match):
        attnscope.capture(model(), TEXT, tokenizer=bpe_tokenizer(), max_new_tokens=2)


@pytest.mark.parametrize(
    ("messages", "template", "match"),
    [
        (MESSAGES, None, "no chat template"),
        ([{"role": "user"}], TEMPLATE, "expected a mapping with a string 'role'"),
        ([{"role": "user", "content": " "}], TEMPLATE, "non-empty string 'content'"),
    ],
)
def test_bad_chat_prompts_raise(messages: Any, template: str | None, match: str) -> None:
    model, _ = causal_lm("gpt2")
    tokenizer = copy.deepcopy(bpe_tokenizer())
    tokenizer.chat_template = template
    with pytest.raises(AttnscopeError, match=match):
        attnscope.capture(model, messages, tokenizer=tokenizer, max_new_tokens=2)
