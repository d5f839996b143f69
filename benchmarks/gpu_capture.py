"""Capture on one GPU at long context: a random Llama-3.2-1B shape in bfloat16 (issue 22).

16 layers, 32 heads, 8 key/value heads, hidden 2048, default sdpa attention,
every layer captured at 8192, 32768 and 131072 tokens. For each length it
prints: the model's own forward (median of 3 after a warm-up) and
``attnscope.capture``, each with the GPU's peak above what was allocated
before the step; the trace's q/k bytes; the live widget's uncached layer
switch (the head view's dearest blocks of a layer not asked for before); the
model view's thumbnails of every layer (and per layer); and
``save_html(views=("head",))`` (up to ``--page-max`` tokens). Goals: capture
≤ 1.5× the forward, GPU peak ≤ the forward's peak + 1.2× the q/k bytes, layer
switch ≤ 100 ms and a layer's thumbnails ≤ 1 s at 131072, save_html ≤ 10 s at
32768.

    python benchmarks/gpu_capture.py                 # on a CUDA GPU (H100/H200 class)
    python benchmarks/gpu_capture.py --tiny          # a tiny model on the CPU: checks the script

The input is made of words a word-level tokenizer built here maps one to one
to tokens: nothing is downloaded.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_inputs import WORDS
from bench_worker import head_view_keys

LLAMA_1B = {
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
}
TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


def word_tokenizer() -> Any:
    """A word-level tokenizer over :data:`WORDS`: one word, one token, no special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0} | {w: i + 1 for i, w in enumerate(dict.fromkeys(WORDS))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


def text_of(tokens: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(tokens))


def build_model(
    shape: dict[str, int], vocab: int, tokens: int, device: str, window: int | None = None
) -> Any:
    """A random bfloat16 Llama of ``shape``; with ``window``, a Mistral whose keys slide."""
    import torch
    from transformers import LlamaConfig, LlamaModel, MistralConfig, MistralModel

    torch.manual_seed(0)
    if window is None:
        config: Any = LlamaConfig(vocab_size=vocab, max_position_embeddings=tokens, **shape)
        kind: Any = LlamaModel
    else:
        config = MistralConfig(
            vocab_size=vocab, max_position_embeddings=tokens, sliding_window=window, **shape
        )
        kind = MistralModel
    with torch.device(device):
        model = kind(config).to(torch.bfloat16)
    return model.eval()


class Gpu:
    """Seconds and peak device memory above the start of a ``with`` block (CPU: time only)."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")

    def __enter__(self) -> Gpu:
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.before = torch.cuda.memory_allocated()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self.start
        self.peak = torch.cuda.max_memory_allocated() - self.before if self.cuda else 0


def one_length(model: Any, tokenizer: Any, tokens: int, device: str, page: bool) -> dict[str, Any]:
    """Every measurement of one input length."""
    import torch

    import attnscope

    ids = tokenizer(text_of(tokens), return_tensors="pt")["input_ids"].to(device)
    assert ids.shape[1] == tokens, ids.shape
    forward = []
    with torch.no_grad():
        model(input_ids=ids[:, :64], use_cache=False)  # kernels chosen, pools made
        for _ in range(3):
            with Gpu(device) as step:
                model(input_ids=ids, use_cache=False)
            forward.append((step.seconds, step.peak))
    with Gpu(device) as step:
        trace = attnscope.capture(model, text_of(tokens), tokenizer=tokenizer)
    result: dict[str, Any] = {
        "tokens": tokens,
        "forward_s": statistics.median(s for s, _ in forward),
        "forward_peak": max(p for _, p in forward),
        "capture_s": step.seconds,
        "capture_peak": step.peak,
        "qk_bytes": sum(
            int(s.queries.nbytes + s.keys.nbytes)
            for s in trace.streams.values()
            if s.queries is not None and s.keys is not None
        ),
        "qk_dtype": trace.metadata.get("qk_dtype"),
        "slow": [n for n in trace.notes if "differs from its eager" in n],
    }
    widget = attnscope.AttentionWidget(trace)
    name = next(iter(trace.streams))
    layers = trace.streams[name].num_layers

    def ask(keys: list[str]) -> float:
        start = time.perf_counter()
        replies = widget.answer({"type": "request", "keys": keys})
        errors = [c["error"] for content, _ in replies for c in content["chunks"] if "error" in c]
        if errors:
            raise RuntimeError(f"the widget could not answer {keys}: {errors}")
        return time.perf_counter() - start

    ask(head_view_keys(widget, name, 0, at_end=False))  # the first screen
    switches = [ask(head_view_keys(widget, name, p, at_end=True)) for p in range(1, min(4, layers))]
    result["switch_s"] = statistics.median(switches)
    result["thumbs_s"] = ask([f"thumbs:{name}"])
    result["thumbs_layer_s"] = result["thumbs_s"] / layers
    if page:
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            attnscope.save_html(trace, Path(folder) / "head.html", views=("head",))
            result["save_html_s"] = time.perf_counter() - start
    return result


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def row(r: dict[str, Any]) -> str:
    ratio = r["capture_s"] / r["forward_s"]
    allowed = r["forward_peak"] + 1.2 * r["qk_bytes"]
    page = f"{r['save_html_s']:.2f} s" if "save_html_s" in r else "—"
    return (
        f"| {r['tokens']} | {r['forward_s']:.3f} s | {r['capture_s']:.3f} s ({ratio:.2f}×) "
        f"| +{gb(r['forward_peak'])} | +{gb(r['capture_peak'])} "
        f"({'≤' if r['capture_peak'] <= allowed else '>'} {gb(allowed)}) "
        f"| {gb(r['qk_bytes'])} {','.join(r['qk_dtype'] or [])} | {r['switch_s'] * 1000:.0f} ms "
        f"| {r['thumbs_s']:.2f} s ({r['thumbs_layer_s']:.3f} s a layer) | {page} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tiny", action="store_true", help="a tiny model on the CPU")
    parser.add_argument("--tokens", default=None, help="comma-separated lengths")
    parser.add_argument("--page-max", type=int, default=32768, help="save_html up to this")
    args = parser.parse_args()
    import torch
    import transformers

    device = "cpu" if args.tiny else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU here; run with --tiny to check the script on the CPU")
    default = "128,256" if args.tiny else "8192,32768,131072"
    lengths = [int(n) for n in (args.tokens or default).split(",")]
    tokenizer = word_tokenizer()
    model = build_model(TINY if args.tiny else LLAMA_1B, len(tokenizer), max(lengths), device)
    where = torch.cuda.get_device_name() if device == "cuda" else platform.processor() or "CPU"
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {where}, torch "
        f"{torch.__version__}, transformers {transformers.__version__}; "
        f"{'tiny' if args.tiny else 'Llama-3.2-1B shape'} in bfloat16, sdpa, every layer"
    )
    print(
        "\n| tokens | forward | capture | forward peak | capture peak (goal) | q/k "
        "| layer switch | thumbnails | save_html head |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    import attnscope

    attnscope.capture(model, text_of(64), tokenizer=tokenizer)  # imports and set-up, untimed
    for tokens in lengths:
        try:
            result = one_length(model, tokenizer, tokens, device, tokens <= args.page_max)
        except torch.OutOfMemoryError as error:
            print(f"| {tokens} | out of memory: {str(error).splitlines()[0][:160]} |")
            torch.cuda.empty_cache()
            continue
        print(row(result), flush=True)
        for note in result["slow"]:
            print(f"|  | note: {note} |")


if __name__ == "__main__":
    main()
