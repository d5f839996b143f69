"""Peak memory of one capture, measured in a fresh process (run by compare_peers.py).

tracemalloc does not see torch's allocations, so this reads the process's
peak resident set (``ru_maxrss``) after the step and subtracts the resident
set just before it. Prints one JSON object.

    python benchmarks/capture_memory.py 4096 --what capture --layers 0,11
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))

from bench_inputs import Run, encode, gpt2_shaped, minilm, text_of
from bench_views import attnscope_capture


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
    before = psutil.Process().memory_info().rss
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result: dict[str, object] = {"tokens": args.tokens, "what": args.what, "layers": layers}
    try:
        if args.what == "forward":
            with torch.no_grad():
                model(input_ids=input_ids)
        else:
            _, result["seconds"] = attnscope_capture(run, layers)
    except ImportError as error:
        result["status"] = f"not available: {error}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result["peak_delta_bytes"] = max(peak - before, 0)
    result["peak_already_reached"] = peak == peak_before
    print(json.dumps(result))


if __name__ == "__main__":
    main()
