"""Peak memory of one capture, measured in a fresh process (run by compare_peers.py).

tracemalloc does not see torch's allocations, so this resets the process's
peak resident set (Linux: ``5`` to ``/proc/self/clear_refs`` clears VmHWM)
just before the step, then reads the new peak and subtracts the resident set
from before the step: loading the model no longer counts. Prints one JSON
object.

    python benchmarks/capture_memory.py 4096 --what capture --layers 0,11
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))

from bench_inputs import Run, encode, gpt2_shaped, minilm, text_of
from bench_views import attnscope_capture


def _high_water_mark() -> int:
    """Peak resident set since the last reset, in bytes (VmHWM of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status: peak memory needs Linux")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tokens", type=int)
    parser.add_argument("--model", default="gpt2", choices=["gpt2", "minilm"])
    parser.add_argument("--what", default="capture", choices=["capture", "forward"])
    parser.add_argument("--layers", default=None, help="comma-separated layer numbers")
    args = parser.parse_args()
    layers = [int(x) for x in args.layers.split(",")] if args.layers else None

    import torch

    tokenizer = minilm()[1]
    model = minilm()[0] if args.model == "minilm" else gpt2_shaped()
    input_ids = encode(tokenizer, args.tokens)["input_ids"]
    run = Run(args.model, model, tokenizer, text_of(args.tokens), [], (), 0.0)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # the peak so far: loading is not the step
    before = psutil.Process().memory_info().rss
    result: dict[str, object] = {"tokens": args.tokens, "what": args.what, "layers": layers}
    try:
        if args.what == "forward":
            with torch.no_grad():
                model(input_ids=input_ids)
        else:
            _, result["seconds"] = attnscope_capture(run, layers)
    except ImportError as error:
        result["status"] = f"not available: {error}"
    peak = _high_water_mark()
    result["peak_delta_bytes"] = max(peak - before, 0)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
