"""Fuzz tier: crafted saved widget state ends in a drawing or a clear message (issue 40).

A notebook saved with its widget state is read without a kernel by docs sites, nbconvert,
nbviewer and a reopened JupyterLab; a shared notebook's state is untrusted input. Here real
widgets' states (``fuzz_cases.base_states``: head, model, neuron and image views of small
traces, ``_saved`` as a display writes it) are changed one place at a time
(``fuzz_cases``: every capped ``_meta`` number at and past its cap, the issue's own numbers,
chunks renamed, not objects, smaller or flattened, other dtypes and encodings, bad base64
and deflate, bombs, hostile text in every text field, a missing or foreign ``_bundle``) and
all of them are rendered on one page by the real loader (``static/loader.js``, the widget's
``_esm``) under a widget manager with no kernel, as html-manager renders a notebook, one at
a time (garbage collected between them). Each widget must end, within 5 s of its render, in
what its case expects (the state-invalid alert, a view's message, or a drawing), with no
page error, nothing run from data and no element made from it, and the renderer under
``RENDERER_BOUND``. A second page holds thirteen widgets whose saved chunks decode to
122 MiB each, all kept open: the page's budget (1.5 GiB) takes twelve, the thirteenth is a
message naming it. A third set of cases crafts exported pages (``save_html``) the same way.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import torch
from browser_kit import serve_files
from fuzz_cases import PWNED, Case, all_cases, deflate, states_json, widget_state, zeros
from hostile_kit import FOREIGN

from attnscope import AttentionTrace, AttentionWidget, MultiHeadAttention, save_html
from attnscope._static import static_file
from hostile_tokens import bidi_leaks

pytestmark = pytest.mark.browser

ORIGIN = "http://127.0.0.1:9"  # never listened on: the route below answers every request
SETTLE_MS = 5_000
KINDS = ("invalid", "message", "drawn")
RENDERER_BOUND = 768 * 2**20
"""The renderer's resident memory while any one crafted widget shows (the page's own included)."""
BUDGET_RENDERER_BOUND = 3 * 2**30
"""Seven 244 MiB chunks: the 1.5 GiB budget, inflation's transient copy, the views."""
# One model per widget from its JSON state, under a widget manager that creates comms and has
# no kernel (as @jupyter-widgets/html-manager: hasNoKernel in js/saved.ts); initialized
# together, rendered one after the other by the real _esm. A watcher records when each widget
# first shows its state: the alert, a message, or a view that drew.
HOST = """<!doctype html><html><head><link rel="stylesheet" href="widget.css"></head>
<body><script type="module">
// Long lists travel as {"@repeat": item, "n": n} or {"@range": n} (fuzz_cases.states_json).
// A _bundle that many widgets share travels once: {"@bundle": i} is bundles[i].
const { bundles, states } = JSON.parse(await (await fetch("states.json")).text(), (_, v) =>
  v?.["@range"] !== undefined ? [...Array(v["@range"]).keys()]
  : v?.["@repeat"] !== undefined ? new Array(v.n).fill(v["@repeat"]) : v);
for (const s of states) {
  if (s._bundle?.["@bundle"] !== undefined) s._bundle = bundles[s._bundle["@bundle"]];
}
const { default: loader } = await import("./loader.js");
const manager = { _create_comm() {} };
const models = states.map((state) => {
  const handlers = new Map();
  const emit = (ev, ...a) => { for (const fn of [...(handlers.get(ev) ?? [])]) fn(...a); };
  return {
    widget_manager: manager,
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; emit(`change:${k}`, v); },
    on: (ev, fn) => { (handlers.get(ev) ?? handlers.set(ev, new Set()).get(ev)).add(fn); },
    off: (ev, fn) => { if (ev && fn) handlers.get(ev)?.delete(fn); },
    save_changes: () => {},
    send: () => {},
  };
});
const shown = (e) => !e.closest("[hidden]") && e.textContent.trim();
const said = (el) => [...el.querySelectorAll('[data-kind="error"], [role="alert"]')].filter(shown);
const kind = (el) => {
  if (el.querySelector('[data-testid="state-invalid"]')) return "invalid";
  if (el.querySelector('[data-testid="code-refused"]')) return "refused";
  if (said(el).length) return "message";
  const view = el.querySelector(".attnscope-view");
  if (view?.dataset.ready === "true" && Number(view.dataset.draws || 0) >= 1) return "drawn";
  return null;
};
// Resolves once `el` shows a state (or after `ms`): checked after each change inside it.
const settled = (el, ms) => new Promise((resolve) => {
  const done = () => { observer.disconnect(); clearTimeout(timer); resolve(); };
  const observer = new MutationObserver(() => { if (kind(el)) done(); });
  observer.observe(el, { subtree: true, childList: true, attributes: true, characterData: true });
  const timer = setTimeout(done, ms);
  if (kind(el)) done();
});
for (const model of models) loader.initialize?.({ model });
// One widget at a time, when the test asks: its time and memory are its own. Its outcome is
// read, then it is closed (unless `keep`: the page budget's test keeps every widget open).
window.step = async (i, keep) => {
  const el = document.createElement("div");
  document.body.append(el);
  const t0 = performance.now();
  let threw = null, undo = null;
  try { undo = await loader.render({ model: models[i], el }); } catch (e) { threw = String(e); }
  await settled(el, SETTLE_MS);
  const ms = performance.now() - t0;
  // A view that drew and then said something: what it says is its state.
  await new Promise((r) => requestAnimationFrame(r));
  const out = { kind: kind(el), said: said(el).map((e) => e.textContent).join(" | "),
                ms, threw, made: el.querySelectorAll(FOREIGN).length };
  if (!keep) { if (typeof undo === "function") undo(); el.remove(); }
  return out;
};
document.body.dataset.ready = "true";
</script></body></html>"""


