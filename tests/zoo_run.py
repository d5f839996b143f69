"""Capture every tiny model of :mod:`zoo_models` and judge the result against eager.

Each type ends in one outcome:

- ``exact``: every stream within 1e-5 of the model's own eager attention and
  ``trace.check()`` within 1e-5 (q and k recorded for every stream);
- ``attention-only``: the weights match eager, some stream has no q/k and a
  note says why;
- ``refused``: capture raised attnscope's error (a ``ValueError``) or a
  ``TypeError`` saying what is wrong;
- ``not built``: the tier could not build the type tiny (the reason is listed);
- ``wrong``, ``crash``, ``changed``: failures (wrong numbers, an exception from
  inside attnscope, or a model not left as found).

``python tests/zoo_run.py [types...]`` runs types in a pool of worker
processes and prints one JSON line per type.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
TEXT = "The quick brown fox jumps over the lazy dog."
TOLERANCE = 1e-5
STORED = 5e-4
"""Weights-only streams keep float16 weights (attnscope.trace.stream): 2⁻¹¹ of a weight ≤ 1."""
FIELDS = {
    "self": "attentions",
    "encoder": "encoder_attentions",
    "decoder": "decoder_attentions",
    "cross": "cross_attentions",
}


def fingerprint(model: Any) -> str:
    """Everything capture promises to leave as found, hashed."""
    parts: list[str] = []
    for module in model.modules():
        hooks = [
            len(getattr(module, n, {}))
            for n in (
                "_forward_hooks",
                "_forward_pre_hooks",
                "_forward_hooks_with_kwargs",
                "_forward_pre_hooks_with_kwargs",
            )
        ]
        parts.append(f"{type(module).__name__}:{module.training}:{hooks}")
        config = getattr(module, "config", None)
        if config is not None:
            parts.append(str(config.__dict__.get("_attn_implementation_internal")))
        parts.append(str(module.__dict__.get("_output_capturing_hooks_installed")))
    for name, param in model.named_parameters():
        parts.append(f"{name}:{param.requires_grad}:{float(param.detach().double().sum())}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _inputs(built: Any, tokenizer: Any) -> tuple[Any, dict[str, Any], dict[str, torch.Tensor]]:
    """What capture gets (text, options) and what the reference forward gets."""
    from zoo_models import IMAGE

    model = built.model
    accepted = set(__import__("inspect").signature(model.forward).parameters)
    if built.kind == "image":
        channels = int(getattr(model.config, "num_channels", 3))
        size = getattr(model.config, "image_size", None) or IMAGE
        height, width = (size, size) if isinstance(size, int) else size
        generator = torch.Generator().manual_seed(0)
        pixels = torch.randn(channels, height or IMAGE, width or IMAGE, generator=generator)
        return pixels, {}, {"pixel_values": pixels[None]}
    options: dict[str, Any] = {"tokenizer": tokenizer}
    inputs = {k: v for k, v in tokenizer(TEXT, return_tensors="pt").items() if k in accepted}
    if model.config.is_encoder_decoder:
        options["target"] = "The cat sat."
        start = int(getattr(model.config, "decoder_start_token_id", 0) or 0)
        target = tokenizer("The cat sat.", return_tensors="pt")["input_ids"]
        inputs["decoder_input_ids"] = torch.cat([torch.tensor([[start]]), target], dim=1)
    return TEXT, options, inputs


def _reference(model: Any, inputs: dict[str, torch.Tensor]) -> Any:
    """The model's own eager attention (a copy of the model runs it).

    BigBird settles on full attention for short inputs during its first call,
    building new modules that the output hooks of that call do not see.
    """
    reference = copy.deepcopy(model)
    if type(reference)._can_set_attn_implementation():
        reference.set_attn_implementation("eager")
    with torch.inference_mode():
        if callable(getattr(reference, "set_attention_type", None)):
            reference(**inputs)  # BigBird settles its attention type before hooks are set
        return reference(**inputs, output_attentions=True, use_cache=False)


def _field(name: str) -> str:
    return FIELDS[name.split("-", maxsplit=1)[0]]


def _band_to_full(band: np.ndarray, length: int) -> np.ndarray:
    """Longformer-style (heads, q, w + 1) weights on the full key axis, written plainly."""
    heads, q_len, width = band.shape
    half = (width - 1) // 2
    full = np.zeros((heads, q_len, length), dtype=band.dtype)
    for i in range(q_len):
        for j in range(width):
            if 0 <= i + j - half < length:
                full[:, i, i + j - half] = band[:, i, j]
    return full


def judge(trace: Any, outputs: Any) -> tuple[str, float, str]:
    """(outcome, worst error, detail) of a trace against the eager outputs."""
    worst = 0.0
    for name, stream in trace.streams.items():
        expected = getattr(outputs, _field(name), None)
        if not expected:
            return "wrong", float("inf"), f"eager returned no {_field(name)} for stream {name}"
        for pos, layer in enumerate(stream.layers):
            want = expected[layer][0].float().numpy()
            got = stream.attention[pos]
            banded = want.ndim == 3 and want.shape[:2] == got.shape[:2]
            if banded and want.shape[-1] != got.shape[-1]:
                want = _band_to_full(want, got.shape[-1])
            if want.shape != got.shape:
                return "wrong", float("inf"), f"{name} layer {layer}: {got.shape} vs {want.shape}"
            error = float(np.abs(want - got).max())
            limit = (
                STORED if stream.has_weights and stream.weights.dtype == np.float16 else TOLERANCE
            )
            if error > limit:
                return "wrong", error, f"{name} layer {layer}: weights differ from eager"
            worst = max(worst, error)
    shown = {name.split("-", maxsplit=1)[0] for name in trace.streams}
    for name, field in FIELDS.items():
        returned = getattr(outputs, field, None) and name not in shown
        if returned and not any(name in note for note in trace.notes):
            return "wrong", worst, f"the model returns {field}; no stream and no note"
    if all(s.has_qk for s in trace.streams.values()):
        error = trace.check()
        if error > TOLERANCE:
            return "wrong", error, "check() does not recompute the weights"
        return "exact", max(worst, error), ""
    if not any("neuron view unavailable" in note for note in trace.notes):
        return "wrong", worst, "a stream has no q/k and no note says why"
    return "attention-only", worst, trace.notes[0]


def _raised_by_attnscope(err: BaseException) -> bool:
    """True when attnscope's own code raised ``err`` (a refusal, not a crash inside a model)."""
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and f"{os.sep}attnscope{os.sep}" in frames[-1].filename


