"""Produce each tool's view of one run, and say how the browser can tell it is drawn.

A :class:`View` holds the page a tool produces (its bytes reach the browser),
the Python time it took, and two pieces of page script: a predicate that
returns ``performance.now()`` once the view is drawn, and an action that
switches what is shown (the layer, or the tool's nearest equivalent) and
resolves after the next painted frame.

How "drawn" is detected, from the HTML each peer produces:
- bertviz head_view: the ``<g id="attention">`` group holds heads x n x n
  ``<line>`` elements (d3 creates them in one task);
- bertviz model_view: the SVG holds layers x heads x n x n ``<line>``s;
- CircuitsVis attention_heads: heads + 1 ``<canvas>`` (thumbnails + focus),
  each with painted pixels (React mounts the canvases before they are painted);
- attnscope: the view it opens on says ``data-ready="true"`` and ``data-draws >= 1``.

The browser then waits two animation frames for the painted frame
(bench_browser.py); switches and other interactions likewise resolve two
frames after the view has drawn again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_inputs import Run

ATTNSCOPE_HEAD_ONLY = "attnscope head view page"
ATTNSCOPE = "attnscope page, all views"
ATTNSCOPE_HEAD = '[data-testid="head-view"]'
# Two animation frames: the second callback runs once the frame after a change is painted.
NEXT_FRAME = "await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));"
ONE_FRAME = "await new Promise((r) => requestAnimationFrame(r));"


@dataclass
class View:
    """One tool's view of one run."""

    tool: str
    run: Run
    html: bytes | None = None
    python_s: float | None = None
    values: int = 0  # attention values the page carries (for bytes per value)
    drawn_js: str = ""  # () => performance.now() once drawn, else false
    switch_js: list[str] = field(default_factory=list)  # async () => void, one per switch
    switch_what: str = ""
    status: str | None = None  # set when the view could not be produced
    extra: dict[str, int] = field(default_factory=dict)  # other byte counts worth a row note
    notes: list[str] = field(default_factory=list)
    # Other interactions, each timed once after the switches: name -> async () => void.
    probes: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # named Python steps

    @property
    def size(self) -> int | None:
        return None if self.html is None else len(self.html)


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def _cycle(count: int, switches: int) -> list[int]:
    """``switches`` targets, each different from the one before (the view opens on 0)."""
    return [(i + 1) % max(count, 2) for i in range(switches)]


def _layer_switches(run: Run, count: int, select: str) -> list[str]:
    targets = _cycle(run.num_layers, count)
    return [
        f"""async () => {{
            const s = document.querySelector({select!r});
            s.value = "{layer}";
            s.dispatchEvent(new Event("change", {{bubbles: true}}));
            {NEXT_FRAME}
        }}"""
        for layer in targets
    ]


def bertviz_head(run: Run, switches: int) -> View:
    from bertviz import head_view

    view = View("bertviz head_view", run, values=run.values)
    html, view.python_s = timed(head_view, run.attention, run.tokens, html_action="return")
    view.html = html.data.encode()
    lines = run.num_heads * run.num_tokens**2
    view.drawn_js = f"""() => {{
        const g = document.querySelector("#attention");
        return !!g && g.getElementsByTagName("line").length >= {lines} && performance.now();
    }}"""
    view.switch_js = _layer_switches(run, switches, "select#layer")
    view.switch_what = "layer (select)"
    return view


def bertviz_model(run: Run, switches: int) -> View:
    from bertviz import model_view

    view = View("bertviz model_view", run, values=run.values)
    html, view.python_s = timed(model_view, run.attention, run.tokens, html_action="return")
    view.html = html.data.encode()
    lines = run.values
    view.drawn_js = f"""() => {{
        const svg = document.querySelector("#vis svg");
        return !!svg && svg.getElementsByTagName("line").length >= {lines} && performance.now();
    }}"""
    # Clicking a thumbnail opens (or closes) its detail: the model view's own interaction.
    view.switch_js = [
        f"""async () => {{
            const cell = document.querySelector("#attn_background_{layer}_0");
            const click = new MouseEvent("click", {{bubbles: true}});
            cell.parentNode.lastElementChild.dispatchEvent(click);
            {NEXT_FRAME}
        }}"""
        for layer in _cycle(run.num_layers, switches)
    ]
    view.switch_what = "cell click (detail)"
    return view


