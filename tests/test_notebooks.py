"""The example notebooks run top to bottom in a real kernel, and match their generator."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

from executed_notebooks import executed

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_notebooks", EXAMPLES / "build_notebooks.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NOTEBOOKS = sorted(generator().NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_what_the_generator_writes(name: str) -> None:
    built = generator().build(name, generator().NOTEBOOKS[name])
    saved = nbformat.read(EXAMPLES / name, as_version=4)
    assert [c.source for c in saved.cells] == [c.source for c in built.cells], (
        f"examples/{name} is stale: run `python examples/build_notebooks.py`"
    )


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_top_to_bottom(name: str) -> None:
    # Run once this session, as make docs runs it (an error output fails the run); the
    # docs-site test converts the same run.
    notebook = executed(name)
    widgets = [
        o
        for cell in notebook.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert widgets, f"{name} displayed no widget"
