"""Build the docs site: the example notebooks, run and converted to static pages.

    python docs/site/build_site.py                      # every example, into site/
    python docs/site/build_site.py --out DIR quickstart.ipynb generation.ipynb

Each notebook in ``examples/`` runs top to bottom in a fresh ``python3`` kernel
with its widgets' state stored (``store_widget_state``, as papermill and Jupyter
Book do), then nbconvert's lab template turns it into a page whose widgets draw
from that saved state. require.js, ``@jupyter-widgets/html-manager`` and
``anywidget`` are copied from ``node_modules`` into ``<out>/_static/`` and the pages
load them from there, not from a CDN, so the site works offline and from any
static host. ``<out>/index.html`` links the pages.
"""

from __future__ import annotations

import argparse
import html
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
NODE_MODULES = REPO / "node_modules"
TEMPLATE_DIR = Path(__file__).resolve().parent
CELL_TIMEOUT_S = 600
STATIC = "_static"
FIRST = "quickstart.ipynb"
# What the pages load, from the npm devDependencies: (file in node_modules, file in _static).
# html-manager's embed-amd.js finds its icon fonts beside itself (webpack's automatic
# public path); its other bundles and source maps are not used by the pages.
VENDORED = (
    ("requirejs/require.js", "require.js"),
    ("anywidget/dist/index.js", "anywidget.js"),
    ("@jupyter-widgets/html-manager/dist/embed-amd.js", "html-manager/embed-amd.js"),
)
FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")


@dataclass(frozen=True)
class Page:
    """One built page: its file name, title and how long its notebook ran."""

    file: str
    title: str
    seconds: float


def example_names() -> list[str]:
    """The example notebooks' file names: the quickstart first, then by name."""
    return sorted((p.name for p in EXAMPLES.glob("*.ipynb")), key=lambda n: (n != FIRST, n))


def check_names(names: list[str]) -> None:
    """Refuse a name that is not an example notebook, before any notebook runs."""
    known = example_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(
            f"build_site: no example notebook named {', '.join(unknown)}; "
            f"expected some of {', '.join(known)} (the files in examples/)"
        )
    missing = [src for src, _ in VENDORED if not (NODE_MODULES / src).is_file()]
    if missing:
        raise SystemExit(
            f"build_site: {', '.join(missing)} not found in node_modules; "
            "run `npm ci` first (`make docs` does)"
        )


def vendor(out: Path) -> None:
    """Copy require.js, html-manager (with its fonts) and anywidget into ``out/_static``."""
    static = out / STATIC
    (static / "html-manager").mkdir(parents=True, exist_ok=True)
    for source, target in VENDORED:
        shutil.copyfile(NODE_MODULES / source, static / target)
    dist = NODE_MODULES / "@jupyter-widgets/html-manager/dist"
    for font in dist.iterdir():
        if font.suffix in FONT_SUFFIXES:
            shutil.copyfile(font, static / "html-manager" / font.name)


def run_notebook(path: Path, workdir: Path) -> Any:
    """Run ``path`` in a fresh kernel with widget state stored; fail on an error output."""
    import nbformat
    from nbclient import NotebookClient

    from attnscope.display.share import local_kernel_config

    notebook: Any = nbformat.read(str(path), as_version=4)  # type: ignore[no-untyped-call]
    with tempfile.TemporaryDirectory(prefix="attnscope-kernel-") as sockets:
        NotebookClient(
            notebook,
            timeout=CELL_TIMEOUT_S,
            kernel_name="python3",
            store_widget_state=True,
            resources={"metadata": {"path": str(workdir)}},
            config=local_kernel_config(Path(sockets) / "kernel"),  # no TCP warning per kernel
        ).execute()
    errors = [
        f"{o.ename}: {o.evalue}"
        for cell in notebook.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "error"
    ]
    if errors:
        raise RuntimeError(f"{path.name} raised while it ran: {errors}")
    return notebook


def title_of(notebook: Any, fallback: str) -> str:
    """The notebook's first Markdown heading, or ``fallback``."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return str(line[2:]).strip()
    return fallback


def exporter() -> Any:
    """The HTML exporter of nbconvert, with the site's template and the local script URLs."""
    from nbconvert import HTMLExporter

    return HTMLExporter(  # type: ignore[no-untyped-call]
        template_file="page.html.j2",
        extra_template_paths=[str(TEMPLATE_DIR)],
        require_js_url=f"{STATIC}/require.js",
        widget_renderer_url=f"{STATIC}/html-manager/embed-amd.js",
    )


def index_html(pages: list[Page]) -> str:
    """The site's front page: one link per example."""
    items = "\n".join(
        f'    <li><a href="{html.escape(p.file)}">{html.escape(p.title)}</a></li>' for p in pages
    )
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <link rel="icon" href="data:,">
  <title>attnscope examples</title>
  <style>body {{ font-family: system-ui, sans-serif; max-width: 48em; margin: 2em auto; }}</style>
</head>
<body>
  <h1>attnscope examples</h1>
  <p>The example notebooks of <code>examples/</code>, run once and saved with their
  widgets' state: each widget draws its first screen here without a kernel, and says
  what needs one (run the cell to explore further).</p>
  <ul>
{items}
  </ul>
</body>
</html>
"""


def build(
    out: Path,
    names: list[str] | None = None,
    run: Callable[[Path, Path], Any] = run_notebook,
) -> list[Page]:
    """Run and convert ``names`` (default: every example) into ``out``; return the pages.

    ``run(path, workdir)`` gives the executed notebook (:func:`run_notebook`; the tests pass
    one that reuses the session's runs).

    Examples
    --------
    >>> build(Path("site"), ["quickstart.ipynb"])  # doctest: +SKIP
    [Page(file='quickstart.html', title='attnscope quickstart', seconds=...)]
    """
    names = example_names() if names is None else names
    check_names(names)
    out.mkdir(parents=True, exist_ok=True)
    vendor(out)
    convert = exporter()
    pages: list[Page] = []
    for name in names:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="attnscope-docs-") as workdir:
            notebook = run(EXAMPLES / name, Path(workdir))
        seconds = time.perf_counter() - start
        body, _ = convert.from_notebook_node(notebook)
        page = Page(file=f"{Path(name).stem}.html", title=title_of(notebook, name), seconds=seconds)
        (out / page.file).write_text(body, encoding="utf-8")
        pages.append(page)
        print(f"{page.file}: ran in {seconds:.1f} s", file=sys.stderr)
    (out / "index.html").write_text(index_html(pages), encoding="utf-8")
    return pages


def main() -> None:
    """Command line: ``build_site.py [--out DIR] [NOTEBOOK ...]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "site", help="site folder (site/)")
    parser.add_argument("notebooks", nargs="*", help="example file names (default: all)")
    args = parser.parse_args()
    pages = build(args.out, args.notebooks or None)
    print(f"{args.out / 'index.html'}: {len(pages)} pages")


if __name__ == "__main__":
    main()
