"""A long kernel session stays flat: closed and re-run widgets free their traces.

Each test drives a real ipykernel through jupyter_client, as a notebook front
end does (execute requests that carry the cell's id), so widgets are shown
through real comms and their chunk requests answered over them. Leaks are
seen through weak references and the kernel's RSS.
"""

from __future__ import annotations

import ast
import os
import queue
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MB = 2**20
SETUP = """
import ctypes, gc, weakref
import numpy as np, psutil
from attnscope import AttentionTrace, AttentionWidget, show_head_view

rng = np.random.default_rng(0)
refs = []

def weights_trace(i, n=256):
    weights = rng.dirichlet(np.ones(n), size=(2, 4, n)).astype("float32")  # 2 MB
    return AttentionTrace([f"w{i}.{j}" for j in range(n)], weights)

def ask(w, keys):  # what the browser sends through the widget's comm
    w._handle_custom_msg({"type": "request", "keys": keys}, [])

def watch(w):
    refs.extend([weakref.ref(w), weakref.ref(w.trace)])
    return w

def state():
    gc.collect()
    try:  # glibc: give freed memory back to the OS before reading RSS
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return {"alive": sum(r() is not None for r in refs), "rss": psutil.Process().memory_info().rss}
"""


class Kernel:
    """A python3 kernel run as a notebook front end would, one execute request at a time."""

    def __init__(self, folder: Path) -> None:
        from jupyter_client.manager import start_new_kernel

        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        self.manager, self.client = start_new_kernel(
            kernel_name="python3", cwd=str(folder), env=env
        )

    def run(self, code: str, *, cell_id: str | None = None, timeout: float = 300) -> str:
        """Execute ``code`` (as cell ``cell_id``); return its stdout, raise on an error."""
        client = self.client
        metadata = {"cellId": cell_id} if cell_id else {}
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        msg = client.session.msg("execute_request", content, metadata=metadata)
        client.shell_channel.send(msg)
        out: list[str] = []
        while True:
            try:
                reply = client.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no answer in {timeout} s to:\n{code}") from None
            if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "stream":
                out.append(body["text"])
            elif kind == "error":
                raise AssertionError("\n".join(body["traceback"]))
            elif kind == "status" and body["execution_state"] == "idle":
                return "".join(out)

    def value(self, code: str, **options: Any) -> Any:
        """The Python literal the last line of ``code``'s output prints."""
        return ast.literal_eval(self.run(code, **options).strip().splitlines()[-1])

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    k = Kernel(tmp_path)
    try:
        k.run(SETUP)
        yield k
    finally:
        k.stop()


def test_fifty_widgets_shown_and_closed_leave_no_widget_trace_or_memory(kernel: Kernel) -> None:
    show = """
for i in range({start}, {stop}):
    w = watch(show_head_view(weights_trace(i)))
    ask(w, ["thumbs:self", "top:self:0", "attn:self:0:0", "attn:self:1:3"])
    w.close()
del w
print(state())
"""
    warm = kernel.value(show.format(start=0, stop=3))  # first-time imports and allocations
    after = kernel.value(show.format(start=3, stop=53))
    grown = (after["rss"] - warm["rss"]) / MB
    print(
        f"\nkernel RSS: {warm['rss'] / MB:.0f} MB after 3 widgets, {after['rss'] / MB:.0f} MB "
        f"after 50 more shown and closed ({grown:+.1f} MB; their traces alone: 100 MB)"
    )
    assert warm["alive"] == 0
    assert after["alive"] == 0, "closed widgets or their traces are alive"
    assert grown < 40, f"50 shown and closed widgets grew the kernel by {grown:.0f} MB"


def test_a_closed_widget_is_not_kept_by_the_output_history(kernel: Kernel) -> None:
    kernel.run("w = watch(show_head_view(weights_trace(0)))\nw")  # Out[n] and _ hold it
    kernel.run("w.close()\ndel w")
    assert kernel.value("print(state())")["alive"] == 0


def test_a_rerun_cell_closes_the_widgets_it_showed_unless_shown_again(kernel: Kernel) -> None:
    cell = "w = watch(show_head_view(weights_trace(0)))\nw"
    kernel.run(cell, cell_id="cell-a")
    kernel.run("kept = watch(show_head_view(weights_trace(1)))", cell_id="cell-b")
    kernel.run("kept", cell_id="cell-c")  # cell-b's widget shown again by a later cell
    kernel.run(cell, cell_id="cell-a")  # re-run: its first widget's output is replaced
    kernel.run("kept = kept", cell_id="cell-b")
    # refs: (widget, trace) of cell-a's first run, of cell-b, of cell-a's second run
    report = kernel.value(
        "gc.collect()\nprint([[r() is not None for r in refs[:2]], "
        "[refs[i]().comm is not None for i in (2, 4)]])"
    )
    assert report == [[False, False], [True, True]]


def test_a_long_context_trace_shown_ten_times_does_not_grow_the_kernel(kernel: Kernel) -> None:
    kernel.run("""
n, d = 4096, 16
q = rng.normal(size=(2, 4, n, d)).astype("float32")
k = rng.normal(size=(2, 4, n, d)).astype("float32")
long = AttentionTrace([f"t{i}" for i in range(n)], None, queries=q, keys=k)
def show_long():
    w = AttentionWidget(long)
    w._ipython_display_()
    ask(w, ["thumbs:self", "top:self:0:0", "attn:self:0:0", "attn:self:0:1"])  # 2 x 16 MB
    w.close()
""")
    first = kernel.value("show_long()\nprint(state())")
    after = kernel.value("for _ in range(9):\n    show_long()\nprint(state())")
    grown = (after["rss"] - first["rss"]) / MB
    print(
        f"\nkernel RSS: {first['rss'] / MB:.0f} MB after one 4096-token widget, "
        f"{after['rss'] / MB:.0f} MB after ten ({grown:+.1f} MB)"
    )
    assert grown < 48, f"nine more showings of one trace grew the kernel by {grown:.0f} MB"


OPEN_WIDGETS = """
import warnings
import ipywidgets

def open_widgets():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return len(ipywidgets.Widget._active_widgets)
"""


def test_shown_and_closed_widgets_leave_no_ipywidget_open(kernel: Kernel) -> None:
    # Each display made a progress bar (a box, its bar and texts, their layouts and styles)
    # and each widget its Layout: closing them left ~21 comms open per display.
    kernel.run(
        OPEN_WIDGETS
        + """
def show_and_close(i):
    w = show_head_view(weights_trace(i, n=16))
    ask(w, ["thumbs:self", "attn:self:0:0"])
    w.close()
"""
    )
    before = kernel.value("show_and_close(0)\nprint(open_widgets())")
    after = kernel.value("for i in range(1, 21):\n    show_and_close(i)\nprint(open_widgets())")
    assert after == before, f"20 widgets shown and closed left {after - before} widgets open"


def test_a_drawn_progress_bar_closes_every_widget_it_made(kernel: Kernel) -> None:
    kernel.run(OPEN_WIDGETS + "from attnscope import _progress\n_progress.DELAY = 0.0")
    drawn = """
with _progress.progress(3, "work") as bar:
    for _ in range(3):
        bar.update(1)
        bar.refresh()
print([bar.displayed, open_widgets()])
"""
    shown, before = kernel.value(drawn)
    shown, after = kernel.value(drawn)
    assert shown, "the bar was not drawn as a notebook widget"
    assert after == before