def run_one(model_type: str) -> dict[str, Any]:
    """Build, capture and judge one type; never raises."""
    import attnscope
    from capture_models import bpe_tokenizer
    from zoo_models import NotBuiltError, build

    start = time.perf_counter()
    result: dict[str, Any] = {"type": model_type}
    try:
        built = build(model_type)
    except NotBuiltError as err:
        return {**result, "outcome": "not built", "detail": str(err)}
    except Exception as err:
        detail = f"{type(err).__name__}: {str(err)[:200]}"
        return {**result, "outcome": "not built", "detail": detail}
    result["class"] = type(built.model).__name__
    try:
        text, options, inputs = _inputs(built, bpe_tokenizer(wrap=True))
        outputs = _reference(built.model, inputs)
    except Exception as err:
        detail = f"eager forward fails: {type(err).__name__}: {str(err)[:200]}"
        return {**result, "outcome": "not built", "detail": detail}
    before = fingerprint(built.model)
    try:
        trace = attnscope.capture(built.model, text, **options)
    except Exception as err:
        if isinstance(err, ValueError | TypeError) and _raised_by_attnscope(err):
            outcome, detail = "refused", str(err)
        else:
            outcome = "crash"
            detail = f"{type(err).__name__}: {err}\n{traceback.format_exc()[-1500:]}"
    else:
        outcome, worst, detail = judge(trace, outputs)
        result["error"] = worst
        result["streams"] = {n: [s.num_layers, s.num_heads] for n, s in trace.streams.items()}
        result["route"] = trace.metadata.get("route")
        result["notes"] = trace.notes
    if fingerprint(built.model) != before:
        outcome, detail = "changed", f"model not left as found (was {outcome}: {detail})"
    return {
        **result,
        "outcome": outcome,
        "detail": detail,
        "seconds": round(time.perf_counter() - start, 2),
    }


def _serve(types: Iterable[str]) -> None:
    torch.set_num_threads(1)
    for model_type in types:
        print(json.dumps(run_one(model_type)), flush=True)


def _worker(types: Sequence[str]) -> subprocess.Popen[str]:
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, str(Path(__file__)), "--serve", *types],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )


def run_pool(types: Sequence[str], workers: int = 2) -> list[dict[str, Any]]:
    """Run ``types`` in ``workers`` subprocesses; a type that kills its worker is a crash.

    A worker that dies is replaced by one that goes on with the types after it.
    """
    results: dict[str, dict[str, Any]] = {}
    pending = [list(types[i::workers]) for i in range(workers)]
    while any(pending):
        procs = [(share, _worker(share)) for share in pending if share]
        pending = []
        for share, proc in procs:
            out, _ = proc.communicate()
            for line in out.splitlines():
                if line.startswith("{"):
                    item = json.loads(line)
                    results[item["type"]] = item
            done = [t for t in share if t in results]
            if len(done) < len(share):
                dead = share[len(done)]
                results[dead] = {"type": dead, "outcome": "crash", "detail": "worker died"}
                pending.append(share[len(done) + 1 :])
    return [results[t] for t in types]


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    if sys.argv[1:2] == ["--serve"]:
        _serve(sys.argv[2:])
    else:
        from zoo_models import model_types

        for item in run_pool(sys.argv[1:] or model_types()):
            print(json.dumps(item))
