"""``save_html`` of a long trace: seconds to write the page, and where they go.

Two random causal GPT-2 models, captured over MiniLM's tokens of the usual
benchmark text (``bench_inputs.text_of``):

- ``4x4``: 4 layers x 4 heads, n_embd 64, at 4002 tokens: the trace of issue
  39's "save_html of a 4002-token trace" (its goal: at most 5 s on this CPU);
- ``12x12``: GPT-2's shape (12 layers x 12 heads, n_embd 768) at 4096 tokens,
  where every head's statistics alone read 144 x 4096² weights.

Each repeat captures a fresh trace (a page keeps nothing between traces) and
times the default ``save_html`` (all three views). The chunk kinds' own
seconds (``stats:``, ``top:``, ``qk:``, ...) are summed from the page's
encoder; "rest" is packing, compression and writing. Prints a markdown table.

    python benchmarks/bench_save_html.py                   # both, 3 repeats of 4x4, 1 of 12x12
    python benchmarks/bench_save_html.py --cases 4x4 --repeats 5
    python benchmarks/bench_save_html.py --floor           # and the 12x12 shape's softmax pass
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench_inputs import encode, minilm

GOAL_S = 5.0


@dataclass(frozen=True)
class Shape:
    """A random causal GPT-2 and the tokens it is captured over."""

    layers: int
    heads: int
    width: int
    tokens: int
    repeats: int

    def model(self) -> Any:
        import torch
        from transformers import GPT2Config, GPT2Model

        torch.manual_seed(0)
        config = GPT2Config(
            n_layer=self.layers,
            n_head=self.heads,
            n_embd=self.width,
            n_positions=self.tokens,
            vocab_size=int(minilm()[1].vocab_size),
        )
        return GPT2Model(config).eval()


SHAPES = {
    "4x4": Shape(layers=4, heads=4, width=64, tokens=4002, repeats=3),
    "12x12": Shape(layers=12, heads=12, width=768, tokens=4096, repeats=1),
}


# What each chunk kind's encoding calls (attnscope.encode.chunks.encode_chunk and the page's
# own top: call), by the module that calls it: (module, function, kind).
TIMED = [
    ("attnscope.encode.chunks", "stats_arrays", "stats"),
    ("attnscope.encode.chunks", "top_arrays", "top"),
    ("attnscope.encode.embed", "top_arrays", "top"),
    ("attnscope.encode.chunks", "any_thumbnails", "thumbs"),
    ("attnscope.encode.chunks", "pseudo_arrays", "pseudo"),
    ("attnscope.encode.chunks", "qk_arrays", "qk"),
    ("attnscope.encode.chunks", "tile_arrays", "tile"),
]


class TimedKinds:
    """While entered, each chunk kind's encoding seconds are added to :attr:`seconds`."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> TimedKinds:
        import importlib

        for module_name, name, kind in TIMED:
            module = importlib.import_module(module_name)
            original = getattr(module, name)
            self._saved.append((module, name, original))
            setattr(module, name, self._timed(original, kind))
        return self

    def __exit__(self, *exc: object) -> None:
        for module, name, original in reversed(self._saved):
            setattr(module, name, original)
        self._saved.clear()

    def _timed(self, function: Any, kind: str) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[kind] += time.perf_counter() - start

        return timed


def run_shape(name: str, shape: Shape) -> list[str]:
    """The table row of one shape: capture, save_html (median) and its parts."""
    import attnscope

    model, tokenizer = shape.model(), minilm()[1]
    ids = encode(tokenizer, shape.tokens)["input_ids"]
    totals: list[float] = []
    parts: dict[str, float] = defaultdict(float)
    captures: list[float] = []
    size = 0
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(shape.repeats):
            start = time.perf_counter()
            trace = attnscope.capture(model, ids, tokenizer=tokenizer)
            captures.append(time.perf_counter() - start)
            with TimedKinds() as timed:
                start = time.perf_counter()
                path = attnscope.save_html(trace, Path(folder) / f"{name}.html")
                totals.append(time.perf_counter() - start)
            size = path.stat().st_size
            for kind, s in timed.seconds.items():
                parts[kind] += s / shape.repeats
            del trace
    total = statistics.median(totals)
    named = sorted(parts.items(), key=lambda kv: -kv[1])
    spent = ", ".join(f"{kind} {s:.2f}" for kind, s in named if s >= 0.05)
    rest = total - sum(parts.values())
    met = "met" if total <= GOAL_S else "not met"
    return [
        name,
        f"{shape.layers} x {shape.heads}, n_embd {shape.width}",
        str(shape.tokens),
        f"{statistics.median(captures):.1f} s",
        f"**{total:.2f} s** ({' / '.join(f'{t:.2f}' for t in totals)})",
        f"{spent}, rest {rest:.2f}",
        f"{size / 1e6:.1f} MB",
        f"{met} (≤ {GOAL_S:g} s)",
    ]


def softmax_floor(shape: Shape, block: int = 256) -> float:
    """Seconds of one causal pass of ``softmax(q kᵀ)`` over every head of ``shape``, alone.

    Random q and k of GPT-2's head size (64), a block of query rows at a time
    over the keys it sees: what any exact per-head statistic must at least
    compute, before reducing a single weight.
    """
    import torch

    heads, tokens, size = shape.heads, shape.tokens, shape.width // shape.heads
    q, k = torch.randn(heads, tokens, size), torch.randn(heads, tokens, size)
    start = time.perf_counter()
    for _ in range(shape.layers):
        for first in range(0, tokens, block):
            last = min(first + block, tokens)
            scores = q[:, first:last] @ k[:, :last].transpose(1, 2)
            hidden = torch.arange(first, last)[:, None] < torch.arange(last)[None, :]
            torch.softmax(scores.masked_fill_(hidden, float("-inf")), dim=-1)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default="4x4,12x12", help="comma-separated: 4x4, 12x12")
    parser.add_argument("--repeats", type=int, help="repeats of every case (default: its own)")
    parser.add_argument(
        "--floor", action="store_true", help="also time one softmax pass of the 12x12 shape"
    )
    args = parser.parse_args()
    import torch

    print(
        f"save_html of long traces, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print(
        "| case | model | tokens | capture | save_html, median (each) "
        "| chunk kinds' seconds (mean) | page | goal |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        shape = SHAPES[name]
        if args.repeats:
            shape = dataclasses.replace(shape, repeats=args.repeats)
        print("| " + " | ".join(run_shape(name, shape)) + " |", flush=True)
    if args.floor:
        shape = SHAPES["12x12"]
        print(
            f"\nOne causal pass of softmax(q kᵀ) over the {shape.layers * shape.heads} heads of "
            f"the 12x12 shape at {shape.tokens} tokens, nothing else: "
            f"{softmax_floor(shape):.2f} s"
        )


if __name__ == "__main__":
    main()
