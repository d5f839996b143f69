"""Time views in headless Debian chromium, from file:// pages, with the network blocked.

Each tool's view is timed twice on one load: when its page script says the
view is built ("DOM ready": the tool's own predicate, polled every animation
frame) and when the first frame with it has been painted (two
``requestAnimationFrame`` callbacks after that: the second runs only once the
frame holding the view was produced). A tool whose DOM is huge (bertviz's
SVG lines) spends seconds between the two in style, layout and paint.

bertviz pages load require.js, d3 5.7.0 and jQuery from cdnjs. To measure
bertviz at all offline, those three URLs are answered from local copies of
the same libraries, fetched once with ``npm pack`` into a cache folder
(jQuery 2.0.0 is not on npm: 2.1.0 stands in). Every other request that is
not local is aborted and reported, as in the browser tests.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))

from browser_kit import launch_chromium, new_watched_page

from bench_views import View

CACHE = Path(os.environ.get("ATTNSCOPE_BENCH_CACHE", Path.home() / ".cache" / "attnscope-bench"))
CDN = "https://cdnjs.cloudflare.com/ajax/libs"
# CDN URL -> (npm package spec, file inside the package tarball)
VENDORED = {
    f"{CDN}/require.js/2.3.6/require.min.js": ("requirejs@2.3.6", "package/require.js"),
    f"{CDN}/d3/5.7.0/d3.min.js": ("d3@5.7.0", "package/dist/d3.min.js"),
    f"{CDN}/jquery/2.0.0/jquery.min.js": ("jquery@2.1.0", "package/dist/jquery.min.js"),
}
ONE_RUN_ENOUGH_MS = 10_000  # a step slower than this is measured once, not repeated


def vendored_file(spec: str, member: str) -> Path:
    """The local copy of ``member`` from npm package ``spec``, packed once into the cache."""
    name, version = spec.rsplit("@", 1)
    target = CACHE / f"{name}-{version}" / Path(member).name
    if target.exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    packed = subprocess.run(
        ["npm", "pack", spec, "--silent", "--pack-destination", str(CACHE)],
        capture_output=True,
        text=True,
        check=True,
    )
    tarball = CACHE / packed.stdout.strip().splitlines()[-1]
    with tarfile.open(tarball) as archive:
        source = archive.extractfile(member)
        if source is None:
            raise RuntimeError(f"{member} missing from {tarball}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read())
    return target


def _fulfil_with(path: Path) -> Any:
    def fulfil(route: Any) -> None:
        route.fulfill(path=str(path))

    return fulfil


def painted_js(ready_js: str) -> str:
    """A predicate polled every frame: ``[ready, painted]`` once painted, else false.

    ``ready_js`` returns ``performance.now()`` once the view is built; two
    animation frames later the frame that holds it has been painted.
    """
    return f"""() => {{
        const s = (window.__benchPaint ??= {{}});
        if (s.painted) return [s.ready, s.painted];
        if (!s.ready) {{
            const ready = ({ready_js})();
            if (ready) {{
                s.ready = ready;
                requestAnimationFrame(() => requestAnimationFrame(() => {{
                    s.painted = performance.now();
                }}));
            }}
        }}
        return false;
    }}"""


def median_ms(values: list[float]) -> float:
    return float(statistics.median(values))


@dataclass
class Timing:
    """What chromium measured for one view."""

    drawn_ms: list[float] = field(default_factory=list)  # first painted frame
    ready_ms: list[float] = field(default_factory=list)  # the view's DOM built
    switch_ms: list[float] = field(default_factory=list)
    drawn_status: str | None = None  # why drawn_ms is empty
    switch_status: str | None = None
    page_problems: list[str] = field(default_factory=list)
    probes: dict[str, str] = field(default_factory=dict)  # interaction -> "12 ms" or why not


class Chromium:
    """One headless chromium for the whole benchmark."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self.browser = launch_chromium(self._playwright)
        self.assets = {url: vendored_file(*where) for url, where in VENDORED.items()}

    def close(self) -> None:
        self.browser.close()
        self._playwright.stop()

    def _page(self) -> tuple[Any, Any, Any]:
        context, page, watch = new_watched_page(self.browser)
        for url, path in self.assets.items():  # routes added later take precedence
            context.route(url, _fulfil_with(path))
        return context, page, watch

    def measure(self, view: View, path: Path, *, repeats: int, limit_s: float) -> Timing:
        """Load ``path`` up to ``repeats`` times until drawn; switch up to ``repeats`` times.

        A step slower than 10 s is measured once; a step over the limit ends the
        view's measurement, and its page's script is stopped so it can be closed.
        """
        timing = Timing()
        for attempt in range(repeats):
            context, page, watch = self._page()
            # Opened while the page is idle: a renderer stuck in a long task still
            # answers Runtime.terminateExecution (V8 handles it off the main thread).
            cdp = context.new_cdp_session(page)
            stuck = False
            try:
                times = self._drawn(page, path, view, limit_s)
                drawn = None if times is None else times[1]
                if times is None:
                    timing.drawn_status = self._why(watch, f"> {limit_s:g} s")
                    stuck = True
                else:
                    timing.ready_ms.append(times[0])
                    timing.drawn_ms.append(times[1])
                    if attempt == 0:
                        stuck = not self._switches(page, view, timing, repeats, limit_s)
                        stuck = stuck or not self._probes(page, view, timing, limit_s)
            finally:
                timing.page_problems += [
                    p for p in watch.problems() if p not in timing.page_problems
                ]
                if stuck:
                    cdp.send("Runtime.terminateExecution")
                context.close()
            if stuck or drawn is None or drawn > ONE_RUN_ENOUGH_MS:
                break
        return timing

    @staticmethod
    def _why(watch: Any, default: str) -> str:
        if watch.page_errors:
            return f"failed: {watch.page_errors[0][:120]}"
        return default

    @staticmethod
    def _drawn(page: Any, path: Path, view: View, limit_s: float) -> tuple[float, float] | None:
        """(DOM ready, first painted frame) in ms since navigation, or None past the limit."""
        from playwright.sync_api import Error as PlaywrightError

        try:
            page.goto(path.as_uri(), wait_until="commit", timeout=limit_s * 1000)
            handle = page.wait_for_function(
                painted_js(view.drawn_js), polling="raf", timeout=limit_s * 1000
            )
            ready, painted = handle.json_value()
            return float(ready), float(painted)
        except PlaywrightError:
            return None

    @staticmethod
    def _run(page: Any, action: str, limit_s: float) -> dict[str, Any] | None:
        """Run one ``async () => void`` action; its time or error, or None past the limit."""
        from playwright.sync_api import Error as PlaywrightError

        try:
            page.evaluate(
                # Started from a timer so that evaluate returns at once: a view
                # whose handler blocks the page for minutes still meets the limit.
                """(source) => {
                    window.__benchSwitch = null;
                    const act = eval(`(${source})`);
                    setTimeout(() => {
                        const t0 = performance.now();
                        act().then(
                            () => { window.__benchSwitch = {ms: performance.now() - t0}; },
                            (e) => { window.__benchSwitch = {error: String(e)}; });
                    }, 0);
                }""",
                action,
            )
            handle = page.wait_for_function(
                "() => window.__benchSwitch", polling="raf", timeout=limit_s * 1000
            )
        except PlaywrightError:
            return None
        result: dict[str, Any] = handle.json_value()
        return result

    @classmethod
    def _probes(cls, page: Any, view: View, timing: Timing, limit_s: float) -> bool:
        """Time each of the view's probes once; False when one ran over the limit."""
        for name, action in view.probes.items():
            result = cls._run(page, action, limit_s)
            if result is None:
                timing.probes[name] = f"> {limit_s:g} s"
                return False
            if "error" in result:
                timing.probes[name] = f"failed: {result['error'][:80]}"
            else:
                timing.probes[name] = f"{result['ms']:.0f} ms"
        return True

    @classmethod
    def _switches(cls, page: Any, view: View, timing: Timing, repeats: int, limit_s: float) -> bool:
        """Time the view's switches; False when one ran over the limit (the page is busy)."""
        for action in view.switch_js[:repeats]:
            result = cls._run(page, action, limit_s)
            if result is None:
                timing.switch_status = f"> {limit_s:g} s"
                return False
            if "error" in result:
                timing.switch_status = f"failed: {result['error'][:120]}"
                return True
            timing.switch_ms.append(float(result["ms"]))
            if result["ms"] > ONE_RUN_ENOUGH_MS:
                return True
        return True
