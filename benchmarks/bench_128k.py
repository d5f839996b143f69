"""128k tokens on the CPU (issue 33): a tiny bfloat16 Llama, capture against its own forward.

The model of issue 33: a random Llama with 2 layers, 2 heads, 1 key/value
head, head_dim 16, in bfloat16 with its default sdpa attention, every layer
captured. Each row is measured in fresh processes (``--child``), so peak
resident memory is the step's own: capture (time, peak above the start, the
trace's bytes), then the model's forward timed in the same process, then the
live widget's answers (the head view's uncached layer switch, the model
view's thumbnails); the forward's own peak in another process. Goal: capture
≤ 2× its forward, peak ≤ the forward's peak + 2× the trace + 0.5 GB.

    python benchmarks/bench_128k.py                      # 32768 and 131072 tokens
    python benchmarks/bench_128k.py --tokens 4096
    python benchmarks/bench_128k.py --tokens 32768 --window 4096   # a sliding window (Mistral)
    python benchmarks/bench_128k.py --tokens 131072 --window 4096 --capture-only

``--capture-only`` times capture and the widget but not the model's own
forward (a window's forward builds N x N booleans: 16 GiB at 131072 tokens).

With ``--window`` the model is a Mistral of the same shape whose keys are a
sliding window: transformers builds its mask as N x N booleans for the
model's own forward (1 GiB at 32768 tokens, 16 GiB at 131072); capture
evaluates it a block of query rows at a time.

The input is made of words a word-level tokenizer maps one to one to tokens.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_worker import Peak, gb, head_view_keys, run_json_child, trace_bytes
from gpu_capture import build_model, text_of, word_tokenizer

TINY = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
}


def _widget_answers(trace: Any) -> dict[str, float]:
    """Seconds the live widget takes to answer a layer switch and the thumbnails."""
    import attnscope

    widget = attnscope.AttentionWidget(trace)
    name = next(iter(trace.streams))

    def ask(keys: list[str]) -> float:
        start = time.perf_counter()
        replies = widget.answer({"type": "request", "keys": keys})
        errors = [c["error"] for content, _ in replies for c in content["chunks"] if "error" in c]
        if errors:
            raise RuntimeError(f"the widget could not answer {keys}: {errors}")
        return time.perf_counter() - start

    first = ask(head_view_keys(widget, name, 0, at_end=False))
    switch = ask(head_view_keys(widget, name, 1, at_end=True))  # the dearest rows of layer 1
    thumbs = ask([f"thumbs:{name}"])
    return {"first_screen_s": first, "switch_s": switch, "thumbs_s": thumbs}


def child(
    what: str, tokens: int, window: int | None = None, forward: bool = True
) -> dict[str, Any]:
    """One step in this process: ``capture`` (then forward and widget) or ``forward`` (peak)."""
    import torch

    import attnscope

    tokenizer = word_tokenizer()
    model = build_model(TINY, len(tokenizer), tokens, "cpu", window)
    text = text_of(tokens)
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    assert ids.shape[1] == tokens, ids.shape
    with torch.no_grad():  # lazy set-up (kernels, thread pools) paid before either step
        model(input_ids=ids[:, :16], use_cache=False)
    attnscope.capture(model, text_of(16), tokenizer=tokenizer)
    result: dict[str, Any] = {"what": what, "tokens": tokens}
    if what == "forward":
        with Peak() as peak, torch.no_grad():
            start = time.perf_counter()
            model(input_ids=ids, use_cache=False)
            result["forward_s"] = time.perf_counter() - start
        result["forward_peak"] = peak.delta
        return result
    with Peak() as peak:
        start = time.perf_counter()
        trace = attnscope.capture(model, text, tokenizer=tokenizer)
        result["capture_s"] = time.perf_counter() - start
    result["capture_peak"] = peak.delta
    result["trace_bytes"] = trace_bytes(trace)
    result["notes"] = list(trace.notes)
    if forward:
        with torch.no_grad():
            start = time.perf_counter()
            model(input_ids=ids, use_cache=False)
            result["forward_again_s"] = time.perf_counter() - start
    result |= _widget_answers(trace)
    return result


def run_child(
    what: str, tokens: int, window: int | None = None, forward: bool = True
) -> dict[str, Any]:
    args = ["--child", what, "--tokens", str(tokens)]
    args += [] if window is None else ["--window", str(window)]
    return run_json_child(__file__, args + ([] if forward else ["--capture-only"]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", default="32768,131072", help="comma-separated lengths")
    parser.add_argument("--window", type=int, help="a Mistral with this sliding window")
    parser.add_argument(
        "--capture-only", action="store_true", help="time capture, not the model's forward"
    )
    parser.add_argument("--child", choices=["capture", "forward"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, int(args.tokens), args.window, not args.capture_only)))
        return
    import torch

    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()} {platform.system()}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"{'Llama' if args.window is None else f'Mistral (sliding window {args.window})'} "
        "2 layers x 2 heads (1 kv head, head_dim 16), bfloat16, sdpa, every layer"
    )
    print(
        "\n| tokens | forward | capture | ratio | forward peak | capture peak | trace "
        "| goal: ≤ 2×, peak ≤ fwd + 2× trace + 0.5 GB | layer switch | thumbnails |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for tokens in [int(n) for n in args.tokens.split(",")]:
        if args.capture_only:
            _capture_row(tokens, run_child("capture", tokens, args.window, forward=False))
            continue
        got = run_child("forward", tokens, args.window) | run_child("capture", tokens, args.window)
        forward = min(got["forward_s"], got["forward_again_s"])
        ratio = got["capture_s"] / forward
        allowed = got["forward_peak"] + 2 * got["trace_bytes"] + 0.5e9
        met = ratio <= 2 and got["capture_peak"] <= allowed
        print(
            f"| {tokens} | {forward:.1f} s | {got['capture_s']:.1f} s | {ratio:.2f}× "
            f"| +{gb(got['forward_peak'])} | +{gb(got['capture_peak'])} "
            f"| {gb(got['trace_bytes'])} | {'met' if met else 'missed'} "
            f"(peak allowed {gb(allowed)}) | {got['switch_s']:.2f} s "
            f"| {got['thumbs_s']:.2f} s |",
            flush=True,
        )
        for note in got["notes"]:
            if "differs from its eager" in note:
                print(f"|  | note: {note} |")


def _capture_row(tokens: int, got: dict[str, Any]) -> None:
    """A row of capture alone: the forward columns say it was not run."""
    print(
        f"| {tokens} | not run | {got['capture_s']:.1f} s | — | not run "
        f"| +{gb(got['capture_peak'])} | {gb(got['trace_bytes'])} | — "
        f"| {got['switch_s']:.2f} s | {got['thumbs_s']:.2f} s |",
        flush=True,
    )


if __name__ == "__main__":
    main()
