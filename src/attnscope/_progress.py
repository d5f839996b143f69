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

    Examples
    --------
    >>> with progress(3, "chunks") as bar:
    ...     for _ in range(3):
    ...         _ = bar.update(1)
    >>> bar.n
    3
    """
    from tqdm.auto import tqdm  # type: ignore[import-untyped]  # no stubs in the venv

    return tqdm(
        total=total,
        desc=description,
        unit=unit,
        delay=DELAY,
        leave=False,
        file=FILE,
        dynamic_ncols=True,
    )
