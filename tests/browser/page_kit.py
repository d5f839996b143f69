"""Helpers for driving the exported page (``save_html``) in the offline chromium.

Built on ``browser_kit``'s readiness contract (``data-ready`` / ``data-draws``
on each ``.attnscope-view``): an action is followed by a wait for the view's
next draw, never by a sleep. Pixels are read back with ``getImageData`` from
the views' own canvases (a page opened from ``file://`` draws no images, so
the canvases are never tainted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from browser_kit import draw_count, wait_for_next_draw, wait_for_widget

ROOT = '[data-testid="attnscope-root"]'
VIEW_ROOTS = {
    "head": '[data-testid="head-view"]',
    "model": '[data-testid="model-view"]',
    "neuron": '[data-testid="neuron-view"]',
}
CANVASES = {
    "head": '[data-testid="head-canvas"]',
    "model": '[data-testid="model-canvas"]',
    "neuron": '[data-testid="neuron-q"]',
}

# Relative luminance (WCAG: 0 black .. 1 white) of an sRGB colour given as 0..255 channels.
_LUMINANCE = """const luminance = (r, g, b) => {
        const lin = (v) => (v <= 10.02 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
        return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };"""

# One pass over a canvas's pixels (or a rectangle of them): a hash to compare
# two draws, how many pixels are painted (alpha > 0), and the mean luminance of
# their colours (alpha ignored).
_CANVAS_STATS = (
    "(el, rect) => {"
    + _LUMINANCE
    + """
    const [x, y, w, h] = rect ?? [0, 0, el.width, el.height];
    const px = el.getContext("2d").getImageData(x, y, w, h).data;
    let hash = 2166136261, painted = 0, lum = 0;
    for (let i = 0; i < px.length; i++) hash = Math.imul(hash ^ px[i], 16777619) >>> 0;
    for (let i = 0; i < px.length; i += 4) {
        if (px[i + 3] === 0) continue;
        painted++;
        lum += luminance(px[i], px[i + 1], px[i + 2]);
    }
    return { hash, painted, total: px.length / 4, luminance: painted ? lum / painted : null };
}"""
)

_CSS_LUMINANCE = (
    "(el, prop) => {"
    + _LUMINANCE
    + """
    const [r, g, b] = getComputedStyle(el)[prop].match(/[\\d.]+/g).map(Number);
    return luminance(r, g, b);
}"""
)


@dataclass(frozen=True)
class CanvasStats:
    """What a canvas (or a rectangle of it) holds now."""

    hash: int
    painted: int
    total: int
    luminance: float | None


def canvas_stats(canvas: Any, rect: tuple[int, int, int, int] | None = None) -> CanvasStats:
    """Pixels of ``canvas`` (a locator of a ``<canvas>``), optionally of ``rect`` = x, y, w, h."""
    found = canvas.evaluate(_CANVAS_STATS, list(rect) if rect else None)
    return CanvasStats(**found)


# Where the page computed each chunk it derives from q and k: the marks js/derive_off_thread.ts
# leaves ("attnscope-derive-worker" or "-main", the chunk key as detail).
_DERIVED = """() => performance.getEntriesByType("mark")
    .filter((m) => m.name.startsWith("attnscope-derive-"))
    .map((m) => [m.name.slice("attnscope-derive-".length), String(m.detail)])"""


def derived_where(page: Any) -> list[tuple[str, str]]:
    """``(where, key)`` for each chunk the page derived so far; ``where`` is worker or main."""
    return [(where, key) for where, key in page.evaluate(_DERIVED)]


def css_luminance(element: Any, prop: str = "backgroundColor") -> float:
    """Relative luminance (0 black .. 1 white) of a computed colour of ``element``."""
    return float(element.evaluate(_CSS_LUMINANCE, prop))


class ExportedPage:
    """The exported page in one Playwright page: open it, switch views, act and wait."""

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.url = url

    def open(self) -> ExportedPage:
        """Load the page and wait for the first view (the head view) to draw."""
        self.page.goto(self.url)
        wait_for_widget(self.page, root=VIEW_ROOTS["head"])
        return self

    @property
    def root(self) -> Any:
        """The widget element (header, tabs and the current view)."""
        return self.page.locator(ROOT)

    def view(self, name: str) -> Any:
        """Locator of view ``name`` (``head``, ``model`` or ``neuron``)."""
        return self.page.locator(VIEW_ROOTS[name])

    def canvas(self, name: str) -> Any:
        """The canvas each view draws into (the neuron view: its q strip)."""
        return self.page.locator(CANVASES[name])

    def show(self, name: str) -> Any:
        """Click the view's tab and wait until it is ready and has drawn."""
        self.page.click(f'[data-testid="tab-{name}"]')
        return wait_for_widget(self.page, root=VIEW_ROOTS[name])

    def draws(self, name: str) -> int:
        """How many draws view ``name`` has finished."""
        return draw_count(self.page, root=VIEW_ROOTS[name])

    def redraw_after(self, name: str, action: Callable[[], Any]) -> None:
        """Run ``action`` and wait until view ``name`` has drawn again (and is ready)."""
        before = self.draws(name)
        action()
        wait_for_next_draw(self.page, before, root=VIEW_ROOTS[name])

    def picture(self) -> WidgetPicture:
        """The widget as far down as its content goes, for ``Screenshots.take``."""
        return WidgetPicture(self.page)

    def attr(self, name: str, attribute: str) -> str | None:
        """An attribute of view ``name``'s element (``data-lines``, ``data-hover-dim`` ...)."""
        return self.view(name).get_attribute(attribute)


# From the widget's top left to the end of its content (the exported page
# stretches the widget to the window's height), plus its padding.
_CONTENT_BOX = """(root) => {
    const r = root.getBoundingClientRect();
    const host = root.querySelector(".attnscope-viewhost").getBoundingClientRect();
    const pad = parseFloat(getComputedStyle(root).paddingBottom);
    return { x: r.x, y: r.y, width: r.width, height: host.bottom + pad - r.y };
}"""


class WidgetPicture:
    """A screenshot target: the widget cropped to its content (what ``take`` calls)."""

    def __init__(self, page: Any) -> None:
        self.page = page

    def screenshot(self, path: str) -> bytes:
        """Write the PNG of the widget's content box to ``path``."""
        clip = self.page.locator(ROOT).evaluate(_CONTENT_BOX)
        return self.page.screenshot(path=path, clip=clip)
