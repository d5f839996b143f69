"""Token ids in the entry points tests/test_token_ids.py does not reach (issue 34): the
neuron view, live generation (bad ids refused before its thread starts), open_strongest
and head_detector from a model each take ids (a tensor, a list, a BatchEncoding) and give
what the same text gives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
from attnscope.errors import AttnscopeError
from test_capture_generate import causal_lm

SENTENCE = "The cat sat on the mat."
TEXTS = ["The cat sat.", "A dog ran home today.", "The cat sat on the cat."]


def test_show_neuron_view_with_ids(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    encoding = tok(SENTENCE, return_tensors="pt")
    options = {"tokenizer": tok, "layer": 2, "head": 1, "query": 3, "display": False}
    from_ids = attnscope.show_neuron_view(model, encoding, **options)
    from_text = attnscope.show_neuron_view(model, SENTENCE, **options)
    # Raw pieces agree; labels from text keep its casing (offsets), from ids the vocabulary's.
    assert from_ids.trace.source.raw == from_text.trace.source.raw
    np.testing.assert_allclose(from_ids.trace.attention, from_text.trace.attention, atol=1e-6)
    assert from_ids.trace.queries is not None  # the q and k the view draws
    np.testing.assert_allclose(from_ids.trace.queries, from_text.trace.queries, atol=1e-5)
    assert (from_ids.view, from_ids.layer, from_ids.query) == ("neuron", 2, 3)
    from_ids.close()
    from_text.close()


def test_show_generation_from_ids_equals_the_text_prompt() -> None:
    model, tok = causal_lm("llama")
    prompt = "The quick brown"
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    from_text = attnscope.show_generation(
        model, prompt, 3, tokenizer=tok, display=False, background=False
    ).wait()
    for form in (ids, ids[0].tolist(), tok(prompt, return_tensors="pt")):
        live = attnscope.show_generation(
            model, form, 3, tokenizer=tok, display=False, background=False
        )
        final = live.wait()
        assert final.tokens == from_text.tokens
        assert final.generated_ids == from_text.generated_ids
        np.testing.assert_allclose(final.attention, from_text.attention, rtol=1e-5, atol=1e-7)
    with pytest.raises(AttnscopeError, match="prompt holds token id 99999"):
        attnscope.show_generation(model, [1, 99999], 2, tokenizer=tok, display=False)
    with pytest.raises(AttnscopeError, match="batch of 2"):
        attnscope.show_generation(model, [[1, 2], [3, 4]], 2, tokenizer=tok, display=False)


def test_open_strongest_with_id_inputs(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    inputs = [tok(t)["input_ids"] for t in TEXTS]
    scanned = attnscope.scan(model, inputs, tokenizer=tok, statistics=["prev"])
    opened = attnscope.open_strongest(
        scanned, inputs, model, tokenizer=tok, layer=1, head=3, display=False
    )
    best = opened.strongest_input()
    expected = attnscope.capture(model, TEXTS[best], tokenizer=tok)
    assert opened.trace.source.raw == expected.source.raw
    opened.close()


def test_head_detector_from_a_model_takes_ids_and_encodings(minilm: tuple[Any, Any]) -> None:
    model, tok = minilm
    text = "the cat sat on the mat, the cat sat on the hat"
    by_text = attnscope.head_detector(model, "induction", text, tokenizer=tok)
    encoding = tok(text, return_tensors="pt")
    for form in (encoding, encoding["input_ids"], encoding["input_ids"][0].tolist()):
        got = attnscope.head_detector(model, "induction", form, tokenizer=tok)
        np.testing.assert_allclose(got["score"], by_text["score"], atol=1e-6)
