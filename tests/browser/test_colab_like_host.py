"""What is known of Colab, simulated: Colab itself cannot run here (no network).

Known (FACTS.md): anywidget renders through Colab's custom widget manager;
binary buffers in a widget's *initial* state do not arrive; custom-message
buffers arrive as ``Uint8Array``; each output is its own iframe; a reopened
notebook shows no widget until its cell runs again. The simulation:

- a notebook page at a fake 127.0.0.1 origin with one iframe per output,
  each importing the widget's real ``_esm`` (``static/loader.js``, which
  imports the modules of the widget's ``_bundle``) and mounting it on a small
  model built from the widget's JSON state alone;
- ``send`` goes to the real :class:`AttentionWidget` in this process
  (``answer``), whose replies come back as ``Uint8Array`` buffers;
- selections set in an iframe reach the Python widget;
- the reopened notebook is the saved output's ``text/html`` (the snapshot)
  in an output iframe.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest
from browser_kit import serve_files, wait_for_widget
from ipywidgets.widgets.widget import _remove_buffers
from page_kit import VIEW_ROOTS
from playwright.sync_api import expect

from attnscope import AttentionTrace, AttentionWidget
from attnscope._static import static_file
from attnscope.display.snapshot import snapshot_html

pytestmark = pytest.mark.browser

ORIGIN = "http://127.0.0.1:9"  # never listened on: every request is answered by the route below
NOTEBOOK = """<!doctype html><html><body>
<iframe id="out0" src="output.html?i=0" style="width:1000px;height:420px"></iframe>
<iframe id="out1" src="output.html?i=1" style="width:1000px;height:420px"></iframe>
</body></html>"""
# One output frame: Colab-like glue that mounts the real _esm on a JSON-state model.
OUTPUT = """<!doctype html><html><head><link rel="stylesheet" href="widget.css"></head>
<body><div id="el"></div><script type="module">
const i = Number(new URLSearchParams(location.search).get("i"));
const state = await (await fetch(`state-${i}.json`)).json();
const handlers = new Map();
const emit = (ev, ...a) => { for (const fn of [...(handlers.get(ev) ?? [])]) fn(...a); };
const changed = {};
const model = {
  get: (k) => state[k],
  set: (k, v) => { state[k] = v; changed[k] = v; emit(`change:${k}`, v); },
  on: (ev, fn) => { if (!handlers.has(ev)) handlers.set(ev, new Set()); handlers.get(ev).add(fn); },
  off: (ev, fn) => { if (ev && fn) handlers.get(ev)?.delete(fn); },
  save_changes: () => {
    window.colabSave(i, { ...changed }).then(() => {
      document.body.dataset.saved = String(Number(document.body.dataset.saved ?? 0) + 1);
    });
  },
  send: (content) => {
    window.colabSend(i, content).then(({ replies }) => {
      for (const [reply, buffers] of replies) {
        // Colab's widget manager hands buffers over as Uint8Array.
        const bytes = buffers.map((b) => Uint8Array.from(atob(b), (c) => c.charCodeAt(0)));
        emit("msg:custom", reply, bytes);
      }
    });
  },
};
const { default: widget } = await import("./loader.js");
widget.initialize({ model });
widget.render({ model, el: document.getElementById("el") });
</script></body></html>"""


def make_widgets() -> list[AttentionWidget]:
    rng = np.random.default_rng(4)
    tokens = ["The", "cat", "sat", "on", "the", "mat"]
    weights = rng.dirichlet(np.ones(6), size=(4, 3, 6)).astype("float32")
    trace = AttentionTrace(tokens, weights)
    return [AttentionWidget(trace, view="head", layer=2), AttentionWidget(trace, view="model")]


def initial_state(widget: AttentionWidget) -> dict[str, Any]:
    state, paths, buffers = _remove_buffers(widget.get_state())
    assert paths == [], "binary in the initial state: Colab would drop it"
    assert buffers == []
    json.dumps(state)  # the state travels as JSON alone
    return {k: v for k, v in state.items() if not k.startswith(("_model", "_view", "_esm", "_css"))}


def notebook_files(notebook: str, states: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """The notebook page, its output frame, the bundle and each output's state, by name."""
    files = {
        "notebook.html": (notebook, "text/html"),
        "output.html": (OUTPUT, "text/html"),
        "loader.js": (static_file("loader.js").read_text(), "text/javascript"),
        "widget.css": (static_file("widget.css").read_text(), "text/css"),
    }
    for i, state in enumerate(states):
        files[f"state-{i}.json"] = (json.dumps(state), "application/json")
    return files


def serve(page: Any, files: dict[str, tuple[str, str]]) -> None:
    serve_files(page, ORIGIN, files)


def test_one_iframe_per_output_uint8_buffers_and_json_state(page: Any) -> None:
    widgets = make_widgets()
    served: list[list[str]] = []

    def colab_send(_source: Any, index: int, content: Any) -> dict[str, Any]:
        served.append(list(content["keys"]))
        replies = widgets[index].answer(content)
        return {
            "replies": [
                [reply, [base64.b64encode(b).decode() for b in buffers]]
                for reply, buffers in replies
            ]
        }

    def colab_save(_source: Any, index: int, changes: dict[str, Any]) -> None:
        for name, value in changes.items():
            setattr(widgets[index], name, value)

    page.expose_binding("colabSend", colab_send)
    page.expose_binding("colabSave", colab_save)
    serve(page, notebook_files(NOTEBOOK, [initial_state(w) for w in widgets]))
    page.goto(f"{ORIGIN}/notebook.html")

    head = page.frame_locator("#out0")
    first = page.frame(url=f"{ORIGIN}/output.html?i=0")
    wait_for_widget(first, root=VIEW_ROOTS["head"])
    wait_for_widget(page.frame(url=f"{ORIGIN}/output.html?i=1"), root=VIEW_ROOTS["model"])
    expect(head.locator('[data-testid="layer-select"]')).to_have_value("2")
    assert ["top:self:2"] in served
    assert ["thumbs:self"] in served

    # Each output's CSS and selection stay in its own frame; a choice reaches Python.
    saves = int(first.evaluate("() => Number(document.body.dataset.saved ?? 0)"))
    head.locator('[data-testid="layer-select"]').select_option("3")
    first.wait_for_function("(n) => Number(document.body.dataset.saved ?? 0) > n", arg=saves)
    assert widgets[0].layer == 3
    assert widgets[1].layer == 0


def test_a_reopened_notebook_shows_the_saved_snapshot_in_its_output_frame(page: Any) -> None:
    saved = snapshot_html(make_widgets()[0])  # what the output kept when the notebook was saved
    serve(
        page, {"reopened.html": (f"<!doctype html><html><body>{saved}</body></html>", "text/html")}
    )
    page.goto(f"{ORIGIN}/reopened.html")
    frame = page.locator("iframe.attnscope-snapshot").element_handle().content_frame()
    wait_for_widget(frame, root=VIEW_ROOTS["head"])
    expect(frame.locator('[data-testid="layer-select"]')).to_have_value("2")
