"""A widget's ``_bundle`` is checked before any of it runs (issue 40, item 3).

The widget's ``_esm`` (``static/loader.js``) carries the SHA-256 of every
module of the build it came with; each module text a widget's ``_bundle``
offers is hashed once per page and imported only when it matches. Here the
real loader runs in chromium on a page at a 127.0.0.1 origin, on models built
from real widgets' JSON state (as a notebook's widget manager builds them):

- a ``_bundle`` of other script is refused in the widget's place, and nothing
  of it runs;
- a widget with no ``_bundle``, or a foreign one, beside a good one does not
  break the good one (the page takes each module from a widget whose text checks);
- an exported page whose code was swapped is refused the same way.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser_kit import serve_files, wait_for_widget
from ipywidgets.widgets.widget import _remove_buffers
from page_kit import VIEW_ROOTS
from playwright.sync_api import expect

from attnscope import AttentionTrace, AttentionWidget, save_html
from attnscope._static import packed_code, static_file

pytestmark = pytest.mark.browser

ORIGIN = "http://127.0.0.1:9"  # never listened on: every request is answered by the route below
# Other script in place of each module: it would mark the page if any of it ran.
FOREIGN = (
    "globalThis.foreignRan = (globalThis.foreignRan || 0) + 1;"
    "export function setViewLoader() {} export function autoRender() {}"
    "export default { render() { globalThis.foreignRan += 100; } };"
)
# A notebook-like host: one model per widget from its JSON state, initialized together (as a
# widget manager restores a notebook), then rendered one after the other by the real _esm.
HOST = """<!doctype html><html><head><link rel="stylesheet" href="widget.css"></head>
<body><script type="module">
const states = await (await fetch("states.json")).json();
const { default: loader } = await import("./loader.js");
const models = states.map((state, i) => {
  const handlers = new Map();
  const emit = (ev, ...a) => { for (const fn of [...(handlers.get(ev) ?? [])]) fn(...a); };
  return {
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; emit(`change:${k}`, v); },
    on: (ev, fn) => {
      if (!handlers.has(ev)) handlers.set(ev, new Set());
      handlers.get(ev).add(fn);
    },
    off: (ev, fn) => { if (ev && fn) handlers.get(ev)?.delete(fn); },
    save_changes: () => {},
    send: (content) => {
      window.answer(i, content).then((replies) => {
        for (const [reply, buffers] of replies) {
          const bytes = buffers.map((b) => Uint8Array.from(atob(b), (c) => c.charCodeAt(0)));
          emit("msg:custom", reply, bytes);
        }
      });
    },
  };
});
for (const model of models) loader.initialize({ model });
for (const [i, model] of models.entries()) {
  const el = document.createElement("div");
  el.id = `w${i}`;
  document.body.append(el);
  await loader.render({ model, el });
}
document.body.dataset.rendered = "true";
</script></body></html>"""


def _widgets() -> list[AttentionWidget]:
    rng = np.random.default_rng(7)
    weights = rng.dirichlet(np.ones(5), size=(2, 3, 5)).astype("float32")
    trace = AttentionTrace(["The", "cat", "sat", "on", "it"], weights)
    return [AttentionWidget(trace, view="head") for _ in range(3)]


def _state(widget: AttentionWidget, bundle: dict[str, str] | None) -> dict[str, Any]:
    state, _, _ = _remove_buffers(widget.get_state())
    state = {k: v for k, v in state.items() if not k.startswith(("_model", "_view", "_esm"))}
    state["_bundle"] = bundle
    return state


def _open(page: Any, widgets: list[AttentionWidget], bundles: list[dict[str, str] | None]) -> None:
    files = {
        "host.html": (HOST, "text/html"),
        "loader.js": (static_file("loader.js").read_text(), "text/javascript"),
        "widget.css": (static_file("widget.css").read_text(), "text/css"),
        "states.json": (
            json.dumps([_state(w, b) for w, b in zip(widgets, bundles, strict=True)]),
            "application/json",
        ),
    }

    def answer(_source: Any, index: int, content: Any) -> list[Any]:
        replies = widgets[index].answer(content)
        return [[r, [base64.b64encode(b).decode() for b in bufs]] for r, bufs in replies]

    serve_files(page, ORIGIN, files)
    page.expose_binding("answer", answer)
    page.goto(f"{ORIGIN}/host.html")
    page.wait_for_function("() => document.body.dataset.rendered === 'true'")


def _foreign(bundle: dict[str, str]) -> dict[str, str]:
    """Other script in place of every module, packed as the build's modules are."""
    return dict.fromkeys(bundle, packed_code({"x": FOREIGN})["x"])


def test_a_foreign_bundle_is_refused_and_nothing_of_it_runs(page: Any) -> None:
    widgets = _widgets()[:1]
    _open(page, widgets, [_foreign(widgets[0]._bundle)])
    refused = page.locator('#w0 [data-testid="code-refused"]')
    expect(refused).to_contain_text("does not match attnscope's build")
    expect(refused).to_contain_text("none of it was run")
    assert page.evaluate("() => globalThis.foreignRan") is None
    assert page.locator('#w0 [data-testid="attnscope-root"]').count() == 0


def test_a_missing_bundle_says_so(page: Any) -> None:
    widgets = _widgets()[:1]
    _open(page, widgets, [None])
    expect(page.locator('#w0 [data-testid="code-refused"]')).to_contain_text("no code for")


def test_empty_and_foreign_bundles_beside_a_good_one_do_not_break_it(page: Any) -> None:
    widgets = _widgets()
    # Rendered in this order: no _bundle first, then a foreign one, then the good one.
    _open(page, widgets, [{}, _foreign(widgets[1]._bundle), widgets[2]._bundle])
    for i in range(3):
        wait_for_widget(page.locator(f"#w{i}"), root=VIEW_ROOTS["head"])
    assert page.evaluate("() => globalThis.foreignRan") is None
    assert page.locator('[data-testid="code-refused"]').count() == 0


def test_an_exported_page_with_swapped_code_is_refused(page: Any, tmp_path: Path) -> None:
    trace = _widgets()[0].trace
    path = save_html(trace, tmp_path / "page.html", views=("head",))
    text = path.read_text(encoding="utf-8")
    found = re.search(r'(<script type="application/json" id="attnscope-code">)(.*?)</script>', text)
    assert found
    swapped = _foreign(json.loads(found.group(2)))
    path.write_text(
        text[: found.start(2)] + json.dumps(swapped) + text[found.end(2) :], encoding="utf-8"
    )
    page.goto(path.as_uri())
    expect(page.locator('[role="alert"]')).to_contain_text("does not match attnscope's build")
    assert page.evaluate("() => globalThis.foreignRan") is None
