"""attnscope against bertviz and CircuitsVis, in one run on one machine; prints a markdown table.

    python benchmarks/compare_peers.py                 # MiniLM 16-512, GPT-2-shaped 1024-4096
    python benchmarks/compare_peers.py --quick         # 16 and 64 tokens, two repeats
    python benchmarks/compare_peers.py --sizes 16,256 --out bench.md

For each size: the model's own forward pass (reported apart: eager for
MiniLM, as the peers need; the default sdpa for the GPT-2-shaped model), then
each tool's view: Python time to produce it on top of that forward pass,
bytes that reach the browser, bytes per attention value, and in headless
Debian chromium (file:// pages, network blocked) the median time until the
view is drawn and to switch layer (or the tool's nearest interaction). A
tool that fails or exceeds the time limit is recorded as such. Sizes above
512 use a randomly initialised 12 x 12 GPT-2-shaped model, attnscope only,
with the capture's peak memory measured in a fresh process per size.

attnscope's Python time is what its capture adds to the forward column
(clamped at 0) plus ``save_html``; the raw capture, save and widget times are
in the row's notes.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_browser import Chromium, Timing, median_ms
from bench_inputs import MINILM_MAX_TOKENS, Run, forward
from bench_views import (
    ATTNSCOPE,
    ATTNSCOPE_HEAD_ONLY,
    View,
    attnscope_head,
    bertviz_head,
    bertviz_model,
    circuitsvis_heads,
)

DEFAULT_SIZES = [16, 64, 256, 512, 1024, 2048, 4096]
QUICK_SIZES = [16, 64]
PEERS: dict[str, Callable[[Run, int], View]] = {
    "bertviz head_view": bertviz_head,
    "bertviz model_view": bertviz_model,
    "circuitsvis attention_heads": circuitsvis_heads,
}
PEER_TOOLS = {
    "bertviz-head": "bertviz head_view",
    "bertviz-model": "bertviz model_view",
    "circuitsvis": "circuitsvis attention_heads",
}
ATTNSCOPE_TOOLS = {"attnscope-head": ("head",), "attnscope": ("head", "model", "neuron")}
TOOLS = [*PEER_TOOLS, *ATTNSCOPE_TOOLS]
# Bytes per attention value the peers spend (measured at 64-512 MiniLM tokens), used
# to say how large their page would be where they are not attempted.
PEER_BYTES_PER_VALUE = {
    "bertviz head_view": 46.0,
    "bertviz model_view": 46.0,
    "circuitsvis attention_heads": 23.0,
}


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def human_ms(values: list[float], status: str | None) -> str:
    if not values:
        return status or "n/a"
    ms = median_ms(values)
    text = f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"
    then = f", then {status}" if status else ""  # a later repeat failed or ran over
    return f"{text} (n={len(values)}{then})"


class Table:
    HEADER = (
        "| tool / view | model | tokens | forward | Python (view) | bytes to browser "
        "| B / value | drawn (median) | switch (median) | notes |"
    )
    RULE = "|" + "---|" * 10

    def __init__(self) -> None:
        self.rows: list[str] = []

    def add(self, run: Run, tool: str, cells: list[str], notes: list[str]) -> None:
        """One row: the run's columns, then ``cells`` (5 columns, padded), then notes."""
        cells = (cells + [""] * 5)[:5]
        row = [tool, run.model_name, str(run.num_tokens), f"{run.forward_s:.3f} s", *cells]
        row.append("; ".join(notes))
        line = "| " + " | ".join(c.replace("|", "/") for c in row) + " |"
        self.rows.append(line)
        print(line, flush=True)

    def view_row(self, view: View, timing: Timing | None) -> None:
        run = view.run
        one_layer = run.num_heads * run.num_tokens**2
        notes = list(view.notes)
        notes += [
            f"{what}: {human_bytes(n)} ({n / one_layer:.2f} B/value of one layer)"
            for what, n in view.extra.items()
        ]
        if view.status:
            self.add(run, view.tool, [view.status], notes)
            return
        if timing is not None:
            notes.append(f"switch = {view.switch_what}")
            notes += [f"{what}: {result}" for what, result in timing.probes.items()]
            notes += timing.page_problems[:2]
        size = view.size
        self.add(
            run,
            view.tool,
            [
                f"{view.python_s:.3f} s" if view.python_s is not None else "",
                human_bytes(size) if size is not None else "",
                f"{size / view.values:.2f}" if size and view.values else "",
                human_ms(timing.drawn_ms, timing.drawn_status) if timing else "not measured",
                human_ms(timing.switch_ms, timing.switch_status) if timing else "not measured",
            ],
            notes,
        )

    def markdown(self, title: str) -> str:
        return "\n".join([title, "", self.HEADER, self.RULE, *self.rows, ""])


def measure_view(
    make: Callable[[], View], chromium: Chromium | None, folder: Path, args: argparse.Namespace
) -> tuple[View, Timing | None]:
    view = make()
    if view.status or view.html is None or chromium is None:
        return view, None
    path = folder / f"{view.tool.split()[0]}-{view.run.num_tokens}.html"
    path.write_bytes(view.html)
    timing = chromium.measure(view, path, repeats=args.repeats, limit_s=args.limit)
    path.unlink()
    return view, timing


