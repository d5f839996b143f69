"""How long a widget lives in a kernel: closed when its cell runs again, and not kept by history.

ipywidgets keeps every open widget (its registry holds them so that any
output can show them again), so a widget that is not closed stays, with
its trace, for the whole session. Re-running a cell replaces its output:
the widgets that cell showed are gone from the page, and
:func:`close_when_cell_reruns` closes them then, unless a later cell showed
them again. :func:`forget_in_history` lets IPython's output history (``Out``,
``_``, ``_5``, ...) drop a closed widget.

Outside a kernel (a script, a doctest) neither has anything to do.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

_by_cell: dict[str, weakref.WeakSet[Any]] = {}
"""Widgets shown by each cell (by the front end's cell id), while open."""

_shown_last_in: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""The cell each widget was shown in most recently."""

_HISTORY_NAME = re.compile(r"^_+\d*$")


def running_cell_id(shell: Any) -> str | None:
    """The front end's id of the cell being run (JupyterLab, Notebook 7, VS Code), or None.

    Examples
    --------
    >>> running_cell_id(None) is None
    True
    """
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    parent = kernel.get_parent() or {}
    cell = (parent.get("metadata") or {}).get("cellId")
    return cell if isinstance(cell, str) and cell else None


def close_when_cell_reruns(widget: Any, shell: Any) -> None:
    """Close ``widget`` when the cell now running runs again (its output is replaced then).

    A widget shown again by a later cell is left open: that cell's output still
    shows it.

    Examples
    --------
    >>> close_when_cell_reruns(object(), None)  # no kernel: nothing to do
    """
    cell = running_cell_id(shell)
    if cell is None:
        return
    if _close_shown_by not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", _close_shown_by)
    _by_cell.setdefault(cell, weakref.WeakSet()).add(widget)
    _shown_last_in[widget] = cell


def _close_shown_by(info: Any) -> None:
    cell = getattr(info, "cell_id", None)
    if not cell:
        return
    for widget in list(_by_cell.pop(cell, ())):
        if _shown_last_in.get(widget) == cell:
            widget.close()


def forget_in_history(widget: Any, shell: Any) -> None:
    """Drop ``widget`` from IPython's output history (``Out``, ``_``, ``__``, ``_5``, ...).

    A cell whose last line is the widget stores it there for the rest of the
    session; once it is closed nothing should keep it (or its trace).

    Examples
    --------
    >>> forget_in_history(object(), None)  # no kernel: nothing to do
    """
    # The displayhook pushes _, __, ___ and _5 into the user namespace and into its
    # hidden copy (what %who leaves out); Out is the output history itself.
    for space in (getattr(shell, "user_ns", None), getattr(shell, "user_ns_hidden", None)):
        if not isinstance(space, dict):
            continue
        out = space.get("Out")
        if isinstance(out, dict):
            for number in [n for n, value in out.items() if value is widget]:
                del out[number]
        for name in [n for n, v in space.items() if v is widget and _HISTORY_NAME.match(n)]:
            space[name] = None
    cache = getattr(shell, "displayhook", None)
    for name in ("_", "__", "___"):
        if getattr(cache, name, None) is widget:
            setattr(cache, name, None)