class RendererMemory:
    """Resident memory of the page's chromium renderers, sampled; the peak of each case."""

    def __init__(self) -> None:
        self.case = -1
        self.peaks: dict[int, int] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            rss = 0
            for p in psutil.Process().children(recursive=True):
                try:
                    if "--type=renderer" in " ".join(p.cmdline()):
                        rss = max(rss, p.memory_info().rss)
                except psutil.Error:
                    continue
            self.peaks[self.case] = max(self.peaks.get(self.case, 0), rss)
            self._done.wait(0.02)

    def __enter__(self) -> RendererMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()


def base_states_qk() -> AttentionTrace:
    """A one-layer trace with q and k (the neuron view's)."""
    torch.manual_seed(0)
    return AttentionTrace.from_module(MultiHeadAttention(8, 2), torch.randn(1, 4, 8), list("abcd"))


def run_cases(
    page: Any, cases: list[Case], *, keep: bool = False
) -> tuple[list[Any], dict[int, int]]:
    """Open the host on ``cases``, render each in turn; each outcome and each case's memory peak.

    Between cases the page's garbage is collected (CDP), so a case's peak is its own.
    """
    host = HOST.replace("SETTLE_MS", str(SETTLE_MS)).replace("FOREIGN", json.dumps(FOREIGN))
    files = {
        "host.html": (host, "text/html"),
        "loader.js": (static_file("loader.js").read_text(), "text/javascript"),
        "widget.css": (static_file("widget.css").read_text(), "text/css"),
        "states.json": (states_json(cases), "application/json"),
    }

    serve_files(page, ORIGIN, files)
    cdp = page.context.new_cdp_session(page)
    found = []
    with RendererMemory() as memory:
        page.goto(f"{ORIGIN}/host.html")
        page.wait_for_function("() => document.body.dataset.ready === 'true'", timeout=30_000)
        for i in range(len(cases)):
            if not keep:
                cdp.send("HeapProfiler.collectGarbage")
            memory.case = i
            found.append(page.evaluate("([i, keep]) => window.step(i, keep)", [i, keep]))
    return found, memory.peaks


