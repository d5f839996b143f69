"""Run a notebook in a real kernel (nbclient) and fail on any error output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CELL_TIMEOUT_S = 300


def execute(notebook: Any, folder: Path) -> list[Any]:
    """Run ``notebook`` in place in a fresh ``python3`` kernel; return its code cells.

    The kernel is this interpreter (ipykernel's native kernel); HF_HUB_OFFLINE=1
    is inherited from tests/conftest.py. Files the notebook writes land in ``folder``.
    """
    from nbclient import NotebookClient

    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    errors = [
        f"{o.ename}: {o.evalue}" for c in cells for o in c.outputs if o.output_type == "error"
    ]
    assert errors == []
    return cells
