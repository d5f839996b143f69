"""Drive a JupyterLab 4 or Notebook 7 page through ``window.jupyterapp``.

Both front ends are Lumino applications with the same command registry and
notebook widgets, exposed to the page because the server runs with
``expose_app_in_browser``. Commands are started from the page, their
promise's result is parked on ``window``, and Python waits on that with a
bounded ``wait_for_function``: no sleeps, no timing assumptions.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import nbformat
from jupyter_server_process import JupyterServer

KERNEL_START_MS = 60_000
CELL_MS = 120_000

_CURRENT_NOTEBOOK_READY = """() => {
    const app = window.jupyterapp;
    const panel = app && app.shell.currentWidget;
    if (!panel || !panel.content || !panel.sessionContext || !panel.context) return false;
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    return panel.context.isReady && !!kernel && kernel.status === "idle"
        && kernel.connectionStatus === "connected" && panel.content.widgets.length > 0;
}"""

_START_COMMAND = """([slot, id, args]) => {
    window.__attnscopeTest = window.__attnscopeTest || {};
    const box = window.__attnscopeTest;
    box[slot] = {state: "running"};
    window.jupyterapp.commands.execute(id, args).then(
        (value) => { box[slot] = {state: "done", value: value === undefined ? null : value}; },
        (error) => { box[slot] = {state: "error", value: String(error)}; },
    );
}"""

_INSERT_CELL = """async (code) => {
    const app = window.jupyterapp;
    const notebook = app.shell.currentWidget.content;
    notebook.activeCellIndex = notebook.widgets.length - 1;
    await app.commands.execute("notebook:insert-cell-below");
    notebook.activeCell.model.sharedModel.setSource(code);
    return notebook.activeCellIndex;
}"""

_OUTPUT_TEXT = """(index) => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
    const join = (t) => Array.isArray(t) ? t.join("") : (t || "");
    return cell.model.outputs.toJSON().map((o) => {
        if (o.output_type === "stream") return join(o.text);
        if (o.output_type === "error") return `${o.ename}: ${o.evalue}`;
        return o.data && o.data["text/plain"] ? join(o.data["text/plain"]) : "";
    }).join("");
}"""


def write_notebook(path: Path, sources: list[str]) -> Path:
    """Write a notebook of code cells (Python 3 kernel) to ``path``."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(path))
    return path