def misses(cases: list[Case], found: list[dict[str, Any]]) -> list[str]:
    """Each case whose widget did not end as expected, in time, or made an element from data."""
    wrong = []
    for case, got in zip(cases, found, strict=True):
        ok = {
            "invalid": got["kind"] == "invalid",
            "message": got["kind"] == "message",
            "drawn": got["kind"] == "drawn",
            "either": got["kind"] in ("drawn", "message"),
        }[case.expect]
        if case.says not in got["said"] or got["threw"] or got["made"] or got["ms"] > SETTLE_MS:
            ok = False
        if any(bidi_leaks(text) for text in got["said"].split(" | ")):
            ok = False  # a message quoting crafted text must keep its bidi controls inside
        if not ok:
            wrong.append(f"{case.name}: expected {case.expect} {case.says!r}, got {got}")
    return wrong


def test_every_crafted_state_ends_in_a_drawing_or_a_message(page: Any) -> None:
    started = time.monotonic()
    cases = all_cases()
    page.add_init_script(
        "for (const n of ['alert', 'confirm', 'prompt', 'print'])"
        f" window[n] = () => {{ window.{PWNED} = n; }};"
    )
    found, peaks = run_cases(page, cases)
    wrong = misses(cases, found)
    assert wrong == [], "\n".join(wrong)
    # Nothing ran from data (no dialog, no foreign module's code).
    assert page.evaluate(f"() => window.{PWNED} ?? null") is None
    assert page.evaluate("() => globalThis.foreignRan ?? null") is None
    counts = ", ".join(f"{k} {sum(f['kind'] == k for f in found)}" for k in KINDS)
    slowest = max(range(len(cases)), key=lambda i: found[i]["ms"])
    largest = max(range(len(cases)), key=lambda i: peaks.get(i, 0))
    print(
        f"\nfuzz: {len(cases)} cases ({counts}); slowest {found[slowest]['ms']:.0f} ms"
        f" ({cases[slowest].name}); renderer peak {peaks[largest] / 2**20:.0f} MiB"
        f" ({cases[largest].name}); {time.monotonic() - started:.1f} s"
    )
    heavy = [
        f"{cases[i].name}: {p / 2**20:.0f} MiB" for i, p in peaks.items() if p > RENDERER_BOUND
    ]
    assert heavy == []


def test_the_page_budget_refuses_the_thirteenth_large_chunk(page: Any) -> None:
    """Thirteen neuron views whose saved q and k decode to 122 MiB each: twelve fit 1.5 GiB."""
    started = time.monotonic()
    n, d = 16_000, 1_000  # q and k f32 (16000, 1000) each: 122 MiB together
    state = widget_state(AttentionWidget(base_states_qk(), view="neuron"))
    stream = state["_meta"]["streams"]["self"]
    state["_meta"]["sides"] = {"source": {"labels": ["t"] * n}, "target": None}
    stream.update(q_len=n, k_len=n, top_k=64, thumb_rows=64, thumb_cols=64, head_dim=d)
    shape = [n, d]
    arrays = [
        {"name": "q", "dtype": "f32", "shape": shape},
        {"name": "k", "dtype": "f32", "shape": shape},
        {"name": "scaling", "dtype": "f32", "shape": [1]},
        {"name": "kv_head", "dtype": "u32", "shape": [1]},
    ]
    size = 2 * 4 * n * d + 8 + 4  # q, k, scaling (padded to 8), kv_head
    state["_saved"] = {"qk:self:0:0": {"arrays": arrays, "data": deflate(zeros(size))}}
    state.update(view="neuron", layer=0, head=0, query=0)
    cases = [Case(f"widget {i}", state, "either") for i in range(13)]
    found, peaks = run_cases(page, cases, keep=True)
    refused = [f for f in found if "would pass the page's budget of 1536 MiB" in f["said"]]
    print(
        f"\nbudget: {len(cases)} x {size / 2**20:.0f} MiB chunks, {len(refused)} refused;"
        f" renderer peak {max(peaks.values()) / 2**20:.0f} MiB; {time.monotonic() - started:.1f} s"
    )
    assert misses(cases, found) == []
    assert len(refused) == 1, found
    assert max(peaks.values()) < BUDGET_RENDERER_BOUND


