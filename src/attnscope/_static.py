"""Where the built front end lives, and the error that says how to build it.

``static/`` holds the bundles esbuild writes (``widget.js``, ``standalone.js``,
``widget.css``); wheels carry them, a source checkout builds them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from attnscope.errors import AttnscopeError

STATIC = Path(__file__).parent / "static"


class MissingBundleError(ImportError, AttnscopeError):
    """The front-end bundle in ``attnscope/static/`` was not built."""


def static_file(name: str) -> Path:
    """Path of a built front-end file, or :class:`MissingBundleError` saying how to build it.

    Examples
    --------
    >>> static_file("widget.js").name
    'widget.js'
    """
    path = STATIC / name
    if not path.is_file():
        raise MissingBundleError(
            f"attnscope's front-end bundle {path} is missing. In a source checkout run "
            "`npm install && npm run build` (or `make build`); otherwise reinstall "
            "attnscope with `pip install --force-reinstall attnscope`."
        )
    return path


@cache
def static_text(name: str) -> str:
    """Text of a built front-end file, read once per process (see :func:`static_file`).

    The widget hands anywidget its bundle as text: given a path, anywidget 0.11
    watches the file for hot reload and keeps a strong reference to every
    widget through the watcher's signal, so no widget (nor its trace) is ever
    freed (anywidget issue #929).

    Examples
    --------
    >>> static_text("widget.js") is static_text("widget.js")
    True
    """
    return static_file(name).read_text(encoding="utf-8")
