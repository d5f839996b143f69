"""Token ids as input (issue 34): every entry point, every id form, bad ids refused first."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import attnscope
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from capture_models import TEXT, bpe_tokenizer, tiny_model
from test_capture_generate import causal_lm, model_state
from test_capture_restore import snapshot

SENTENCE = "The cat sat on the mat."


def same_attention(a: attnscope.AttentionTrace, b: attnscope.AttentionTrace) -> None:
    assert a.tokens_for("source").raw == b.tokens_for("source").raw
    assert a.tokens_for("source").kinds == b.tokens_for("source").kinds
    np.testing.assert_allclose(a.attention, b.attention, rtol=1e-5, atol=1e-7)


class ForwardCount:
    """Counts forward calls of a model (bad ids must be refused before any)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.calls = 0
        self.handle = model.register_forward_pre_hook(self._count)

    def _count(self, *_: Any) -> None:
        self.calls += 1


@pytest.fixture(scope="module")
def gpt() -> tuple[Any, Any]:
    tokenizer = bpe_tokenizer()
    return tiny_model("gpt2", len(tokenizer)), tokenizer


def id_forms(ids: list[int]) -> dict[str, Any]:
    return {
        "1-D tensor": torch.tensor(ids),
        "(1, N) tensor": torch.tensor([ids]),
        "int32 tensor": torch.tensor([ids], dtype=torch.int32),
        "numpy": np.array(ids),
        "numpy (1, N) uint16": np.array([ids], dtype=np.uint16),
        "list": list(ids),
        "nested list": [list(ids)],
        "dict": {"input_ids": [ids]},
        "numpy ints": [np.int64(i) for i in ids],
    }


