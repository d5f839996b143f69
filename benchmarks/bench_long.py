"""Long inputs, many heads and capture's memory: each case captured once in a fresh process.

A :class:`Case` runs ``bench_worker.py`` (capture with its peak memory, then
the forward pass, the live widget's answers, pages and the float32 storage as
asked), then opens the pages it wrote in chromium. :func:`case_rows` turns the
results into rows of the long table.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_browser import Chromium, Timing, median_ms
from bench_inputs import Run
from bench_views import View, attnscope_page_js

WORKER = Path(__file__).parent / "bench_worker.py"
ALL_VIEWS = ("head", "model", "neuron")


@dataclass
class Case:
    """One capture and what is measured on it."""

    name: str
    model: str  # "gpt2" (12 x 12), "llama" (32 x 32) or "gpt2-3" (the first three layers)
    tokens: int
    layers: list[int] | None = None  # capture's layers=; None: every layer
    forward_repeats: int = 0  # time the model's own forward pass after capture
    widget: int = 0  # uncached layer switches the live widget answers
    pages: list[tuple[str, ...]] = field(default_factory=list)  # views of each page
    float32_layers: list[int] | None = None  # positions kept in the float32 storage
    float32_pages: list[tuple[str, ...]] = field(default_factory=list)
    what: str = "capture"  # or "forward": the forward pass's own peak memory
    timeout_s: float = 900.0

    @property
    def shown_layers(self) -> int:
        return (
            {"gpt2": 12, "llama": 32, "gpt2-3": 3}[self.model]
            if self.layers is None
            else len(self.layers)
        )


@dataclass
class CaseResult:
    case: Case
    worker: dict[str, Any]  # bench_worker.py's JSON, or {"status": why not}
    timings: dict[str, Timing | None] = field(default_factory=dict)  # page path -> chromium


def run_worker(case: Case, folder: Path) -> dict[str, Any]:
    """Run the case's capture in a fresh process; its JSON result, or a status saying why not."""
    model, *cut = case.model.split("-")
    command = [sys.executable, str(WORKER), str(case.tokens), "--model", model, "--what", case.what]
    if cut:
        command += ["--num-layers", cut[0]]
    if case.layers is not None:
        command += ["--layers", ",".join(map(str, case.layers))]
    if case.forward_repeats:
        command += ["--forward-repeats", str(case.forward_repeats)]
    if case.widget:
        command += ["--widget", str(case.widget)]
    stem = f"{case.model}-{case.tokens}"
    for views in case.pages:
        command += ["--page", f"{','.join(views)}={folder / f'{stem}-{len(views)}.html'}"]
    if case.float32_layers is not None:
        command += ["--float32", "--float32-layers", ",".join(map(str, case.float32_layers))]
        for views in case.float32_pages:
            command += [
                "--float32-page",
                f"{','.join(views)}={folder / f'{stem}-{len(views)}-float32.html'}",
            ]
    log = folder / f"{stem}.log"
    try:
        with log.open("w") as errors:
            done = subprocess.run(
                command,
                check=False,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                timeout=case.timeout_s,
            )
    except subprocess.TimeoutExpired:
        return {"status": f"> {case.timeout_s:g} s (stopped)"}
    finally:  # the worker's progress lines, for the run's log
        lines = log.read_text().splitlines()
        print("\n".join(line for line in lines if line.startswith("[")), file=sys.stderr)
    if done.returncode != 0:
        last = (lines or ["no message"])[-1]
        return {"status": f"failed: {last[:160]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure_case(
    case: Case, folder: Path, chromium: Chromium | None, repeats: int, limit_s: float
) -> CaseResult:
    """The worker's result, and chromium's timings of every page it wrote."""
    result = CaseResult(case, run_worker(case, folder))
    pages = list(result.worker.get("pages", []))
    pages += result.worker.get("float32", {}).get("pages", [])
    for page in pages:
        path = Path(page["path"])
        if chromium is None or not path.exists():
            continue
        views = tuple(page["views"].split(","))
        shown = case.shown_layers if "float32" not in path.name else len(case.float32_layers or [])
        view = View("attnscope", Run(case.model, None, None, "", [], (), 0.0))
        attnscope_page_js(view, views, shown, repeats)
        result.timings[str(path)] = chromium.measure(view, path, repeats=repeats, limit_s=limit_s)
        path.unlink()
    return result


# -- formatting ---------------------------------------------------------------------------
def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def seconds(s: float | None) -> str:
    if s is None:
        return ""
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def ms(values: list[float], status: str | None = None) -> str:
    if not values:
        return status or "n/a"
    m = median_ms(values)
    return f"{m / 1000:.2f} s" if m >= 1000 else f"{m:.0f} ms"


