"""attnscope against bertviz and CircuitsVis, and at long inputs and many heads; one run.

    python benchmarks/compare_peers.py                    # every section (about 30 min here)
    python benchmarks/compare_peers.py --only peers --quick   # 16 and 64 tokens, 2 repeats
    python benchmarks/compare_peers.py --only peers --sizes 16,256 --out bench.md
    python benchmarks/compare_peers.py --only long,memory

Sections (``--only``, run in this order): ``peers`` is the table against the
peers; ``switch``, ``long``, ``heads``, ``memory`` and ``huge`` the long table
(see bench_plan.py). With ``--out`` the file is rewritten after every row,
titled as partial until the run ends.

peers: for each size the model's own forward pass (MiniLM with its default
attention, sdpa, as users load it), then each tool's view: Python time to
produce it on top of that forward pass, bytes that reach the browser, bytes
per attention value, and in headless Debian chromium (file:// pages, network
blocked) the median time until the view's DOM is built, until the first frame
with it is painted, and to switch layer (or the tool's nearest interaction),
each to the painted frame. bertviz and CircuitsVis need eager weights: they
get those of an eager-loaded MiniLM, whose forward pass is in the row's
notes. A tool that fails or exceeds the time limit is recorded as such.
attnscope's Python time is what its capture adds to the forward column
(clamped at 0) plus ``save_html``; the raw capture, save and widget times are
in the row's notes.

The long table: each case captured once in a fresh process (time, peak
resident memory above the loaded model, the trace's bytes), then the
model's own forward pass, the live widget's Python answers, ``save_html``
pages opened in chromium, and the float32 storage beside the q/k storage
where it fits. Finally each goal of issues 13 and 17 is printed as met or
missed, and by how much.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_browser import Chromium, Timing, median_ms
from bench_goals import Goals
from bench_inputs import MINILM_MAX_TOKENS, Run, forward
from bench_long import CaseResult, LongTable, case_rows, human_bytes, measure_case
from bench_plan import SECTIONS, cases, long_goals, peer_goals
from bench_views import (
    ATTNSCOPE,
    ATTNSCOPE_HEAD_ONLY,
    View,
    attnscope_head,
    bertviz_head,
    bertviz_model,
    circuitsvis_heads,
)

DEFAULT_SIZES = [16, 64, 256, 512]
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
        "| B / value | DOM ready (median) | painted (median) | switch (median) | notes |"
    )
    RULE = "|" + "---|" * 11

    def __init__(self) -> None:
        self.rows: list[str] = []
        self.on_row: Callable[[], None] = lambda: None  # e.g. rewrite the output file
        # (tool, tokens) -> the view and its timing, for the goals
        self.results: dict[tuple[str, int], tuple[View, Timing | None]] = {}

    def add(self, run: Run, tool: str, cells: list[str], notes: list[str]) -> None:
        """One row: the run's columns, then ``cells`` (6 columns, padded), then notes."""
        cells = (cells + [""] * 6)[:6]
        row = [tool, run.model_name, str(run.num_tokens), f"{run.forward_s:.3f} s", *cells]
        row.append("; ".join(notes))
        line = "| " + " | ".join(c.replace("|", "/") for c in row) + " |"
        self.rows.append(line)
        print(line, flush=True)
        self.on_row()

    def view_row(self, view: View, timing: Timing | None) -> None:
        run = view.run
        self.results[(view.tool, run.num_tokens)] = (view, timing)
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
                human_ms(timing.ready_ms, timing.drawn_status) if timing else "not measured",
                human_ms(timing.drawn_ms, timing.drawn_status) if timing else "not measured",
                human_ms(timing.switch_ms, timing.switch_status) if timing else "not measured",
            ],
            notes,
        )

    def markdown(self) -> str:
        return "\n".join([self.HEADER, self.RULE, *self.rows, ""])


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
    note = f"weights from an eager MiniLM, its forward {run.eager_forward_s or 0:.3f} s"
    make = partial(PEERS[tool], run, args.repeats)
    tool_row(table, tool, make, run, chromium, folder, args, lambda: note)


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


def peers_section(table: Table, args: argparse.Namespace, chromium: Chromium | None) -> None:
    """The peers table: every tool at each size (attnscope only above 512 tokens)."""
    tools = args.tools.split(",")
    with tempfile.TemporaryDirectory(prefix="attnscope-bench-") as tmp:
        folder = Path(tmp)
        for tokens in args.sizes:
            model_name = "minilm" if tokens <= MINILM_MAX_TOKENS else "gpt2"
            run = forward(model_name, tokens, keep_attention=model_name == "minilm")
            for tool in [PEER_TOOLS[t] for t in tools if t in PEER_TOOLS]:
                peer_row(table, tool, run, chromium, folder, args)
                gc.collect()
            for tool, views in ATTNSCOPE_TOOLS.items():
                if tool not in tools:
                    continue
                make = partial(
                    attnscope_head, run, args.repeats, folder, None, args.page_max_bytes, views
                )
                name = ATTNSCOPE if len(views) == 3 else ATTNSCOPE_HEAD_ONLY
                tool_row(table, name, make, run, chromium, folder, args)
            del run
            gc.collect()


