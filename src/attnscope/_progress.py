"""Progress bars for work that can take seconds: tqdm's notebook-aware bar, gone when done.

A bar shows only once the work has run :data:`DELAY` seconds (a quick page
write prints nothing) and is cleared when it ends (``leave=False``), so a
notebook cell keeps only its real output.
"""

from __future__ import annotations

from typing import IO, Any

DELAY = 2.0
"""Seconds of work before a bar appears."""

FILE: IO[str] | None = None
"""Where bars are written (None: tqdm's default, stderr or the notebook widget)."""


def progress(total: int, description: str, unit: str = "it") -> Any:
    """A tqdm bar over ``total`` steps that appears after :data:`DELAY` s and leaves nothing.

    In a notebook kernel it is tqdm's widget bar, shown through a display handle
    that is emptied when the bar closes, so neither the live notebook nor a saved
    copy keeps a bar (tqdm's own notebook bar leaves its output behind, red when
    the loop stopped early). Elsewhere it is tqdm's text bar on stderr.

    Examples
    --------
    >>> with progress(3, "chunks") as bar:
    ...     for _ in range(3):
    ...         _ = bar.update(1)
    >>> bar.n
    3
    """
    options: dict[str, Any] = {
        "total": total,
        "desc": description,
        "unit": unit,
        "delay": DELAY,
        "leave": False,
        "file": FILE,
        "dynamic_ncols": True,
    }
    if FILE is None and _in_notebook_kernel():
        return _cell_bar()(**options)
    from tqdm.std import tqdm  # type: ignore[import-untyped]  # no stubs in the venv

    return tqdm(**options)


def _in_notebook_kernel() -> bool:
    """True inside a Jupyter kernel with ipywidgets (where tqdm would draw a widget)."""
    import sys

    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    if shell is None or "IPKernelApp" not in getattr(shell, "config", {}):
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _cell_bar() -> Any:
    """The notebook widget bar of tqdm, displayed through a handle that its close empties."""
    from IPython.display import display as show_output
    from tqdm.notebook import tqdm_notebook  # type: ignore[import-untyped]
    from tqdm.std import tqdm as text_bar

    class CellBar(tqdm_notebook):  # type: ignore[misc]
        displayed: bool

        def __init__(self, **options: Any) -> None:
            self.handle: Any = None
            super().__init__(display=False, **options)

        def display(self, *args: Any, check_delay: bool = True, **kwargs: Any) -> Any:
            # tqdm calls this with check_delay once the delay has passed: show it then.
            if check_delay and not self.displayed and not self.disable:
                self.handle = show_output(self.container, display_id=True)  # type: ignore[no-untyped-call]
                self.displayed = True
            return super().display(*args, check_delay=False, **kwargs)

        def close(self) -> None:
            if self.disable:
                return
            text_bar.close(self)
            if self.handle is not None:
                self.handle.update({"text/plain": ""}, raw=True)
            self.container.close()

    return CellBar