class LongTable:
    HEADER = (
        "| row | model | tokens | layers | storage | forward (sdpa) | capture | peak RSS above "
        "model | trace | page: views, bytes, save_html, left out | live widget (Python) "
        "| chromium: DOM ready · painted · layer switch · other views |"
    )
    RULE = "|" + "---|" * 12

    def __init__(self) -> None:
        self.rows: list[str] = []

    def add(self, cells: list[str]) -> None:
        line = "| " + " | ".join(c.replace("|", "/") for c in cells) + " |"
        self.rows.append(line)
        print(line, flush=True)

    def markdown(self) -> str:
        return "\n".join([self.HEADER, self.RULE, *self.rows, ""])


def widget_cell(widget: dict[str, Any] | None) -> str:
    if not widget:
        return ""
    switch = widget["switch_s"]
    median = statistics.median(switch) if switch else None
    whole = ""
    if "whole_layer_s" in widget:  # runs before the head view asked for blocks had none
        whole = (
            f"; whole-layer top: chunk (exported page) {seconds(widget['whole_layer_s'])} "
            f"({human_bytes(widget['whole_layer_bytes'])})"
        )
    return (
        f"first head-view chunk {seconds(widget['first_head_s'])} "
        f"({human_bytes(widget['first_head_bytes'])}); uncached layer switch "
        f"{seconds(median)} median of {len(switch)}{whole}; thumbnails "
        f"{seconds(widget['thumbs_s'])} ({human_bytes(widget['thumbs_bytes'])})"
    )


def browser_cell(timing: Timing | None) -> str:
    if timing is None:
        return "not measured"
    if not timing.drawn_ms:
        return f"not drawn: {timing.drawn_status}"
    parts = [ms(timing.ready_ms), ms(timing.drawn_ms)]
    parts.append(ms(timing.switch_ms, timing.switch_status) if timing.switch_ms else "—")
    cell = " · ".join(parts) + f" (n={len(timing.drawn_ms)})"
    if timing.probes:
        cell += "; " + "; ".join(f"{k}: {v}" for k, v in timing.probes.items())
    if timing.page_problems:
        cell += "; " + "; ".join(timing.page_problems[:2])
    return cell


def page_cell(page: dict[str, Any]) -> str:
    return (
        f"{page['views']}: {human_bytes(page['bytes'])}, {seconds(page['save_s'])}, "
        f"left out {page['left_out']}"
    )


def case_rows(table: LongTable, result: CaseResult) -> None:
    """One row per page (or one without pages), then the float32 storage's rows."""
    case, w = result.case, result.worker
    layers = "all" if case.layers is None else ",".join(map(str, case.layers))
    head = [case.name, case.model, str(case.tokens), layers]
    if "status" in w:
        table.add([*head, "q/k", "", w["status"], "", "", "", "", ""])
        return
    storage = "q/k (on demand)"
    fwd = seconds(w.get("forward_s"))
    capture = seconds(w.get("capture_s"))
    peak = human_bytes(w["peak_delta_bytes"])
    trace = human_bytes(w["trace_bytes"]) if "trace_bytes" in w else ""
    if case.what == "forward":
        storage, capture, trace = "(forward only)", "", ""
    pages = w.get("pages") or [None]
    for i, page in enumerate(pages):
        timing = result.timings.get(page["path"]) if page else None
        table.add(
            [
                *head,
                storage,
                fwd if i == 0 else "",
                capture if i == 0 else "",
                peak if i == 0 else "",
                trace if i == 0 else "",
                page_cell(page) if page else "",
                widget_cell(w.get("widget")) if i == 0 else "",
                browser_cell(timing) if page else "",
            ]
        )
    old = w.get("float32")
    if old is None:
        return
    f32 = "float32 weights"
    kept = ",".join(map(str, case.float32_layers or []))
    if "status" in old:
        table.add(
            [case.name, case.model, str(case.tokens), kept, f32, "", old["status"]] + [""] * 5
        )
        return
    for i, page in enumerate(old.get("pages") or [None]):
        timing = result.timings.get(page["path"]) if page else None
        table.add(
            [
                case.name,
                case.model,
                str(case.tokens),
                f"positions {kept}",
                f32,
                "",
                f"materialised in {seconds(old['build_s'])}" if i == 0 else "",
                human_bytes(old["peak_delta_bytes"]) if i == 0 else "",
                human_bytes(old["bytes"]) if i == 0 else "",
                page_cell(page) if page else "",
                widget_cell(old.get("widget")) if i == 0 else "",
                browser_cell(timing) if page else "",
            ]
        )