def long_sections(
    long: LongTable,
    args: argparse.Namespace,
    chromium: Chromium | None,
    save: Callable[[], None],
) -> list[CaseResult]:
    """The sections after peers, in order: each case in a fresh process."""
    results = []
    with tempfile.TemporaryDirectory(prefix="attnscope-long-") as tmp:
        for section in [s for s in SECTIONS if s in args.only and s != "peers"]:
            for case in cases(section, args.long_model, args.long_layers):
                result = measure_case(case, Path(tmp), chromium, args.long_repeats, args.limit)
                case_rows(long, result)
                results.append(result)
                save()
    return results


def load() -> str:
    one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    return f"load average {one} / {five} / {fifteen} (1 / 5 / 15 min)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections among {','.join(SECTIONS)} (default: all)",
    )
    parser.add_argument(
        "--sizes",
        help="peers section: comma-separated token counts (default: 16,64,256,512)",
    )
    parser.add_argument("--quick", action="store_true", help="peers at 16 and 64 tokens, 2 repeats")
    parser.add_argument("--out", type=Path, help="also write the tables to this markdown file")
    parser.add_argument(
        "--repeats", type=int, default=5, help="page loads / switches per view (median)"
    )
    parser.add_argument(
        "--long-repeats", type=int, default=3, help="page loads / switches per long-row page"
    )
    parser.add_argument(
        "--limit", type=float, default=60.0, help="seconds allowed per browser step"
    )
    parser.add_argument(
        "--long-model",
        default="gpt2-3",
        help="model of the 32768-token row: gpt2 (12 layers) or gpt2-N (its first N layers)",
    )
    parser.add_argument("--long-layers", default="0,2", help="layers= of the 32768-token row")
    parser.add_argument(
        "--page-max-mb",
        type=float,
        help="attnscope page's budget for embedded attention (default: save_html's own)",
    )
    parser.add_argument("--no-browser", action="store_true", help="skip the chromium timings")
    parser.add_argument(
        "--tools",
        default=",".join(TOOLS),
        help=f"peers section: comma-separated subset of {','.join(TOOLS)}",
    )
    args = parser.parse_args(argv)
    args.only = args.only.split(",")
    unknown_sections = set(args.only) - set(SECTIONS)
    if unknown_sections:
        parser.error(f"unknown sections {sorted(unknown_sections)}; choose among {SECTIONS}")
    args.sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    args.sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    if args.quick:
        args.repeats = min(args.repeats, 2)
    args.long_layers = [int(x) for x in args.long_layers.split(",")]
    args.page_max_bytes = None if args.page_max_mb is None else int(args.page_max_mb * 1e6)
    unknown = set(args.tools.split(",")) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}; choose among {TOOLS}")

    started = time.perf_counter()
    load_before = load()
    table, long, goals = Table(), LongTable(), Goals()

    def title(partial: bool) -> str:
        what = "PARTIAL (still running or stopped): " if partial else ""
        return (
            f"{what}Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
            f"{machine()}; headless chromium, limit {args.limit:g} s per browser step; sections "
            f"{','.join(args.only)}; {'so far' if partial else 'the run took'} "
            f"{time.perf_counter() - started:.0f} s; {load_before} at the start, "
            f"{load()} {'now' if partial else 'at the end'}."
        )

    def save(partial: bool = True) -> None:
        if not args.out:
            return
        parts = [title(partial), ""]
        if table.rows:
            parts.append(table.markdown())
        if long.rows:
            parts.append(long.markdown())
        if goals.goals:
            parts.append(goals.markdown())
        args.out.write_text("\n".join(parts))

    table.on_row = save
    chromium = None if args.no_browser else Chromium()
    results: list[CaseResult] = []
    try:
        if "peers" in args.only:
            print(Table.HEADER + "\n" + Table.RULE, flush=True)
            peers_section(table, args, chromium)
            peer_goals(goals, table.results)
        if set(args.only) - {"peers"}:
            print("\n" + LongTable.HEADER + "\n" + LongTable.RULE, flush=True)
            results = long_sections(long, args, chromium, save)
            long_goals(goals, results)
    finally:
        if chromium is not None:
            chromium.close()
    print("\n" + goals.markdown() + "\n" + title(partial=False))
    save(partial=False)


if __name__ == "__main__":
    main()
