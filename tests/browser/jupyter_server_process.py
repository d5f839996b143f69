"""A real JupyterLab 4 server in a subprocess, local, quiet and temporary.

One server serves both JupyterLab (``/lab``) and, when the ``notebook``
package is installed, Notebook 7 (``/notebooks``). Everything it writes goes
under one temporary folder; the kernel is the Python that runs the tests
(its ``bin`` comes first on PATH).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0
POLL_INTERVAL_S = 0.2  # between /api/status polls; the wait itself is bounded by the deadline


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class JupyterServer:
    """``python -m jupyterlab`` on a free port of 127.0.0.1, no token, temporary folders.

    Parameters
    ----------
    base
        An empty folder; the server's config, runtime, data, settings,
        workspaces and notebooks (``root``) live below it.
    python
        The interpreter whose environment runs the server and the kernel.
    """

    def __init__(self, base: Path, *, python: Path) -> None:
        self.base = base
        self.python = python
        self.root = base / "root"
        self.port = 0
        self.log_path = base / "server.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        """The server's (and so the kernel's) environment."""
        env = dict(os.environ)
        env.update(
            JUPYTER_CONFIG_DIR=str(self.base / "config"),
            JUPYTER_RUNTIME_DIR=str(self.base / "runtime"),
            JUPYTER_DATA_DIR=str(self.base / "data"),
            IPYTHONDIR=str(self.base / "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
            PYTHONUNBUFFERED="1",
        )
        env["PATH"] = os.pathsep.join([str(self.python.parent), env.get("PATH", "")])
        env.pop("JUPYTER_TOKEN", None)
        return env

    def command(self) -> list[str]:
        """The command line, with every setting that keeps the server local and quiet."""
        return [
            str(self.python),
            "-m",
            "jupyterlab",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.open_browser=False",
            "--ServerApp.allow_root=True",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={self.root}",
            f"--LabApp.user_settings_dir={self.base / 'settings'}",
            f"--LabApp.workspaces_dir={self.base / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            "--JupyterNotebookApp.expose_app_in_browser=True",
        ]

    def _write_settings(self) -> None:
        notification = self.base / "settings" / "@jupyterlab" / "apputils-extension"
        notification.mkdir(parents=True, exist_ok=True)
        (notification / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        for name in ("config", "runtime", "data", "ipython", "workspaces", "root"):
            (self.base / name).mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        """Start the server and wait (bounded) until ``/api/status`` answers."""
        self._write_settings()
        self.port = free_port()
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                self.command(),
                cwd=self.root,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited early:\n{self.log_tail()}")
            if self._status_ok():
                return
            time.sleep(POLL_INTERVAL_S)
        self.stop()
        raise RuntimeError(f"jupyter server not up after {START_TIMEOUT_S} s:\n{self.log_tail()}")

    def _status_ok(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/status", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def stop(self) -> None:
        """Ask the server to shut down (kernels included); terminate it if it does not."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            request = urllib.request.Request(f"{self.url}/api/shutdown", method="POST")
            urllib.request.urlopen(request, timeout=5).close()
            proc.wait(timeout=STOP_TIMEOUT_S)
        except (urllib.error.URLError, ConnectionError, TimeoutError, subprocess.TimeoutExpired):
            proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the server's log, for error messages."""
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def notebook_path(self, name: str) -> Path:
        """Where a notebook called ``name`` lives on disk (under the server's root)."""
        return self.root / name
