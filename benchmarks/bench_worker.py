"""One capture in a fresh process: its time and peak memory, then what a user does with it.

Run by compare_peers.py for the long and many-heads rows; prints one JSON
object (the last line of stdout). Peak memory is the resident set's high-water
mark (Linux ``VmHWM``, reset by writing ``5`` to ``/proc/self/clear_refs``
just before each step: loading the model does not count) minus the resident
set before the step. tracemalloc would not see torch's allocations.

After the capture, optionally: the model's own (sdpa) forward pass timed on
the same input (``--forward-repeats``); the live widget's Python time to
answer the head view's first request and each uncached layer switch, and the
model view's thumbnails (``--widget``); ``save_html`` pages (``--page``); and
the same for the float32 storage (``--float32``: some captured layers'
attention materialised into a trace of weights, as attnscope stored every
trace before q/k storage).

    python benchmarks/bench_worker.py 4096 --widget 5 --page head,model,neuron=/tmp/p.html
    python benchmarks/bench_worker.py 2048 --what forward
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).parent))

from bench_inputs import Run, encode, minilm, model_of, text_of, timed_forward
from bench_views import attnscope_capture

# The page's note on what its budget left out (two wordings: by chunk kind, or by view).
LEFT_OUT = re.compile(r"(\d+) of (\d+) chunks \(([^)]*)\) were left out")
LEFT_OUT_BY_VIEW = re.compile(r"(\d+) of (\d+) chunks were left out to keep [^:]*: ([^.]*)\.")
FEWER_KEYS = re.compile(r"the head view keeps each query's (\d+) strongest keys")
KIND_VIEW = {"top": "head", "pseudo": "head pseudo-heads", "thumbs": "model"}
KIND_VIEW |= {"stats": "model statistics"}
KIND_VIEW |= {"qk": "neuron", "attn": "neuron"}


def left_out(html: str) -> tuple[str, list[str]]:
    """What the page's budget left out, in words, and the views it leaves incomplete."""
    found = LEFT_OUT.search(html)
    if found:
        kinds = found[3].split(", ")
        views = sorted({KIND_VIEW.get(k, k) for k in kinds})
        return f"{found[1]} of {found[2]} chunks ({found[3]})", views
    found = LEFT_OUT_BY_VIEW.search(html)
    if found:
        parts = re.findall(r"(head|model|neuron) view: (\S+)", found[3])
        named = {"pseudo-heads": " pseudo-heads", "statistics": " statistics"}
        views = sorted({view + named.get(what, "") for view, what in parts})
        return f"{found[1]} of {found[2]} chunks: {found[3]}", views
    if "were left out" in html:
        return "some chunks (see the page's note)", ["unknown"]
    return "nothing", []


STARTED = time.perf_counter()


def log(step: str) -> None:
    """Progress on stderr (stdout carries the JSON result)."""
    print(f"[{time.perf_counter() - STARTED:7.1f} s] {step}", file=sys.stderr, flush=True)


def _high_water_mark() -> int:
    """Peak resident set since the last reset, in bytes (VmHWM of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status: peak memory needs Linux")


class Peak:
    """Peak resident set of a ``with`` block above the resident set it started from."""

    def __enter__(self) -> Peak:
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current RSS
        self.before = psutil.Process().memory_info().rss
        return self

    def __exit__(self, *exc: object) -> None:
        self.delta = max(_high_water_mark() - self.before, 0)


def trace_bytes(trace: Any) -> int:
    """Bytes the trace's streams hold (q/k, masks, weights where kept)."""
    return sum(int(stream.nbytes) for stream in trace.streams.values())


# Query rows one head-view draw reads at most: a screenful of 18 px rows in its 560 px
# viewport, partly shown rows at both edges, and 4 rows of overscan each side
# (ROW, MAX_VIEW_H and OVERSCAN in js/views/head/head_lines.ts).
HEAD_VIEW_ROWS = 560 // 18 + 3 + 2 * 4


