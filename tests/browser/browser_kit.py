"""Offline headless chromium for the browser tests and the benchmark.

Playwright drives Debian's chromium (its own browser download does not work
here). Every request that does not go to 127.0.0.1 or a local scheme is
aborted, so a stray CDN import fails loudly instead of silently hanging, and
every console error or uncaught exception is collected so the test can fail
on it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
]
LOCAL_SCHEMES = {"file", "data", "blob", "about"}
LOCAL_HOSTS = {"127.0.0.1"}
DEFAULT_VIEW = ".attnscope-view"  # the front end's view elements carry data-ready/data-draws


def chromium_path() -> str | None:
    """Debian's chromium, or None when it is not installed."""
    return shutil.which("chromium")


def launch_chromium(playwright: Any) -> Any:
    """Start headless Debian chromium with the flags that keep it quiet offline."""
    path = chromium_path()
    if path is None:
        raise RuntimeError("chromium is not on PATH: `apt-get install -y chromium`")
    return playwright.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_FLAGS)


def is_local_url(url: str) -> bool:
    """True for file://, data:, blob:, about: and http(s)/ws on 127.0.0.1."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme in {"http", "https", "ws", "wss"} and parts.hostname in LOCAL_HOSTS


def _with_origin(error: Any) -> str:
    """An uncaught exception's message and the first two frames of its stack (where it rose)."""
    stack = str(getattr(error, "stack", "") or "")
    frames = [line.strip() for line in stack.splitlines() if line.strip().startswith("at ")]
    return f"{error} [{' < '.join(frames[:2])}]" if frames else str(error)


@dataclass
class PageWatch:
    """What a page did wrong: console errors, uncaught exceptions, blocked requests.

    ``allowed`` holds substrings of console errors that a test has explained
    (each with a reason in the test); everything else counts.
    """

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        """Start recording on ``page``."""
        page.on("console", self._on_console)
        page.on("pageerror", lambda exc: self.page_errors.append(_with_origin(exc)))

    def _on_console(self, message: Any) -> None:
        if message.type == "error":
            location = message.location or {}
            where = location.get("url", "")
            self.console_errors.append(f"{message.text} ({where})" if where else message.text)

    def block_network(self, target: Any) -> None:
        """Abort every request from ``target`` (page or context) that is not local."""

        def handle(route: Any) -> None:
            url = route.request.url
            if is_local_url(url):
                route.continue_()
            else:
                self.blocked.append(url)
                route.abort("blockedbyclient")

        target.route("**/*", handle)

    def problems(self) -> list[str]:
        """Every console error, page error and blocked request not explicitly allowed."""
        found = [f"console error: {e}" for e in self.console_errors]
        found += [f"uncaught exception: {e}" for e in self.page_errors]
        found += [f"blocked non-local request: {u}" for u in self.blocked]
        return [p for p in found if not any(a in p for a in self.allowed)]


def serve_files(page: Any, origin: str, files: dict[str, tuple[str, str]]) -> None:
    """Answer requests under ``origin`` from ``files`` (name: body, content type); abort others.

    A query string is ignored. The origin is never listened on: nothing else answers.
    """

    def handle(route: Any) -> None:
        name = route.request.url.removeprefix(origin + "/").split("?")[0]
        if name not in files:
            route.abort()
            return
        body, kind = files[name]
        route.fulfill(status=200, body=body, content_type=kind)

    page.route(f"{origin}/**", handle)


def new_watched_page(
    browser: Any, watch: PageWatch | None = None, **context_options: Any
) -> tuple[Any, Any, PageWatch]:
    """A fresh context and page with network blocking and error recording.

    Returns ``(context, page, watch)``; close the context when done.
    """
    options = {"viewport": {"width": 1280, "height": 900}, "device_scale_factor": 1}
    options.update(context_options)
    context = browser.new_context(**options)
    watch = watch if watch is not None else PageWatch()
    watch.block_network(context)
    page = context.new_page()
    watch.attach(page)
    return context, page, watch


def wait_for_widget(
    scope: Any, *, root: str = DEFAULT_VIEW, draws: int = 1, timeout_ms: float = 30_000
) -> Any:
    """Wait until a view under ``scope`` (page, frame or locator) is ready and has drawn.

    Each view element of the front end (``.attnscope-view``; the head view is
    ``[data-testid="head-view"]``) says ``data-ready="true"`` once its data
    arrived and ``data-draws="<n>"`` counting finished draws; tests wait on
    those instead of on time. Returns the element's locator.
    """
    view = scope.locator(root).first
    view.wait_for(state="attached", timeout=timeout_ms)
    # A locator waits through its page; a page or frame waits by itself.
    owner = scope.page if hasattr(scope, "element_handle") else scope
    owner.wait_for_function(
        """([el, draws]) =>
            el.dataset.ready === "true" && Number(el.dataset.draws || 0) >= draws""",
        arg=[view.element_handle(timeout=timeout_ms), draws],
        timeout=timeout_ms,
    )
    return view


def draw_count(scope: Any, root: str = DEFAULT_VIEW) -> int:
    """How many draws the widget under ``scope`` has finished (``data-draws``)."""
    value = scope.locator(root).first.get_attribute("data-draws")
    return int(value or 0)


def wait_for_next_draw(
    scope: Any, before: int, *, root: str = DEFAULT_VIEW, timeout_ms: float = 30_000
) -> None:
    """Wait until the widget has drawn again after having drawn ``before`` times."""
    wait_for_widget(scope, root=root, draws=before + 1, timeout_ms=timeout_ms)


class Screenshots:
    """Writes named PNG screenshots to a folder, or does nothing without one.

    ``pytest --screenshots=DIR`` gives the folder; the README's pictures are
    made with ``make screenshots``.
    """

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.taken: list[Path] = []

    @property
    def enabled(self) -> bool:
        """Whether a folder was given."""
        return self.folder is not None

    def take(self, name: str, target: Any) -> Path | None:
        """Screenshot ``target`` (a page or a locator) as ``<folder>/<name>.png``."""
        if self.folder is None:
            return None
        if not name.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"screenshot name {name!r}: use letters, digits, '-' and '_'")
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.png"
        target.screenshot(path=str(path))
        self.taken.append(path)
        return path
