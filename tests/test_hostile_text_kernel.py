"""A widget of hostile tokens displayed in a real IPython kernel: its messages go out whole.

A lone surrogate in a token used to break the kernel's UTF-8 messages
(``UnicodeEncodeError`` from jupyter_client). The kernel here is a real
ipykernel started by jupyter_client; the test reads the widget's
``comm_open`` off the wire and decodes it strictly.
"""

from __future__ import annotations

import json
import queue
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from hostile_tokens import HOSTILE, shown

TESTS = Path(__file__).resolve().parent
TIMEOUT = 120


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=TIMEOUT)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run(client: Any, code: str) -> list[dict[str, Any]]:
    """Execute ``code``; return its iopub messages up to the kernel's idle."""
    msg_id = client.execute(code)
    messages = []
    while True:
        try:
            msg = client.get_iopub_msg(timeout=TIMEOUT)
        except queue.Empty:
            pytest.fail(f"no idle from the kernel within {TIMEOUT} s")
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages


def test_widget_of_hostile_tokens_reaches_the_front_end(kernel: Any) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        import numpy as np
        from hostile_tokens import HOSTILE
        from attnscope import AttentionTrace, AttentionWidget
        n = len(HOSTILE)
        att = np.tril(np.ones((n, n), np.float32))
        trace = AttentionTrace(HOSTILE, (att / att.sum(-1, keepdims=True))[None, None])
        w = AttentionWidget(trace)
        display(w)
        print(w.trace.raw_tokens == HOSTILE)
        """
    )
    messages = run(kernel, code)
    errors = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert errors == []
    printed = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    assert printed.strip() == "True"  # the kernel keeps the raw tokens
    opens = [
        m["content"]
        for m in messages
        if m["msg_type"] == "comm_open"
        and m["content"]["data"].get("state", {}).get("_model_name") == "AnyModel"
    ]
    assert len(opens) == 1
    # jupyter_client decoded the message already; encode it again strictly, as the wire had it
    state = json.loads(json.dumps(opens[0]["data"]["state"], ensure_ascii=False).encode("utf-8"))
    assert state["_meta"]["sides"]["source"]["labels"] == [shown(t) for t in HOSTILE]
    displays = [m for m in messages if m["msg_type"] == "display_data"]
    assert displays, "the widget was not displayed"