def head_view_keys(widget: Any, name: str, position: int, *, at_end: bool) -> list[str]:
    """The ``top:`` keys the head view asks for when it shows layer ``position``.

    The view asks for the blocks of the rows it draws (:data:`HEAD_VIEW_ROWS`
    at most): at the top of the layer the first blocks; ``at_end``, the worst
    case, the last blocks, as many as those rows can straddle (the dearest:
    under a causal mask the last rows see every key). A layer of one block is
    asked for whole.
    """
    stream = widget._meta["streams"][name]
    block, q_len = stream.get("top_block") or 0, stream["q_len"]
    if not 0 < block < q_len:
        return [f"top:{name}:{position}"]
    firsts = list(range(0, q_len, block))
    count = (HEAD_VIEW_ROWS - 2) // block + 2 if at_end else -(-HEAD_VIEW_ROWS // block)
    chosen = firsts[-count:] if at_end else firsts[:count]
    return [f"top:{name}:{position}:{first}" for first in chosen]


def widget_times(trace: Any, switches: int) -> dict[str, Any]:
    """Python seconds and bytes of the live widget's answers, each chunk asked for once.

    The head view's first request (the blocks of its first rows, at the top
    of the layer shown), then ``switches`` uncached layer switches (each a
    layer not asked for before, with the view scrolled to its dearest rows:
    :func:`head_view_keys`), then one whole-layer ``top:`` chunk (what the
    exported page embeds per layer), then the model view's thumbnails of
    every captured layer.
    """
    import attnscope

    start = time.perf_counter()
    widget = attnscope.AttentionWidget(trace)
    made = time.perf_counter() - start
    name = next(iter(trace.streams))
    layers = trace.streams[name].num_layers

    def ask(keys: list[str]) -> tuple[float, int]:
        start = time.perf_counter()
        replies = widget.answer({"type": "request", "keys": keys})
        seconds = time.perf_counter() - start
        errors = [c["error"] for content, _ in replies for c in content["chunks"] if "error" in c]
        if errors:
            raise RuntimeError(f"the widget could not answer {keys}: {errors}")
        sent = sum(len(repr(c)) + sum(memoryview(b).nbytes for b in bufs) for c, bufs in replies)
        return seconds, sent

    first_s, first_bytes = ask(head_view_keys(widget, name, 0, at_end=False))
    positions = range(1, min(switches, layers - 1) + 1)
    switch = [ask(head_view_keys(widget, name, p, at_end=True)) for p in positions]
    whole_s, whole_bytes = ask([f"top:{name}:{layers - 1}"])
    thumbs_s, thumbs_bytes = ask([f"thumbs:{name}"])
    return {
        "widget_s": made,
        "first_head_s": first_s,
        "first_head_bytes": first_bytes,
        "switch_keys": head_view_keys(widget, name, 1, at_end=True),
        "switch_s": [s for s, _ in switch],
        "switch_bytes": [b for _, b in switch],
        "whole_layer_s": whole_s,
        "whole_layer_bytes": whole_bytes,
        "thumbs_s": thumbs_s,
        "thumbs_bytes": thumbs_bytes,
    }


def save_pages(trace: Any, pages: list[str]) -> list[dict[str, Any]]:
    """``save_html`` for each ``views=path`` spec: seconds, bytes and what was left out."""
    import attnscope

    done = []
    for spec in pages:
        views, path = spec.split("=", 1)
        with Peak() as peak:
            start = time.perf_counter()
            attnscope.save_html(trace, path, views=views.split(","))
            seconds = time.perf_counter() - start
        log(f"page {views} saved in {seconds:.1f} s")
        html = Path(path).read_text(encoding="utf-8")
        missing, views_missing = left_out(html)
        fewer = FEWER_KEYS.search(html)
        if fewer:
            missing += f"; head view keeps {fewer[1]} keys per query"
        done.append(
            {
                "views": views,
                "path": path,
                "save_s": seconds,
                "bytes": len(html.encode()),
                "left_out": missing,
                "views_missing": views_missing,
                "peak_delta_bytes": peak.delta,
            }
        )
    return done


