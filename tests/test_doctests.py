"""Run the examples in the docstrings, so that what the docs show is what the code does."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import attnscope

# Every module of the package, found by walking it: a new module's examples run
# without anyone listing it.
MODULES = sorted(
    info.name for info in pkgutil.walk_packages(attnscope.__path__, prefix="attnscope.")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) in {name} failed; see the output above"


def test_examples_are_found() -> None:
    # Guards the walk itself: most modules carry examples.
    attempted = 0
    for name in MODULES:
        finder = doctest.DocTestFinder()
        attempted += sum(len(t.examples) for t in finder.find(importlib.import_module(name)))
    assert len(MODULES) > 40
    assert attempted > 100