def circuitsvis_heads(run: Run, switches: int) -> View:
    from circuitsvis.attention import attention_heads

    view = View("circuitsvis attention_heads", run, values=run.num_heads * run.num_tokens**2)
    layer0 = run.attention[0][0]
    rendered, view.python_s = timed(attention_heads, attention=layer0, tokens=run.tokens)
    # local_src inlines the JS bundle; str() would point at a CDN.
    view.html = rendered.local_src.encode()
    # React mounts the canvases before it paints them: wait for pixels in every one
    # (a sample of the alpha channel).
    view.drawn_js = f"""() => {{
        const painted = (c) => {{
            const ctx = c.width && c.height ? c.getContext("2d") : null;
            if (!ctx) return false;
            const px = ctx.getImageData(0, 0, c.width, c.height).data;
            for (let i = 3; i < px.length; i += 4 * 7) if (px[i] !== 0) return true;
            return false;
        }};
        const canvases = [...document.querySelectorAll("canvas")];
        return canvases.length >= {run.num_heads + 1} && canvases.every(painted)
            && performance.now();
    }}"""
    view.switch_js = [
        f"""async () => {{
            const thumb = document.querySelectorAll("canvas")[{head}];
            thumb.dispatchEvent(new MouseEvent("click", {{bubbles: true}}));
            {NEXT_FRAME}
        }}"""
        for head in _cycle(run.num_heads, switches)
    ]
    view.switch_what = "head click (one layer per page)"
    bundle = len(rendered.local_src) - len(rendered.cdn_src)
    view.notes.append(f"one layer per page ({run.num_layers} for all layers)")
    view.notes.append(f"page inlines its ≈{bundle / 1e6:.1f} MB JS bundle")
    return view


# attnscope: imported lazily, so the peers' columns run before the product exists.
def attnscope_capture(run: Run, layers: list[int] | None = None) -> tuple[Any, float]:
    """``attnscope.capture`` on the run's text; returns (trace, seconds)."""
    import attnscope

    kwargs: dict[str, Any] = {"tokenizer": run.tokenizer}
    if layers is not None:
        kwargs["layers"] = layers
    return timed(attnscope.capture, run.model, run.text, **kwargs)


def widget_first_view_bytes(trace: Any, keys: list[str]) -> int:
    """Bytes the widget sends for ``keys`` (docs/protocol.md messages), without a kernel."""
    import attnscope

    replies = attnscope.AttentionWidget(trace).answer({"type": "request", "keys": keys})
    if not replies:
        raise RuntimeError(f"the widget answered nothing to a request for {keys}")
    return sum(len(repr(c)) + sum(memoryview(b).nbytes for b in bufs) for c, bufs in replies)


def attnscope_head(
    run: Run,
    switches: int,
    folder: Path,
    layers: list[int] | None = None,
    page_max_bytes: int | None = None,
    views: tuple[str, ...] = ("head", "model", "neuron"),
) -> View:
    """attnscope's exported page opened on the head view, plus the widget's first-view bytes.

    ``views=("head",)`` is the like-for-like page for bertviz's head_view (which
    holds only that view); the default holds all three. ``page_max_bytes``
    overrides ``save_html``'s budget for embedded data.
    """
    view = View(ATTNSCOPE if len(views) == 3 else ATTNSCOPE_HEAD_ONLY, run)
    try:
        import attnscope

        trace, capture_s = attnscope_capture(run, layers)
        path = folder / f"attnscope-{run.model_name}-{run.num_tokens}-{len(views)}.html"
        budget = {} if page_max_bytes is None else {"max_bytes": page_max_bytes}
        _, save_s = timed(attnscope.save_html, trace, path, views=views, **budget)
        view.html = path.read_bytes()
        head_bytes, widget_s = timed(widget_first_view_bytes, trace, ["top:self:0"])
        view.extra["widget chunks, head view"] = head_bytes
        view.extra["widget chunks, model view"] = widget_first_view_bytes(trace, ["thumbs:self"])
    except ImportError as error:  # no package or no JS bundle: say so in the row
        view.status = f"not available: {error}"
        return view
    shown = run.num_layers if layers is None else len(layers)
    view.values = shown * run.num_heads * run.num_tokens**2
    # Capture runs the model once; what it adds on top of the forward pass is its cost.
    view.python_s = max(capture_s - run.forward_s, 0.0) + save_s
    view.seconds = {"capture": capture_s, "save_html": save_s}
    view.notes.append(
        f"capture {capture_s:.2f} s incl. forward, save_html {save_s:.2f} s, "
        f"widget + first head-view chunk {widget_s:.2f} s"
    )
    attnscope_page_js(view, views, shown, switches)
    return view