def float32_trace(trace: Any, positions: list[int]) -> tuple[Any, dict[str, Any]]:
    """Layers ``positions`` of the trace as float32 weights in a new trace (the old storage).

    Raises the stream's memory error when one layer is past
    ``attnscope.trace.stream.MAX_ATTENTION_BYTES``.
    """
    import numpy as np

    import attnscope

    stream = next(iter(trace.streams.values()))
    start = time.perf_counter()
    with Peak() as peak:
        weights = np.stack([stream.layer_attention(p) for p in positions]).astype(
            np.float32, copy=False
        )
        old = attnscope.AttentionTrace(list(trace.tokens), weights)
    seconds = time.perf_counter() - start
    del weights
    return old, {"build_s": seconds, "bytes": trace_bytes(old), "peak_delta_bytes": peak.delta}


def run_json_child(script: str, args: list[str]) -> dict[str, Any]:
    """Run ``script`` with ``args`` in a fresh Python; its last printed line is a JSON result."""
    done = subprocess.run(
        [sys.executable, script, *args], check=True, stdout=subprocess.PIPE, text=True
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def gb(n: float) -> str:
    """Bytes as gigabytes, two decimals."""
    return f"{n / 1e9:.2f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tokens", type=int)
    parser.add_argument("--model", default="gpt2", choices=["gpt2", "llama", "minilm"])
    parser.add_argument("--what", default="capture", choices=["capture", "forward"])
    parser.add_argument("--layers", default=None, help="comma-separated layer numbers")
    parser.add_argument("--forward-repeats", type=int, default=0, help="time the sdpa forward")
    parser.add_argument("--widget", type=int, default=0, help="uncached layer switches to time")
    parser.add_argument("--page", action="append", default=[], help="views=path (repeatable)")
    parser.add_argument("--num-layers", type=int, help="GPT-2: fewer layers of the same shape")
    parser.add_argument("--float32", action="store_true", help="also the float32 storage")
    parser.add_argument("--float32-layers", default="0", help="layer positions it keeps")
    parser.add_argument("--float32-page", action="append", default=[], help="views=path")
    args = parser.parse_args()
    layers = [int(x) for x in args.layers.split(",")] if args.layers else None

    import torch

    torch.manual_seed(0)
    tokenizer = minilm()[1]
    model = model_of(args.model, args.num_layers)
    encoded = {"input_ids": encode(tokenizer, args.tokens)["input_ids"]}
    run = Run(args.model, model, tokenizer, text_of(args.tokens), [], (), 0.0)
    result: dict[str, Any] = {"tokens": args.tokens, "model": args.model, "layers": layers}
    if args.what == "forward":
        with Peak() as peak, torch.no_grad():
            start = time.perf_counter()
            model(**encoded)
            result["forward_s"] = time.perf_counter() - start
        result["peak_delta_bytes"] = peak.delta
        print(json.dumps(result))
        return
    log(f"{args.model} at {args.tokens} tokens: {args.what}")
    try:
        with Peak() as peak:
            trace, result["capture_s"] = attnscope_capture(run, layers)
    except ImportError as error:
        result["status"] = f"not available: {error}"
        print(json.dumps(result))
        return
    result["peak_delta_bytes"] = peak.delta
    result["trace_bytes"] = trace_bytes(trace)
    result["notes"] = list(trace.notes)
    log(f"captured in {result['capture_s']:.1f} s")
    if args.forward_repeats:
        _, result["forward_s"] = timed_forward(model, encoded, args.forward_repeats)
        log(f"forward in {result['forward_s']:.1f} s")
    if args.widget:
        result["widget"] = widget_times(trace, args.widget)
        log("widget answers timed")
    result["pages"] = save_pages(trace, args.page)
    if args.float32:
        try:
            positions = [int(x) for x in args.float32_layers.split(",")]
            old, result["float32"] = float32_trace(trace, positions)
        except ValueError as error:  # the memory refusal names the size and the fix
            result["float32"] = {"status": f"refused: {str(error).split(' (attnscope')[0]}"}
        else:
            del trace
            gc.collect()
            if args.widget:
                result["float32"]["widget"] = widget_times(old, args.widget)
            result["float32"]["pages"] = save_pages(old, args.float32_page)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
