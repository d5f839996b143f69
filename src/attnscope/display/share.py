"""``python -m attnscope share notebook.ipynb -o page.html``: a notebook as one offline page.

``jupyter nbconvert --to html`` of a notebook with saved widget state writes a
page that fetches require.js and the widget manager from a CDN: opened offline
its widgets are blank, and it says nothing. :func:`share_notebook` writes the
page with require.js, ``@jupyter-widgets/html-manager`` and anywidget inlined
(data: URLs), so every widget draws from the saved state with no network.
With ``execute`` it runs the notebook first in a fresh kernel, storing the
widgets' state as it goes. A widget whose state is not saved, or a page made
with ``live=False`` (or where the manager is not at hand: every build ships
it in ``attnscope/static/vendor``, copied by ``npm run build``; a clone also
has ``node_modules``), draws the snapshot each attnscope output carries (its view when the
notebook was saved, as a small self-contained page).
"""

from __future__ import annotations

import base64
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnscope.errors import AttnscopeError

CELL_TIMEOUT_S = 600
"""Longest one cell may run when the notebook is executed."""

# What the page inlines: (its name in the page's resources, the file under node_modules).
VENDORED = (
    ("require_js_url", "requirejs/require.js"),
    ("widget_renderer_url", "@jupyter-widgets/html-manager/dist/embed-amd.js"),
    ("anywidget_url", "anywidget/dist/index.js"),
)
_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SharedPage:
    """What :func:`share_notebook` wrote: the page, whether widgets draw live, and notes."""

    path: Path
    live: bool
    notes: list[str] = field(default_factory=list)


def vendor_folders() -> list[Path]:
    """Where the widget manager's files are looked for: the package's, then a clone's.

    Examples
    --------
    >>> [p.name for p in vendor_folders()]
    ['vendor', 'node_modules']
    """
    return [_HERE.parent / "static" / "vendor", _HERE.parents[2] / "node_modules"]


def vendored_scripts() -> dict[str, str] | None:
    """The inlined scripts as data: URLs by resource name, or None when a file is missing."""
    for folder in vendor_folders():
        files = {name: folder / source for name, source in VENDORED}
        if all(f.is_file() for f in files.values()):
            return {name: _data_url(f.read_bytes()) for name, f in files.items()}
    return None


def _data_url(script: bytes) -> str:
    return "data:text/javascript;base64," + base64.b64encode(script).decode("ascii")


def check_notebook(path: Path, out: Path) -> None:
    """Refuse a missing notebook, an output that is not .html or would overwrite the notebook.

    Examples
    --------
    >>> check_notebook(Path("missing.ipynb"), Path("page.html"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: no notebook at missing.ipynb; ...
    """
    if not path.is_file():
        raise AttnscopeError(f"no notebook at {path}; pass the path of an .ipynb file.")
    if path.suffix != ".ipynb":
        raise AttnscopeError(f"{path} is not a notebook (.ipynb); pass the notebook's path.")
    if out.suffix.lower() not in (".html", ".htm"):
        raise AttnscopeError(f"-o {out}: the page is HTML; name it with .html (e.g. page.html).")
    if out.resolve() == path.resolve():
        raise AttnscopeError(f"-o {out} is the notebook itself; name another file.")


def _tools() -> tuple[Any, Any, Any]:
    try:
        import nbformat
        from nbclient import NotebookClient
        from nbconvert import HTMLExporter
    except ImportError as err:
        raise AttnscopeError(
            f"attnscope share needs nbformat, nbclient and nbconvert ({err.name} is missing): "
            'pip install "attnscope[share]".'
        ) from None
    return nbformat, NotebookClient, HTMLExporter


def share_notebook(
    path: str | Path, out: str | Path, *, execute: bool = False, live: bool = True
) -> SharedPage:
    """Write notebook ``path`` as one HTML page ``out`` whose widgets draw offline.

    Parameters
    ----------
    path
        The notebook (``.ipynb``).
    out
        The page to write (``.html``).
    execute
        Run the notebook first, top to bottom, in a fresh ``python3`` kernel in
        its folder, storing its widgets' state (the notebook file is not changed).
    live
        Inline the widget manager so widgets draw from their saved state; False
        (or no manager at hand) draws each attnscope output's snapshot instead,
        a page ~4 MB smaller.

    Returns
    -------
    SharedPage
        The page's path, whether widgets draw live, and what the page cannot do.

    Examples
    --------
    >>> share_notebook("analysis.ipynb", "analysis.html", execute=True)  # doctest: +SKIP
    SharedPage(path=PosixPath('analysis.html'), live=True, notes=[])
    """
    source, target = Path(path), Path(out)
    check_notebook(source, target)
    nbformat, client, exporter = _tools()
    notebook: Any = nbformat.read(str(source), as_version=4)
    notes: list[str] = []
    if execute:
        _execute(client, notebook, source)
    scripts = vendored_scripts() if live else None
    if live and scripts is None:
        notes.append(
            "the widget manager is not at hand (attnscope/static/vendor is missing: rebuild "
            "the front end with `npm run build`): widgets show their saved snapshots."
        )
    widgets = notebook.metadata.get("widgets", {})
    saved = bool(widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state"))
    if scripts is None or not saved:
        # nbconvert then falls back to each output's text/html: attnscope's snapshot.
        notebook.metadata.pop("widgets", None)
        if live and scripts is not None:
            notes.append(
                "the notebook holds no saved widget state: widgets show their snapshots "
                "(pass --execute, or save the widget state in JupyterLab: Settings > Save "
                "Widget State Automatically)."
            )
    found = scripts or {}
    traits = {k: v for k, v in found.items() if k != "anywidget_url"}  # the exporter's own
    convert = exporter(
        template_file="share_page.html.j2", extra_template_paths=[str(_HERE)], **traits
    )
    resources = {"anywidget_url": found.get("anywidget_url", "")}
    body, _ = convert.from_notebook_node(notebook, resources=resources)
    target.write_text(body, encoding="utf-8")
    return SharedPage(target, scripts is not None and saved, notes)


def local_kernel_config(sockets: str | Path) -> Any:
    """The nbclient config for a kernel on unix sockets named ``sockets``-1, -2, ... (not TCP).

    ipykernel warns on every start over TCP ("Kernel is running over TCP without
    encryption"); a local run needs no port, and the socket files are removed
    when the kernel stops.

    Examples
    --------
    >>> local_kernel_config("/tmp/k")["KernelManager"]["transport"]
    'ipc'
    """
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": str(sockets)}})


def _execute(client: Any, notebook: Any, source: Path) -> None:
    """Run ``notebook`` in its folder, widget state stored; an error names the cell."""
    sockets = tempfile.TemporaryDirectory(prefix="attnscope-kernel-")
    runner = client(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(source.parent.resolve())}},
        config=local_kernel_config(Path(sockets.name) / "kernel"),
    )
    try:
        with sockets:
            runner.execute()
    except Exception as err:  # nbclient's CellExecutionError, a dead kernel, a timeout
        first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise AttnscopeError(
            f"{source.name} raised while it ran ({first}); fix the cell or share it "
            "without --execute (its saved outputs)."
        ) from None
