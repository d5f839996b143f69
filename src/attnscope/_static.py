"""Where the built front end lives, and the error that says how to build it.

``static/`` holds what esbuild writes (``js/build.mjs``): the front end split by
view in ``code/`` (each view's module, the widget's and the page's entry modules,
the code they share, and ``manifest.json`` with each module's SHA-256 and
imports), the two loaders that import those modules after checking them
(``loader.js``, the widget's ``_esm``; ``page_loader.js``, the page's script),
the whole front end as one module (``widget.js``) and ``widget.css``. Wheels
carry them, a source checkout builds them.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable
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
    >>> static_file("loader.js").name
    'loader.js'
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
    >>> static_text("loader.js") is static_text("loader.js")
    True
    """
    return static_file(name).read_text(encoding="utf-8")


BUNDLE_TRAIT = "_bundle"
"""The synced trait that carries the widget's front-end modules ({file: text}) to the page."""

CODE_DIR = "code"
"""The folder of ``static/`` that holds the front end split by view."""


@cache
def code_manifest() -> dict[str, object]:
    """The split build's manifest: each module's SHA-256 and imports, the entries, the views' units.

    Examples
    --------
    >>> sorted(code_manifest())
    ['digest', 'entries', 'files', 'units']
    """
    manifest: dict[str, object] = json.loads(static_text(f"{CODE_DIR}/manifest.json"))
    return manifest


def view_units(views: Iterable[str], *, comparison: bool = False) -> tuple[str, ...]:
    """The code units (``js/view_units.ts``) that draw ``views`` (a comparison's adds A − B's).

    A comparison's neuron view adds the unit that draws A − B (A and B side by side).

    Examples
    --------
    >>> view_units(("head", "neuron"), comparison=True)
    ('head', 'neuron', 'neuron_diff')
    """
    units = list(dict.fromkeys(views))
    if comparison and "neuron" in units:
        units.append("neuron_diff")
    return tuple(units)


def code_texts(entry: str, units: Iterable[str]) -> dict[str, str]:
    """Texts of the modules that entry ``"widget"`` or ``"page"`` and the view ``units`` need.

    Each module once, with every module it imports; the loaders check each
    text against the manifest's SHA-256 before importing it.

    Examples
    --------
    >>> head = code_texts("page", ["head"])
    >>> "page.js" in head, "view_head.js" in head, "view_model.js" in head
    (True, True, False)
    """
    manifest = code_manifest()
    files: dict[str, dict[str, list[str]]] = manifest["files"]  # type: ignore[assignment]
    entries: dict[str, str] = manifest["entries"]  # type: ignore[assignment]
    unit_files: dict[str, str] = manifest["units"]  # type: ignore[assignment]
    wanted = [entries[entry], *(unit_files[u] for u in units)]
    seen: dict[str, str] = {}
    while wanted:
        name = wanted.pop()
        if name not in seen:
            seen[name] = static_text(f"{CODE_DIR}/{name}")
            wanted.extend(files[name]["imports"])
    return dict(sorted(seen.items()))


def widget_module() -> str:
    """The ES module anywidget loads for each widget (``_esm``): the loader of its ``_bundle``.

    anywidget imports a widget's ``_esm`` afresh for every widget, and the page
    never frees those modules (anywidget issue #613): this module is a few kB
    (the build's manifest of module digests and its linker). The modules travel
    in the widget's :data:`BUNDLE_TRAIT` and are imported once per page, each
    after its SHA-256 matches the manifest, a view's only when it is first shown.

    Examples
    --------
    >>> len(widget_module()) < 16_000, str(code_manifest()["digest"]) in widget_module()
    (True, True)
    """
    return static_text("loader.js")


def packed_code(texts: dict[str, str]) -> dict[str, str]:
    """Module texts as a page carries them: each deflate-raw compressed, base64 encoded.

    A page's chunks travel the same way; the page's loader inflates each text
    and checks its SHA-256 before importing it.

    Examples
    --------
    >>> packed = packed_code({"a.js": "export default 1;" * 100})
    >>> len(packed["a.js"]) < 100
    True
    """
    out = {}
    for name, text in texts.items():
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        raw = deflate.compress(text.encode()) + deflate.flush()
        out[name] = base64.b64encode(raw).decode("ascii")
    return out