NULL = object()
"""What an edit returns for a JSON ``null`` (``None`` means: changed in place)."""


def crafted_page(text: str, name: str, edit: Any) -> str:
    """The page with its JSON script ``name`` passed through ``edit``; a text edit is the body."""
    found = re.search(
        rf'(<script type="application/json" id="{name}">)(.*?)(</script>)', text, re.S
    )
    assert found, name
    if isinstance(edit, str):
        body = edit
    else:
        value = json.loads(found.group(2))
        changed = edit(value)
        value = None if changed is NULL else value if changed is None else changed
        body = json.dumps(value).replace("<", "\\u003c")
    return text[: found.start(2)] + body + text[found.end(2) :]


# What the page shows: the alert, a message, or a view that drew.
PAGE_KIND = """() => {
  const el = document.body;
  if (el.querySelector('[data-testid="state-invalid"]')) return ["invalid", el.innerText];
  const said = [...el.querySelectorAll('[data-kind="error"], [role="alert"]')]
    .filter((e) => !e.closest("[hidden]") && e.textContent.trim());
  if (said.length) return ["message", said.map((e) => e.textContent).join(" | ")];
  const view = el.querySelector(".attnscope-view");
  return view?.dataset.ready === "true" ? ["drawn", ""] : null;
}"""


def test_exported_pages_with_crafted_state(page: Any, tmp_path: Path) -> None:
    """The exported page (save_html) reads the same untrusted state: the same checks hold."""
    weights = np.full((2, 3, 4, 4), 0.25, np.float32)
    saved = save_html(AttentionTrace(["[CLS]", "a", "b", "c"], weights), tmp_path / "page.html")
    text = saved.read_text("utf-8")

    def stream(**fields: Any) -> Any:
        return lambda s: s["_meta"]["streams"]["self"].update(fields)

    def rename(c: dict[str, Any]) -> None:
        for a in c["top:self:0"]["arrays"]:
            a["name"] += "s"

    bomb = deflate(zeros(64 << 20))
    cases: dict[str, tuple[str, Any, str, str]] = {
        "num_heads 1e9": ("attnscope-state", stream(num_heads=10**9), "invalid", "past the cap"),
        "q_len 1e9": ("attnscope-state", stream(q_len=10**9), "invalid", "past the cap"),
        "layers 200000": (
            "attnscope-state",
            stream(layers=list(range(200_000))),
            "invalid",
            "layers has 200000 entries",
        ),
        "state not JSON": ("attnscope-state", "{", "message", "JSON"),
        "chunks null": ("attnscope-chunks", lambda c: NULL, "message", ""),
        "chunks a list": ("attnscope-chunks", lambda c: [1, 2], "message", ""),
        "arrays renamed": ("attnscope-chunks", rename, "message", 'has no array "weight"'),
        "bomb": (
            "attnscope-chunks",
            lambda c: c["top:self:0"].update(data=bomb),
            "message",
            "inflates past",
        ),
    }
    slowest = 0.0
    for i, (name, (script, edit, expect, says)) in enumerate(cases.items()):
        path = tmp_path / f"{i}.html"
        path.write_text(crafted_page(text, script, edit), "utf-8")
        started = time.monotonic()
        page.goto(path.as_uri())
        got = page.wait_for_function(PAGE_KIND, timeout=SETTLE_MS).json_value()
        slowest = max(slowest, time.monotonic() - started)
        assert got[0] == expect, (name, got)
        assert says in got[1], (name, got)
    print(f"\npages: {len(cases)} crafted exported pages, slowest {slowest:.1f} s")
