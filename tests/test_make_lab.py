"""``make lab`` on a server or in a container (issue 39, point 4): arguments, root, no yarn wall.

Runs the ``lab`` target as a user would on a headless machine, with its
prerequisites taken as made (``make -o``: the test never rebuilds .venv or the
bundle), waits for the server's URL, asks its API, and stops it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api_answers(url: str, server: subprocess.Popen[bytes], timeout_s: float = 60) -> bool:
    """True once ``url`` answers 200; False if the server ends or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)  # polls the port until the server's listen has run
    return False


def test_make_lab_takes_arguments_runs_as_root_and_prints_no_yarn_wall(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "lab.log"
    args = f"--no-browser --ip 127.0.0.1 --port {port} --IdentityProvider.token=attnscope"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    with log.open("w") as out:
        make = subprocess.Popen(
            ["make", "-o", ".venv/.demo", "-o", "build", "lab", f"ARGS={args}"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        url = re.compile(rf"http://127\.0\.0\.1:{port}/lab")
        deadline = time.monotonic() + 120
        while not url.search(log.read_text()) and make.poll() is None:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)  # polls the log for the server's own word that it is up
        text = log.read_text()
        assert url.search(text), f"make lab did not start the server:\n{text[-3000:]}"
        command, printed = text.split("\n[", 1)  # make's echo of the recipe, then the server's
        # The server prints its URL before it binds the port (the bind runs on its event
        # loop): ask until it answers.
        assert _api_answers(f"http://127.0.0.1:{port}/api?token=attnscope", make), text[-3000:]
        if os.getuid() == 0:
            assert "--allow-root" in command
        assert "Fail to get yarn configuration" not in printed
        assert not re.search(r"Object\.defineProperty|Dynamic require", printed), printed[:2000]
    finally:
        with contextlib.suppress(ProcessLookupError):  # make already ended (it failed to start)
            os.killpg(make.pid, signal.SIGTERM)
        make.wait(timeout=30)