class JupyterPage:
    """A notebook open in JupyterLab (``app="lab"``) or Notebook 7 (``app="notebook"``)."""

    _slots = itertools.count()

    def __init__(self, page: Any, server: JupyterServer, *, app: str = "lab") -> None:
        if app not in {"lab", "notebook"}:
            raise ValueError(f"app must be 'lab' or 'notebook', not {app!r}")
        self.page = page
        self.server = server
        self.app = app

    def open(self, name: str, *, timeout_ms: float = KERNEL_START_MS) -> None:
        """Open ``name`` (relative to the server's root) and wait for an idle kernel."""
        if self.app == "lab":
            url = f"{self.server.url}/lab/tree/{name}?reset"
        else:
            url = f"{self.server.url}/notebooks/{name}"
        self.page.goto(url)
        self.page.wait_for_function(_CURRENT_NOTEBOOK_READY, timeout=timeout_ms)

    def wait_kernel_idle(self, *, timeout_ms: float = CELL_MS) -> None:
        """Wait until the notebook's kernel is connected and idle."""
        self.page.wait_for_function(_CURRENT_NOTEBOOK_READY, timeout=timeout_ms)

    def command(
        self, command: str, args: dict[str, Any] | None = None, *, timeout_ms: float = CELL_MS
    ) -> Any:
        """Run a JupyterLab command and wait (bounded) for its promise; return its value."""
        slot = f"c{next(self._slots)}"
        self.page.evaluate(_START_COMMAND, [slot, command, args or {}])
        self.page.wait_for_function(
            "(slot) => window.__attnscopeTest[slot].state !== 'running'",
            arg=slot,
            timeout=timeout_ms,
        )
        result = self.page.evaluate("(slot) => window.__attnscopeTest[slot]", slot)
        if result["state"] == "error":
            raise RuntimeError(f"{command} failed in the page: {result['value']}")
        return result["value"]

    def run_all(self, *, timeout_ms: float = CELL_MS) -> None:
        """Run every cell; raise with the failing cell's error when one fails."""
        ok = self.command("notebook:run-all-cells", timeout_ms=timeout_ms)
        self.wait_kernel_idle(timeout_ms=timeout_ms)
        if ok is False:
            raise AssertionError(f"a cell failed:\n{self.errors()}")

    def run_code(self, code: str, *, timeout_ms: float = CELL_MS) -> int:
        """Append a code cell with ``code``, run it, wait for it; return the cell's index."""
        index = int(self.page.evaluate(_INSERT_CELL, code))
        ok = self.command("notebook:run-cell", timeout_ms=timeout_ms)
        self.wait_kernel_idle(timeout_ms=timeout_ms)
        if ok is False:
            raise AssertionError(f"cell {index} failed: {self.output_text(index)}")
        return index

    def output_text(self, index: int) -> str:
        """The text of cell ``index``'s outputs (streams, text/plain, errors)."""
        return str(self.page.evaluate(_OUTPUT_TEXT, index))

    def errors(self) -> str:
        """Every error output in the notebook, one per line."""
        return str(
            self.page.evaluate(
                """() => window.jupyterapp.shell.currentWidget.content.widgets
                    .flatMap((c) => c.model.outputs ? c.model.outputs.toJSON() : [])
                    .filter((o) => o.output_type === "error")
                    .map((o) => `${o.ename}: ${o.evalue}`).join("\\n")"""
            )
        )

    def cell_output(self, index: int) -> Any:
        """Locator of cell ``index``'s output area (widgets render inside it)."""
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")

    def set_theme(self, theme: str, *, timeout_ms: float = 30_000) -> None:
        """Switch the application theme (e.g. ``"JupyterLab Dark"``) and wait until applied."""
        self.command("apputils:change-theme", {"theme": theme}, timeout_ms=timeout_ms)
        # The theme's splash removes itself on a 200 ms timer that does not check it is still
        # there: a second switch inside that time makes JupyterLab throw ("removeChild ... not
        # a child"). Done means applied and the splash gone.
        self.page.wait_for_function(
            "(theme) => document.body.dataset.jpThemeName === theme"
            " && !document.getElementById('jupyterlab-splash')",
            arg=theme,
            timeout=timeout_ms,
        )


def pixels(canvas: Any) -> str:
    """The canvas's drawing as a data URL (to tell when it changes)."""
    return str(canvas.evaluate("(c) => c.toDataURL()"))


def wait_for_new_pixels(
    host: JupyterPage, canvas: Any, before: str, timeout_ms: float = 30_000
) -> str:
    """Wait until the canvas shows something other than ``before``; return it."""
    host.page.wait_for_function(
        "([c, before]) => c.toDataURL() !== before",
        arg=[canvas.element_handle(), before],
        timeout=timeout_ms,
    )
    return pixels(canvas)


def kernel(host: JupyterPage, expression: str) -> str:
    """What ``print(expression)`` prints in the notebook's kernel."""
    return host.output_text(host.run_code(f"print({expression})")).strip()


def wait_for_kernel(
    host: JupyterPage, expression: str, expected: str, timeout_s: float = 30
) -> None:
    """Ask the kernel until ``print(expression)`` prints ``expected`` (a trait synced later).

    A change made in the browser reaches the kernel's traits over the comm a moment later;
    each question is one round trip, so this waits for the sync, not for a fixed time.
    """
    deadline = time.monotonic() + timeout_s
    seen = kernel(host, expression)
    while seen != expected and time.monotonic() < deadline:
        seen = kernel(host, expression)
    assert seen == expected, f"{expression}: {seen!r}, expected {expected!r}"
