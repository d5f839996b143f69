"""Progress bars for work that can take seconds: tqdm's notebook-aware bar, gone when done.

A bar shows only once the work has run :data:`DELAY` seconds (a quick page
write prints nothing) and is cleared when it ends (``leave=False``), so a
notebook cell keeps only its real output.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import IO, Any

DELAY = 2.0
"""Seconds of work before a bar appears."""

FILE: IO[str] | None = None
"""Where bars are written (None: tqdm's default, stderr or the notebook widget)."""

QUIET: ContextVar[bool] = ContextVar("attnscope_quiet_progress", default=False)
"""True where work reports its progress itself (a live generation's status line): no bars."""


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
    if QUIET.get():
        return _text_bar()(**options, disable=True)
    if FILE is None and _in_notebook_kernel():
        return _cell_bar()(**options)
    return _text_bar()(**options)


def _delayed(bar: type[Any]) -> type[Any]:
    """``bar`` that draws nothing until :data:`DELAY` s after it was made.

    tqdm's own ``delay`` counts from the last ``reset()``, and ``reset()``
    draws at once: a capture's bar (reset for each pass) appeared at the
    start of every capture, however short.
    """

    class Delayed(bar):  # type: ignore[misc,valid-type]
        def __init__(self, **options: Any) -> None:
            self.born = time.monotonic()
            self.wait = float(options.get("delay") or 0.0)
            self.drawn = False
            super().__init__(**options)

        def due(self) -> bool:
            return time.monotonic() - self.born >= self.wait

        def refresh(self, *args: Any, **kwargs: Any) -> Any:
            if not self.due():
                return False
            self.drawn = True
            return super().refresh(*args, **kwargs)

        def close(self) -> None:
            if self.drawn:  # tqdm clears only a bar older than its delay since the last reset
                last: float = getattr(self, "last_print_t")  # noqa: B009  (untyped in tqdm)
                self.last_print_t = max(last, self.start_t + self.delay)
            super().close()

    return Delayed


def _text_bar() -> type[Any]:
    from tqdm.std import tqdm  # type: ignore[import-untyped]  # no stubs in the venv

    return _delayed(tqdm)


EMPTIED = {"text/html": ""}
"""What a closed notebook bar's output is left holding: an empty HTML output, drawn as nothing."""

_emptied: list[tuple[Any, str | None]] = []
"""Display handles of closed notebook bars, with the request (cell run) that showed them."""


def take_emptied_output() -> Any | None:
    """The display handle of a bar the running cell showed and closed, or None; taken once.

    A closed bar's output stays in the cell, empty (Jupyter has no way to
    remove one output): a widget shown next by the same cell run updates
    that output instead of adding its own, so a capture followed by its
    widget leaves one output, the widget.

    Examples
    --------
    >>> take_emptied_output() is None  # no kernel, no bar
    True
    """
    running = _running_request()
    found = None
    while _emptied:
        handle, request = _emptied.pop(0)
        if request is not None and request == running and found is None:
            found = handle
    return found


def _running_request() -> str | None:
    """The id of the kernel request being handled (one per cell run), or None."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    request = ((kernel.get_parent() or {}).get("header") or {}).get("msg_id")
    return request if isinstance(request, str) else None


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


def _cell_bar() -> type[Any]:
    """The notebook widget bar of tqdm, displayed through a handle that its close empties."""
    from weakref import proxy

    from IPython.display import display as show_output
    from tqdm.notebook import tqdm_notebook  # type: ignore[import-untyped]
    from tqdm.std import tqdm as text_bar

    class CellBar(_delayed(tqdm_notebook)):  # type: ignore[misc]
        displayed: bool

        def __init__(self, **options: Any) -> None:
            self.handle: Any = None
            super().__init__(display=False, **options)

        @staticmethod
        def status_printer(_: Any, total: Any = None, desc: Any = None, ncols: Any = None) -> Any:
            # No widgets until the bar shows: quick work (most captures and displays) opens
            # no comm, so the front end makes and drops no models for a bar never seen.
            return _unshown_box()

        def display(self, *args: Any, check_delay: bool = True, **kwargs: Any) -> Any:
            # Shown from the first refresh past the delay, never from close or reset.
            if check_delay and self.drawn and not self.displayed and not self.disable:
                scale = 1 if self.unit_scale is True else self.unit_scale or 1
                total = self.total * scale if self.total else self.total
                self.container = tqdm_notebook.status_printer(None, total, self.desc, self.ncols)
                self.container.pbar = proxy(self)
                self.handle = show_output(self.container, display_id=True)  # type: ignore[no-untyped-call]
                self.displayed = True
            if not self.displayed:
                return None  # nothing on screen to update
            return super().display(*args, check_delay=False, **kwargs)

        def close(self) -> None:
            if self.disable:
                return
            text_bar.close(self)
            if self.handle is not None:
                # An empty HTML output: the notebook draws it 0 px high (an empty text/plain
                # would keep a blank row; no data at all makes nbconvert warn that it "is
                # not able to be represented"), and a widget this cell shows next takes its
                # place (take_emptied_output).
                self.handle.update(EMPTIED, raw=True)
                _emptied.append((self.handle, _running_request()))
            if self.displayed:
                close_widget_tree(self.container)

    return CellBar


def _unshown_box() -> Any:
    """What tqdm's notebook bar sets before it shows (reset, colour): plain objects, no widgets."""
    from types import SimpleNamespace as Part

    bar = Part(value=0, max=0, bar_style="", style=Part(bar_color=None), layout=Part(width=None))
    return Part(children=(Part(value=""), bar, Part(value="")))


def close_widget_tree(widget: Any) -> None:
    """Close an ipywidget and every widget it holds: children, layouts, styles.

    ``Widget.close()`` closes one widget: a tqdm bar's box left its three
    children and their eleven layouts and styles open, each a comm the kernel
    keeps for the rest of the session.

    Examples
    --------
    >>> import ipywidgets
    >>> box = ipywidgets.HBox([ipywidgets.HTML("a"), ipywidgets.FloatProgress()])
    >>> parts = [box, box.layout, *box.children, *(c.layout for c in box.children)]
    >>> close_widget_tree(box)
    >>> [part.comm for part in parts if part.comm is not None]
    []
    """
    from ipywidgets import Widget

    seen: set[int] = set()
    waiting = [widget]
    while waiting:
        part = waiting.pop()
        if id(part) in seen:
            continue
        seen.add(id(part))
        for name in part.keys:
            value = getattr(part, name, None)
            values = value if isinstance(value, (list, tuple)) else (value,)
            waiting.extend(v for v in values if isinstance(v, Widget))
        part.close()
