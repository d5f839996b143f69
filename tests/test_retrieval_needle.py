"""``needle_in_a_haystack``: the protocol of Wu et al. 2024 run on a tiny random Llama.

Each run's scores must be those of :func:`retrieval_scores` on an independent
capture of the same prompt, the needle's token span must hold the needle, and
the head table must be the mean over runs (the paper averages its runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import attnscope
from attnscope.analysis.needle import needle_in_a_haystack
from attnscope.errors import AttnscopeError
from capture_models import llama_over
from test_scan import counted  # noqa: F401  (the fixture that counts captures)

HAYSTACK = "Grass is green. The sky is blue. Water is wet and the sun is warm."
NEEDLE = "The secret number is 42."
QUESTION = "What is the secret number?"


@pytest.fixture(scope="module")
def llama(minilm: tuple[Any, Any]) -> tuple[Any, Any]:
    """A tiny random Llama (grouped-query attention) over MiniLM's real WordPiece tokenizer."""
    _, tokenizer = minilm
    return llama_over(tokenizer, 1024), tokenizer


def test_runs_equal_retrieval_scores_of_each_prompt(llama: tuple[Any, Any]) -> None:
    model, tokenizer = llama
    found = needle_in_a_haystack(
        model,
        tokenizer=tokenizer,
        haystack=HAYSTACK,
        needle=NEEDLE,
        question=QUESTION,
        lengths=[64, 300],
        depths=[0.0, 0.5, 1.0],
        max_new_tokens=6,
    )
    assert len(found.prompts) == 6
    assert len(found.runs) == 6 * 2 * 4
    assert list(found.runs.columns[:4]) == ["length", "depth", "layer", "head"]
    for row in found.prompts.itertuples():
        assert row.tokens == row.length  # the haystack is cut to the length asked
        from attnscope.analysis.needle import build_prompt

        prompt = build_prompt(
            tokenizer,
            haystack=HAYSTACK,
            needle=NEEDLE,
            question=QUESTION,
            length=row.length,
            depth=row.depth,
        )
        ids = tokenizer(prompt.text)["input_ids"]
        assert tokenizer.decode(ids[row.needle_first : row.needle_stop]) == NEEDLE.lower()
        trace = attnscope.capture(model, prompt.text, tokenizer=tokenizer, max_new_tokens=6)
        assert trace.generated_text == row.generated_text
        expected = attnscope.retrieval_scores(trace, needle=(row.needle_first, row.needle_stop))
        run = found.runs[(found.runs["length"] == row.length) & (found.runs["depth"] == row.depth)]
        np.testing.assert_array_equal(run["retrieval"].to_numpy(), expected["retrieval"])
        np.testing.assert_array_equal(run["copy_steps"].to_numpy(), expected["copy_steps"])
    # The needle moves with the depth: first at 0, last at 1.
    long = found.prompts[found.prompts["length"] == 300]
    assert long["needle_first"].tolist() == sorted(long["needle_first"])
    assert long["needle_first"].iloc[0] == 1  # right after [CLS]
    means = found.runs.groupby(["layer", "head"])["retrieval"].mean()
    heads = found.heads.set_index(["layer", "head"])
    np.testing.assert_allclose(heads["retrieval"].sort_index(), means.sort_index())
    assert found.heads["retrieval"].is_monotonic_decreasing
    assert (found.heads["runs"] == 6).all()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"lengths": []}, r"lengths=\[\] must be a non-empty list"),
        ({"lengths": [64, 0]}, r"must be positive token counts"),
        ({"depths": [0.5, 1.5]}, r"depths=\[0.5, 1.5\] must be fractions"),
        ({"template": "{context}"}, r"must be a string with the fields \{context\} and"),
        ({"needle": " "}, r"needle=' ' must be a non-empty string"),
        ({"lengths": [64, 1020]}, r"lengths holds 1020: with 10 new tokens that is 1030 positions"),
        ({"lengths": [8]}, r"length=8 leaves no room for a haystack"),
        ({"text_pair": "x"}, r"text_pair= is not an option here"),
        ({"temprature": 1.0}, r"unknown option\(s\) \['temprature'\]"),
    ],
)
def test_bad_protocol_is_refused_before_any_capture(
    llama: tuple[Any, Any],
    counted: list[Any],  # noqa: F811  (the fixture imported above)
    options: dict[str, Any],
    match: str,
) -> None:
    model, tokenizer = llama
    arguments: dict[str, Any] = {
        "haystack": HAYSTACK,
        "needle": NEEDLE,
        "question": QUESTION,
        "lengths": [64],
        "depths": [0.5],
        **options,
    }
    with pytest.raises(AttnscopeError, match=match):
        needle_in_a_haystack(model, tokenizer=tokenizer, **arguments)
    assert counted == []


def test_a_model_that_cannot_generate_is_refused_first(
    minilm: tuple[Any, Any],
    counted: list[Any],  # noqa: F811  (the fixture imported above)
) -> None:
    model, tokenizer = minilm
    with pytest.raises(AttnscopeError, match="BertModel cannot generate"):
        needle_in_a_haystack(
            model,
            tokenizer=tokenizer,
            haystack=HAYSTACK,
            needle=NEEDLE,
            question=QUESTION,
            lengths=[64],
        )
    assert counted == []