ROOTS = {
    "head": ATTNSCOPE_HEAD,
    "model": '[data-testid="model-view"]',
    "neuron": '[data-testid="neuron-view"]',
}


def attnscope_page_js(view: View, views: tuple[str, ...], shown: int, switches: int) -> None:
    """How the browser tells an attnscope page is drawn, switches layer and opens views.

    The page opens on ``views[0]``: drawn once that view says ``data-ready`` and
    has drawn once (the model view: every cell of the grid, in one paint).
    Layer switches and probes exist when the page opens on the head view.
    """
    root = ROOTS[views[0]]
    view.drawn_js = f"""() => {{
        const el = document.querySelector({root!r});
        return !!el && el.dataset.ready === "true" && Number(el.dataset.draws) >= 1
            && performance.now();
    }}"""
    if views[0] != "head":
        return
    # The layer <select> fires the same store update a user's choice does; a switch is
    # done when the head view has drawn again with the new layer's data in (or fails
    # with the message the view shows).
    view.switch_js = [
        f"""async () => {{
            const el = document.querySelector({ATTNSCOPE_HEAD!r});
            const before = Number(el.dataset.draws);
            const select = document.querySelector('[data-testid="layer-select"]');
            select.value = "{layer}";
            select.dispatchEvent(new Event("change", {{bubbles: true}}));
            while (Number(el.dataset.draws) <= before || el.dataset.ready !== "true") {{
                // A layer the page left out (to bound its size) draws an error instead.
                const error = el.querySelector('.attnscope-status[data-kind="error"]');
                if (error && !error.hidden && Number(el.dataset.draws) > before) {{
                    throw new Error(error.textContent);
                }}
                {ONE_FRAME}
            }}
            {NEXT_FRAME}
        }}"""
        for layer in _cycle(shown, switches)
    ]
    view.switch_what = "layer (select)"
    view.probes = attnscope_probes(views)


def _redrawn(root: str, act: str) -> str:
    """``async () => void``: run ``act``, resolve once ``root`` has drawn again and painted."""
    return f"""async () => {{
        const el = () => document.querySelector({root!r});
        const before = el() ? Number(el().dataset.draws) : 0;
        {act}
        while (!el() || Number(el().dataset.draws) <= before || el().dataset.ready !== "true") {{
            const error = el() && el().querySelector('.attnscope-status[data-kind="error"]');
            if (error && !error.hidden) throw new Error(error.textContent);
            {ONE_FRAME}
        }}
        {NEXT_FRAME}
    }}"""


def attnscope_probes(views: tuple[str, ...]) -> dict[str, str]:
    """Hover, head toggle and opening the other views, each timed until drawn."""
    probes = {
        "hover a token": _redrawn(
            ATTNSCOPE_HEAD,
            """const tok = document.querySelector('[data-side="query"] [data-i="1"]');
            tok.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));""",
        ),
        "toggle a head": _redrawn(
            ATTNSCOPE_HEAD,
            """document.querySelector('.attnscope-swatch[data-head="1"]').click();""",
        ),
    }
    if "model" in views:
        probes["open the model view"] = _redrawn(
            '[data-testid="model-view"]',
            """document.querySelector('[data-testid="tab-model"]').click();""",
        )
    if "neuron" in views:
        # On the layer the page was saved on: a long page's budget keeps only that
        # layer's q/k (the live widget serves any layer on request).
        probes["open the neuron view (saved layer)"] = _redrawn(
            '[data-testid="neuron-view"]',
            """const select = document.querySelector('[data-testid="layer-select"]');
            select.value = "0";
            select.dispatchEvent(new Event("change", {bubbles: true}));
            document.querySelector('[data-testid="tab-neuron"]').click();""",
        )
    return probes
