"""Run the examples in the docstrings, so that what the docs show is what the code does."""

from __future__ import annotations

import doctest
import importlib

import pytest

# Add a module here when its docstrings carry examples.
DOCTESTED_MODULES = (
    "attnscope.trace",
    "attnscope.sequence",
    "attnscope.stream",
    "attnscope.trace_file",
    "attnscope.recompute",
    "attnscope.tokens",
    "attnscope._tensors",
    "attnscope._mha_masks",
    "attnscope.mha",
    "attnscope.mha_trace",
    "attnscope.__main__",
    "attnscope.encode",
    "attnscope.chunks",
    "attnscope.widget",
    "attnscope.show",
    "attnscope.bertviz_compat",
    "attnscope.export",
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


@pytest.mark.parametrize("name", DOCTESTED_MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0, f"{name} has no examples to run"
    assert result.failed == 0, f"{result.failed} example(s) in {name} failed; see the output above"
