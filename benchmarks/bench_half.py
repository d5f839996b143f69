"""Capture of a half-precision model against its own forward pass, float32 beside it (CPU).

A random Llama (4 layers, 8 heads, hidden 512, default sdpa attention) at
8192 tokens, once in float32 and once in bfloat16. Each measurement runs in a
fresh process (``--child``), so peak resident memory is the step's own:
capture (peak and the trace's bytes from the first), capture and the model's forward
pass timed in turns (median of ``--repeats`` each); the forward's own peak in
another process. Prints a markdown table and the issue-22 goal:
capture ≤ 2× its forward, peak ≤ the forward's peak + 2× the trace + 1 GB.

    python benchmarks/bench_half.py                    # 8192 tokens, float32 and bfloat16
    python benchmarks/bench_half.py --tokens 1024 --dtypes bfloat16,float16
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_inputs import encode, llama_shaped, minilm, text_of
from bench_worker import Peak, gb, run_json_child, trace_bytes


def small_llama(dtype: str, tokens: int) -> Any:
    """The random Llama of issue 22 (4 x 8 heads, hidden 512) in ``dtype``, sdpa attention."""
    import torch

    shape = {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8}
    model = llama_shaped(**shape, num_key_value_heads=8, max_position_embeddings=tokens)
    return model.to(getattr(torch, dtype))


def child(what: str, dtype: str, tokens: int, repeats: int) -> dict[str, Any]:
    """One step in this process: ``capture`` (then the forward's time) or ``forward`` (peak)."""
    import torch

    import attnscope

    tokenizer = minilm()[1]
    model = small_llama(dtype, tokens)
    encoded = {"input_ids": encode(tokenizer, tokens)["input_ids"]}
    with torch.no_grad():  # lazy set-up (kernels, thread pools) is paid before either step
        model(input_ids=encoded["input_ids"][:, :16], use_cache=False)
    result: dict[str, Any] = {"what": what, "dtype": dtype, "tokens": tokens}
    if what == "forward":
        with Peak() as peak, torch.no_grad():
            model(**encoded, use_cache=False)
        result["forward_peak"] = peak.delta
        return result
    with Peak() as peak:
        start = time.perf_counter()
        trace = attnscope.capture(model, text_of(tokens), tokenizer=tokenizer)
        captures = [time.perf_counter() - start]
    result["capture_peak"] = peak.delta
    result["trace_bytes"] = trace_bytes(trace)
    result["qk_dtype"] = trace.metadata.get("qk_dtype")
    result["notes"] = list(trace.notes)
    del trace
    # Capture and forward taken in turns, so that both see the same load on the machine.
    forwards = []
    for turn in range(repeats):
        if turn:
            start = time.perf_counter()
            attnscope.capture(model, text_of(tokens), tokenizer=tokenizer)
            captures.append(time.perf_counter() - start)
        with torch.no_grad():
            start = time.perf_counter()
            model(**encoded, use_cache=False)
            forwards.append(time.perf_counter() - start)
    result["capture_s"] = statistics.median(captures)
    result["forward_s"] = statistics.median(forwards)
    return result


def run_child(what: str, dtype: str, tokens: int, repeats: int) -> dict[str, Any]:
    args = ["--child", what, "--dtypes", dtype, "--tokens", str(tokens)]
    return run_json_child(__file__, [*args, "--repeats", str(repeats)])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--repeats", type=int, default=3, help="captures and forwards timed")
    parser.add_argument("--child", choices=["capture", "forward"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.dtypes, args.tokens, args.repeats)))
        return
    import torch

    started = datetime.now(UTC)
    print(
        f"{started:%Y-%m-%d %H:%M} UTC, {platform.machine()} {platform.system()}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    )
    print(
        "\n| model | tokens | dtype | q/k stored | forward (sdpa) | capture | ratio "
        "| forward peak | capture peak | trace | goal: capture ≤ 2× forward, "
        "peak ≤ forward peak + 2× trace + 1 GB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for dtype in args.dtypes.split(","):
        got = run_child("capture", dtype, args.tokens, args.repeats)
        got |= run_child("forward", dtype, args.tokens, args.repeats)
        ratio = got["capture_s"] / got["forward_s"]
        allowed = got["forward_peak"] + 2 * got["trace_bytes"] + 1e9
        met = ratio <= 2 and got["capture_peak"] <= allowed
        print(
            f"| Llama 4 x 8 heads, hidden 512 | {args.tokens} | {dtype} "
            f"| {', '.join(got['qk_dtype'] or [])} | {got['forward_s']:.2f} s "
            f"| {got['capture_s']:.2f} s | {ratio:.2f}× | +{gb(got['forward_peak'])} "
            f"| +{gb(got['capture_peak'])} | {gb(got['trace_bytes'])} "
            f"| {'met' if met else 'missed'} (peak allowed {gb(allowed)}) |"
        )
        slow = [n for n in got["notes"] if "differs from its eager" in n]
        if slow:
            print(f"|  | | | note: {slow[0]} | | | | | | | |")


if __name__ == "__main__":
    main()