def test_every_id_form_equals_the_text_capture_minilm(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    encoding = tok(SENTENCE, return_tensors="pt")
    ids = encoding["input_ids"][0].tolist()
    text = attnscope.capture(model, SENTENCE, tokenizer=tok)
    for name, form in {**id_forms(ids), "BatchEncoding": encoding}.items():
        trace = attnscope.capture(model, form, tokenizer=tok)
        same_attention(trace, text)
        assert trace.tokens[1:3] == ["the", "cat"], name  # labels from the tokenizer
        assert trace.check() < 1e-5


def test_pair_encoding_keeps_segments_minilm(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    pair = tok("The cat sat.", "It was tired.", return_tensors="pt")
    from_ids = attnscope.capture(model, pair, tokenizer=tok)
    from_text = attnscope.capture(model, "The cat sat.", text_pair="It was tired.", tokenizer=tok)
    same_attention(from_ids, from_text)
    segments = from_ids.tokens_for("source").segments
    assert segments == from_text.tokens_for("source").segments
    assert set(segments or ()) == {0, 1}


def test_padding_in_the_mask_is_trimmed_minilm(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    padded = tok(SENTENCE, padding="max_length", max_length=12, return_tensors="pt")
    assert int(padded["attention_mask"].sum()) < 12
    same_attention(
        attnscope.capture(model, padded, tokenizer=tok),
        attnscope.capture(model, SENTENCE, tokenizer=tok),
    )


def test_tokenizer_loaded_from_the_model_name(minilm_path: Any) -> None:
    trace = attnscope.capture(str(minilm_path), [101, 4937, 102])
    assert trace.tokens == ["[CLS]", "cat", "[SEP]"]
    assert trace.tokens_for("source").kinds == ("special", "token", "special")


def test_no_tokenizer_labels_are_the_ids(gpt: tuple[Any, Any]) -> None:
    model, tok = gpt
    ids = tok(TEXT)["input_ids"]
    trace = attnscope.capture(model, ids)
    assert trace.tokens == [f"#{i}" for i in ids]
    assert any("labelled by their ids" in note for note in trace.notes)
    named = attnscope.capture(model, ids, tokenizer=tok)
    np.testing.assert_allclose(named.attention, trace.attention, rtol=1e-5, atol=1e-7)
    assert named.tokens_for("source").raw == tuple(tok.convert_ids_to_tokens(ids))


def test_max_tokens_truncates_ids(gpt: tuple[Any, Any]) -> None:
    model, tok = gpt
    ids = tok(TEXT)["input_ids"]
    trace = attnscope.capture(model, ids, tokenizer=tok, max_tokens=4)
    assert len(trace.tokens) == 4
    assert any(f"truncated to 4 of {len(ids)}" in note for note in trace.notes)


def test_generation_from_ids_equals_generation_from_text() -> None:
    model, tok = causal_lm("llama")
    prompt = "The quick brown"
    ids = tok(prompt, return_tensors="pt")
    from_text = attnscope.capture(model, prompt, tokenizer=tok, max_new_tokens=4)
    from_ids = attnscope.capture(model, ids, tokenizer=tok, max_new_tokens=4)
    same_attention(from_ids, from_text)
    assert from_ids.generated_ids == from_text.generated_ids
    assert from_ids.prompt_length == from_text.prompt_length
    bare = attnscope.capture(model, ids["input_ids"], max_new_tokens=4)  # no tokenizer
    assert bare.generated_ids == from_text.generated_ids
    assert bare.tokens[-1] == f"#{bare.generated_ids[-1]}"


BAD: dict[str, tuple[Any, type[Exception], str]] = {
    "out of vocabulary": ([1, 2, 10_000], AttnscopeError, "token id 10000 at position 2"),
    "float tensor": (torch.tensor([[1.0, 2.0]]), AttnscopeTypeError, ".long()"),
    "float numpy": (np.array([1.0, 2.0]), AttnscopeTypeError, "astype('int64')"),
    "floats in a list": ([1, 2.5], AttnscopeTypeError, "float (2.5)"),
    "bools": ([True, False], AttnscopeTypeError, "bool"),
    "bool tensor": (torch.tensor([True]), AttnscopeTypeError, "integer token ids"),
    "negative": ([1, -100, 3], AttnscopeError, "attention_mask"),
    "empty tensor": (torch.zeros(1, 0, dtype=torch.long), AttnscopeError, "no token ids"),
    "empty list": ([[]], AttnscopeError, "no token ids"),
    "empty": ([], AttnscopeError, "empty list"),
    "strings": (["a", "b"], AttnscopeTypeError, "a string, chat messages or token ids"),
    "3-D": (torch.zeros(1, 1, 3, dtype=torch.long), AttnscopeError, "reshape(1, -1)"),
    "ragged": ([[1, 2], [3]], AttnscopeTypeError, "unequal length"),
    "batch": (torch.ones(2, 3, dtype=torch.long), AttnscopeError, "attnscope.scan(model, ids)"),
    "mask shape": (
        {"input_ids": [[1, 2]], "attention_mask": [[1]]},
        AttnscopeError,
        "one value per token",
    ),
    "mask hides all": (
        {"input_ids": [[1, 2]], "attention_mask": [[0, 0]]},
        AttnscopeError,
        "hides every token",
    ),
    "mask values": (
        {"input_ids": [[1, 2]], "attention_mask": [[1, 2]]},
        AttnscopeError,
        "0 (padding) and 1",
    ),
    "other keys": (
        {"input_ids": [[1, 2]], "pixel_values": [[0.5]]},
        AttnscopeTypeError,
        "['pixel_values']",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_ids_refused_before_any_work(gpt: tuple[Any, Any], case: str) -> None:
    model, tok = gpt
    value, error, fix = BAD[case]
    before = snapshot(model)
    counter = ForwardCount(model)
    try:
        with pytest.raises(error) as caught:
            attnscope.capture(model, value, tokenizer=tok)
    finally:
        counter.handle.remove()
    assert fix in str(caught.value)
    assert counter.calls == 0
    assert snapshot(model) == before


def test_ids_refuse_text_pair_and_images(gpt: tuple[Any, Any]) -> None:
    model, tok = gpt
    with pytest.raises(AttnscopeTypeError, match="token_type_ids"):
        attnscope.capture(model, [1, 2], tokenizer=tok, text_pair="B")


def test_show_head_view_with_ids(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    encoding = tok(SENTENCE, return_tensors="pt")
    widget = attnscope.show_head_view(model, encoding["input_ids"], tokenizer=tok, display=False)
    same_attention(widget.trace, attnscope.capture(model, SENTENCE, tokenizer=tok))
    widget.close()
    with pytest.raises(AttnscopeError, match="batch of 2"):
        attnscope.show_model_view(model, torch.ones(2, 3, dtype=torch.long), display=False)


def test_compare_two_id_inputs(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    a = tok("The cat sat.")["input_ids"]
    b = tok("The dog sat.")["input_ids"]
    widget = attnscope.show_head_view(model, a, compare=b, tokenizer=tok, display=False)
    comparison = widget.comparison
    assert comparison is not None
    assert comparison.labels()[2] == "cat | dog"
    expected = attnscope.compare(
        attnscope.capture(model, "The cat sat.", tokenizer=tok),
        attnscope.capture(model, "The dog sat.", tokenizer=tok),
    )
    np.testing.assert_allclose(comparison.difference(), expected.difference(), atol=1e-6)
    widget.close()


def test_scan_takes_ids_and_batches(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    texts = ["The cat sat.", "A dog ran home today."]
    by_text = attnscope.scan(model, texts, tokenizer=tok, statistics=["prev", "sink"])
    batch = tok(texts, padding=True, return_tensors="pt")
    by_batch = attnscope.scan(model, batch, tokenizer=tok, statistics=["prev", "sink"])
    by_list = attnscope.scan(
        model, [tok(t)["input_ids"] for t in texts], tokenizer=tok, statistics=["prev", "sink"]
    )
    for frame in (by_batch, by_list):
        assert frame.attrs["tokens"] == by_text.attrs["tokens"]
        np.testing.assert_allclose(
            frame[["prev", "sink"]].to_numpy(), by_text[["prev", "sink"]].to_numpy(), atol=1e-6
        )


def test_scan_refuses_bad_ids_before_the_first_capture(gpt: tuple[Any, Any]) -> None:
    model, tok = gpt
    counter = ForwardCount(model)
    try:
        with pytest.raises(AttnscopeError, match=r"inputs\[1\] holds token id 999"):
            attnscope.scan(model, [[1, 2, 3], [1, 999]], tokenizer=tok)
        with pytest.raises(AttnscopeError, match=r"pass inputs=\[ids\]"):
            attnscope.scan(model, [1, 2, 3], tokenizer=tok)
    finally:
        counter.handle.remove()
    assert counter.calls == 0


def test_generation_from_ids_leaves_the_model_as_it_was() -> None:
    model, _ = causal_lm("gpt2")
    before = model_state(model)
    attnscope.capture(model, [1, 5, 7], max_new_tokens=2)
    assert model_state(model) == before
