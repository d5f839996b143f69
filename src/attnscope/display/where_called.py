"""Show a widget where the helper is called, once per cell, as bertviz's helpers do.

``show_head_view(...)`` displays its widget at the call (a call inside a loop,
a function, or followed by more lines shows it too) and returns it, so the
selection can be read back. When that returned widget is also the cell's last
expression, IPython would display it a second time; :func:`shown_this_cell`
lets the widget's ``_ipython_display_`` skip that. The record is cleared when
the next cell starts, so ``w`` alone in a later cell shows the widget again.

Outside a Jupyter kernel (a script, a doctest, marimo) nothing is displayed:
there is no output area to show it in.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

_shown: weakref.WeakSet[Any] = weakref.WeakSet()
"""Widgets displayed by :func:`display_where_called` during the current cell."""


def kernel_shell() -> Any:
    """The running IPython kernel's shell, or None outside a kernel (scripts, doctests).

    Examples
    --------
    >>> kernel_shell() is None  # doctests run in no kernel
    True
    """
    if "IPython" not in sys.modules:  # never import IPython just to learn it is absent
        return None
    from IPython import get_ipython

    shell = get_ipython()  # type: ignore[no-untyped-call]
    # A terminal IPython has no kernel and no output area: it would print the repr.
    return shell if getattr(shell, "kernel", None) is not None else None


def display_where_called(widget: Any) -> bool:
    """Display ``widget`` now, in the running cell's output; return whether it was shown.

    Does nothing (and returns False) outside a kernel.

    Examples
    --------
    >>> display_where_called(object())
    False
    """
    shell = kernel_shell()
    if shell is None:
        return False
    _forget_at_next_cell(shell)
    from IPython.display import display

    display(widget)  # type: ignore[no-untyped-call]
    _shown.add(widget)
    return True


def shown_this_cell(widget: Any) -> bool:
    """Whether :func:`display_where_called` already showed ``widget`` in the running cell.

    Examples
    --------
    >>> shown_this_cell(object())
    False
    """
    try:
        return widget in _shown
    except TypeError:  # unhashable: never recorded
        return False


def first_note_of_cell(shell: Any) -> bool:
    """Whether the running cell has not shown an offline note yet; records that it now has.

    One note a cell is enough to explain a blank page, and JupyterLab shows a cell's
    first 50 outputs only: a note per widget would hide the widgets past 25.

    Examples
    --------
    >>> first_note_of_cell(None)  # no kernel: no cell
    False
    """
    if shell is None or _noted:
        return False
    _forget_at_next_cell(shell)
    _noted.add("cell")
    return True


_noted: set[str] = set()
"""``{"cell"}`` once the running cell showed an offline note (:func:`first_note_of_cell`)."""


def _forget(*_args: Any) -> None:
    _shown.clear()
    _noted.clear()


def _forget_at_next_cell(shell: Any) -> None:
    # pre_execute: a widget shown from a callback between cells is forgotten when the
    # next cell starts; post_execute: one shown by a cell is forgotten when it ends.
    for event in ("pre_execute", "post_execute"):
        if _forget not in shell.events.callbacks[event]:
            shell.events.register(event, _forget)
