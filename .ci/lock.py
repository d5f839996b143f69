"""The test environment's lock: every package pinned, from a fresh resolve, checked after installs.

``python .ci/lock.py write VENV_PYTHON`` prints the lock of the environment that
``VENV_PYTHON`` runs in (``make lock`` writes it to ``.ci/lock.txt``);
``python .ci/lock.py check`` exits non-zero, naming each package, when the running
environment holds a package the lock does not pin, or another version of one.

The lock is a pip constraints file of exact pins (``name==version``): pip reads it
with ``-c`` on every install, so it can never pull anything in by itself and a
package that is not pinned is caught by ``check``. It carries no hashes: torch
comes from a file on this kind of machine's disk whose build differs from PyPI's
(``+cpu``), and pip's hash mode would refuse it; versions on PyPI are immutable.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LOCK = Path(__file__).resolve().parent / "lock.txt"
HEADER = """\
# The test environment, every package pinned: written by `make lock` from a fresh resolve of
# `pip install torch==2.13.0` then `pip install -e ".[test,demo,bench]"`; read with `pip -c` by
# `make demo`, `make test` and .ci/run, and checked after each install (.ci/lock.py check).
# Users' `pip install attnscope` keeps the ranges in pyproject.toml.
"""


def _frozen(python: str) -> dict[str, str]:
    out = subprocess.run(
        [python, "-m", "pip", "freeze", "--all", "--exclude-editable"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pins: dict[str, str] = {}
    for line in out.splitlines():
        if "==" not in line or line.startswith("#"):
            continue
        name, version = line.split("==", 1)
        # torch's on-disk CPU build is 2.13.0+cpu; ==2.13.0 admits it (PEP 440 local labels).
        pins[name.lower().replace("_", "-")] = version.split("+", 1)[0]
    return pins


def _read_lock() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[name] = version
    return pins


def write(python: str) -> None:
    """Print the lock of the environment ``python`` runs in."""
    pins = _frozen(python)
    pins.pop("attnscope", None)
    body = "".join(f"{name}=={pins[name]}\n" for name in sorted(pins))
    sys.stdout.write(HEADER + body)


def check() -> int:
    """0 when the running environment is the lock's (a subset of it), else 1 with the list."""
    locked = _read_lock()
    found = _frozen(sys.executable)
    found.pop("attnscope", None)
    wrong = [
        f"  {name} {version} (lock: {locked.get(name, 'not pinned')})"
        for name, version in sorted(found.items())
        if locked.get(name) != version
    ]
    if wrong:
        sys.stderr.write(
            "The environment differs from .ci/lock.txt:\n"
            + "\n".join(wrong)
            + "\nInstall with `pip install -c .ci/lock.txt ...`, or run `make lock` to "
            "resolve anew and rewrite the lock.\n"
        )
        return 1
    print(f"environment matches .ci/lock.txt ({len(found)} packages)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"] and len(sys.argv) == 3:
        write(sys.argv[2])
    elif sys.argv[1:] == ["check"]:
        sys.exit(check())
    else:
        sys.exit("usage: python .ci/lock.py write VENV_PYTHON | python .ci/lock.py check")
