"""Time the widget's analysis chunks: ``stats:self``, then ``pseudo:self:<layer>`` for every layer.

What a page or a widget encodes for the model view's statistics and the head
view's mean and rollout pseudo-heads, on MiniLM (6 layers x 12 heads, captured
with its default sdpa attention, so every weight is recomputed from q and k).
Each row is the fastest of ``--repeats`` fresh captures: the machine is shared,
and its load (printed) decides how far the others are off.

    python benchmarks/bench_analysis.py --tokens 256 512 --threads 1 2
"""

from __future__ import annotations

import argparse
import os
import time

from bench_inputs import minilm, text_of


def timed_chunks(num_tokens: int) -> tuple[float, float]:
    """Seconds for stats:self and for every pseudo:self:<layer> in turn, on a fresh capture."""
    import attnscope
    from attnscope.encode.chunks import encode_chunk, parse_key

    model, tokenizer = minilm()
    trace = attnscope.capture(model, text_of(num_tokens), tokenizer=tokenizer)
    start = time.perf_counter()
    encode_chunk(trace, parse_key("stats:self", trace))
    stats_s = time.perf_counter() - start
    start = time.perf_counter()
    for position in range(trace.stream.num_layers):
        encode_chunk(trace, parse_key(f"pseudo:self:{position}", trace))
    return stats_s, time.perf_counter() - start


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--threads", type=int, nargs="+", default=[torch.get_num_threads()])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the start")
    print("| tokens | torch threads | stats:self (s) | 6 x pseudo (s) | total (s) |")
    print("|---:|---:|---:|---:|---:|")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for num_tokens in args.tokens:
            runs = [timed_chunks(num_tokens) for _ in range(args.repeats)]
            stats_s = min(r[0] for r in runs)
            pseudo_s = min(r[1] for r in runs)
            print(
                f"| {num_tokens} | {threads} | {stats_s:.3f} | {pseudo_s:.3f} "
                f"| {min(sum(r) for r in runs):.3f} |"
            )
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")


if __name__ == "__main__":
    main()