def peer_row(
    table: Table, tool: str, run: Run, chromium: Chromium | None, folder: Path, args: Any
) -> None:
    per_page = run.values if "bertviz" in tool else run.num_heads * run.num_tokens**2
    expected = PEER_BYTES_PER_VALUE[tool] * per_page
    if not run.attention:
        # Long rows keep no attention tensors (9.7 GB at 4096 tokens); the peers' pages
        # would be this large, and at 512 tokens they already miss the time limit.
        status = f"not attempted: page ≈ {human_bytes(expected)}"
        table.add(run, tool, [status], [f"at {PEER_BYTES_PER_VALUE[tool]:g} B/value"])
        return
    tool_row(table, tool, partial(PEERS[tool], run, args.repeats), run, chromium, folder, args)


def tool_row(
    table: Table,
    tool: str,
    make: Callable[[], View],
    run: Run,
    chromium: Chromium | None,
    folder: Path,
    args: Any,
    note: Callable[[], str] | None = None,
) -> None:
    """Measure one tool's view and add its row; a tool that breaks is a result, not a crash."""
    try:
        view, timing = measure_view(make, chromium, folder, args)
    except Exception as error:
        table.add(run, tool, [f"failed: {type(error).__name__}: {str(error)[:100]}"], [])
        return
    if note is not None:
        view.notes.append(note())
    table.view_row(view, timing)


def memory_note(tokens: int, layers: list[int] | None) -> str:
    """Peak memory of capture and of a plain forward, each in a fresh process."""
    notes = [f"layers={layers}"]
    script = Path(__file__).parent / "capture_memory.py"
    for what in ("forward", "capture"):
        command = [sys.executable, str(script), str(tokens), "--what", what]
        if layers is not None:
            command += ["--layers", ",".join(map(str, layers))]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            notes.append(f"{what} memory: failed ({done.stderr.strip().splitlines()[-1:]})")
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        if "status" in result:
            notes.append(f"{what} memory: {result['status']}")
        else:
            notes.append(f"{what} peak +{human_bytes(result['peak_delta_bytes'])} RSS")
    return "; ".join(notes)


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        import psutil

        memory = psutil.virtual_memory().total / 2**30
        cores = f"{psutil.cpu_count(logical=True)} cores, {memory:.0f} GiB"
    except ImportError:
        cores = "cores unknown"
    versions = f"Python {platform.python_version()}, torch {torch.__version__}"
    return f"{platform.system()} {cpu}, {cores}; {versions}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", help="comma-separated token counts (default: 16,64,256,512,1024,2048,4096)"
    )
    parser.add_argument("--quick", action="store_true", help="16 and 64 tokens, 2 repeats")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    parser.add_argument(
        "--repeats", type=int, default=5, help="page loads / switches per view (median)"
    )
    parser.add_argument(
        "--limit", type=float, default=60.0, help="seconds allowed per browser step"
    )
    parser.add_argument("--long-layers", default="0,11", help="layers captured above 512 tokens")
    parser.add_argument(
        "--page-max-mb",
        type=float,
        help="attnscope page's budget for embedded attention (default: save_html's own)",
    )
    parser.add_argument("--no-browser", action="store_true", help="skip the chromium timings")
    parser.add_argument(
        "--tools",
        default=",".join(TOOLS),
        help=f"comma-separated subset of {','.join(TOOLS)}",
    )
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        args.repeats = min(args.repeats, 2)
    long_layers = [int(x) for x in args.long_layers.split(",")]
    tools = args.tools.split(",")
    args.page_max_bytes = None if args.page_max_mb is None else int(args.page_max_mb * 1e6)
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}; choose among {TOOLS}")

    started = time.perf_counter()
    table = Table()
    print(Table.HEADER + "\n" + Table.RULE, flush=True)
    chromium = None if args.no_browser else Chromium()
    try:
        with tempfile.TemporaryDirectory(prefix="attnscope-bench-") as tmp:
            folder = Path(tmp)
            for tokens in sizes:
                model_name = "minilm" if tokens <= MINILM_MAX_TOKENS else "gpt2"
                run = forward(model_name, tokens, keep_attention=model_name == "minilm")
                for tool in [PEER_TOOLS[t] for t in tools if t in PEER_TOOLS]:
                    peer_row(table, tool, run, chromium, folder, args)
                    gc.collect()
                layers = None if model_name == "minilm" else long_layers
                for tool, views in ATTNSCOPE_TOOLS.items():
                    if tool not in tools:
                        continue
                    make = partial(
                        attnscope_head,
                        run,
                        args.repeats,
                        folder,
                        layers,
                        args.page_max_bytes,
                        views,
                    )
                    # Peak memory is the capture's, the same for both pages: measured once.
                    note = (
                        partial(memory_note, tokens, layers)
                        if layers is not None and tool == "attnscope"
                        else None
                    )
                    name = ATTNSCOPE if len(views) == 3 else ATTNSCOPE_HEAD_ONLY
                    tool_row(table, name, make, run, chromium, folder, args, note)
                del run
                gc.collect()
    finally:
        if chromium is not None:
            chromium.close()

    title = (
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}; "
        f"headless chromium, limit {args.limit:g} s per browser step; "
        f"the run took {time.perf_counter() - started:.0f} s."
    )
    print("\n" + title)
    if args.out:
        args.out.write_text(table.markdown(title))


if __name__ == "__main__":
    main()
