"""Run the examples in the capture package's docstrings (same check as test_doctests)."""

from __future__ import annotations

import pytest

from test_doctests import test_docstring_examples as run_examples

CAPTURE_MODULES = (
    "attnscope.adapters.capture",
    "attnscope.adapters.checks",
    "attnscope.adapters.generic",
    "attnscope.adapters.loading",
    "attnscope.adapters.recorder",
    "attnscope.adapters.restore",
    "attnscope.adapters.streams",
    "attnscope.adapters.vision",
    "attnscope.adapters.attention_only",
    "attnscope.adapters.families.taps",
    "attnscope.adapters.families.bloom",
    "attnscope.adapters.families.gpt_neo",
    "attnscope.adapters.seq2seq",
    "attnscope.adapters.tokenize",
)


@pytest.mark.parametrize("name", CAPTURE_MODULES)
def test_capture_docstring_examples(name: str) -> None:
    run_examples(name)
