"""Front-end modules run in node: an entry script bundled with esbuild (as the tests need it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def node_bundle(entry: str, folder: Path) -> tuple[str, Path]:
    """Bundle the ESM ``entry`` text (it imports ``js/`` files by path) for node, in ``folder``.

    Returns ``(node, bundle)``: run ``[node, str(bundle)]``.
    """
    source = folder / "entry.mjs"
    source.write_text(entry, encoding="utf-8")
    bundle = folder / "bundle.mjs"
    esbuild = ROOT / "node_modules" / ".bin" / "esbuild"
    args = [str(source), "--bundle", "--platform=node", "--format=esm", f"--outfile={bundle}"]
    subprocess.run([str(esbuild), *args], check=True, capture_output=True)
    node = shutil.which("node")
    assert node, "node is needed (make installs it with the front end's tools)"
    return node, bundle
