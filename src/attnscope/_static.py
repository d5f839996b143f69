"""Where the built front end lives, and the error that says how to build it.

``static/`` holds the bundles esbuild writes (``widget.js``, ``standalone.js``,
``widget.css``); wheels carry them, a source checkout builds them.
"""

from __future__ import annotations

import hashlib
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


BUNDLE_TRAIT = "_bundle"
"""The synced trait that carries the front-end bundle's text to the page."""

_ONCE_PER_PAGE = """\
// attnscope's widget module. anywidget imports a widget's module afresh for every widget
// and the page keeps each one (anywidget #613), so this one is small: the front end's
// bundle, carried by the model's %(trait)s trait, is imported by the first widget of the
// page and shared, by content digest, with every later one.
const KEY = Symbol.for("attnscope.widget.%(digest)s");
function load(model) {
  const shared = globalThis;
  if (!shared[KEY]) {
    const bundle = new Blob([model.get("%(trait)s")], { type: "text/javascript" });
    const url = URL.createObjectURL(bundle);
    const done = () => URL.revokeObjectURL(url);
    shared[KEY] = import(/* @vite-ignore */ url).then(
      (m) => { done(); return m.default; },
      (e) => { done(); delete shared[KEY]; throw e; },
    );
  }
  return shared[KEY];
}
// jupyterlab-manager keeps a closed widget's model until the page reloads (a kernel signal
// holds its comm): let go of its large state when it closes.
const RELEASED = ["%(trait)s", "_saved", "_meta"];
export default {
  initialize({ model }) {
    model.on("destroy", () => {
      for (const name of RELEASED) model.set(name, null, { silent: true });
    });
  },
  async render(props) {
    const widget = await load(props.model);
    return widget.render(props);
  },
};
"""


@cache
def widget_module() -> str:
    """The ES module anywidget loads for each widget: it imports the bundle once per page.

    anywidget imports a widget's ``_esm`` afresh for every widget, and the page
    never frees those modules (anywidget issue #613): given the bundle itself,
    the page compiled and kept the whole front end once per widget shown. This
    module is a few hundred bytes; the bundle travels in the widget's
    :data:`BUNDLE_TRAIT` and is imported by the first widget of the page.

    Examples
    --------
    >>> len(widget_module()) < 2000, static_digest("widget.js") in widget_module()
    (True, True)
    """
    return _ONCE_PER_PAGE % {"digest": static_digest("widget.js"), "trait": BUNDLE_TRAIT}


@cache
def static_digest(name: str) -> str:
    """A short digest of a built front-end file's text (pages share a module by it).

    Examples
    --------
    >>> len(static_digest("widget.js"))
    16
    """
    return hashlib.sha256(static_text(name).encode()).hexdigest()[:16]
