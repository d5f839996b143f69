"""Which long, many-heads and memory cases the benchmark runs, and the goals they are held to.

Sections (``compare_peers.py --only ...``):

- ``heads``: the 32 x 32-head Llama shape: the default page at 512 tokens,
  and a model-view page at 2048 tokens with every layer (1024 cells).
- ``switch``: the 12 x 12 GPT-2 shape at 4096 tokens, every layer: the live
  widget's first head-view chunk, uncached layer switches and thumbnails,
  the default page; beside them layers 0 and 11 in the float32 storage.
- ``long``: 8192 tokens, every layer (capture against the model's own
  forward pass, peak memory, page, widget).
- ``memory``: capture's peak memory against the trace it returns, and the
  forward pass's own peak, at 2048 and 3072 tokens.
- ``huge``: 32768 tokens with ``layers=`` (all three views opened in
  chromium); last, as the longest.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench_goals import Goal, Goals, done
from bench_long import ALL_VIEWS, Case, CaseResult

SECTIONS = ("peers", "switch", "long", "heads", "memory", "huge")


def cases(section: str, long_model: str, long_layers: list[int]) -> list[Case]:
    """The cases of one section (``peers`` has none: compare_peers.py runs it)."""
    if section == "heads":
        return [
            Case("32 x 32 heads, default page", "llama", 512, forward_repeats=1, pages=[ALL_VIEWS]),
            Case(
                "32 x 32 heads, model view",
                "llama",
                2048,
                forward_repeats=1,
                pages=[("model",)],
                timeout_s=1200,
            ),
        ]
    if section == "switch":
        return [
            Case(
                "layer switch at 4096",
                "gpt2",
                4096,
                forward_repeats=1,
                widget=5,
                pages=[ALL_VIEWS],
                float32_layers=[0, 11],
                float32_pages=[ALL_VIEWS],
            )
        ]
    if section == "long":
        return [
            Case(
                "every layer at 8192",
                "gpt2",
                8192,
                forward_repeats=1,
                widget=2,
                pages=[ALL_VIEWS],
                float32_layers=[0],
                timeout_s=1500,
            )
        ]
    if section == "huge":
        return [
            Case(
                "32768 with layers=",
                long_model,
                32768,
                layers=long_layers,
                pages=[ALL_VIEWS],
                timeout_s=1200,
            )
        ]
    if section == "memory":
        return [
            Case(f"{what} memory", "gpt2", n, what=what)
            for n in (2048, 3072)
            for what in ("capture", "forward")
        ]
    return []


def _painted(result: CaseResult, views: tuple[str, ...]) -> tuple[float | None, Any]:
    """Median painted ms of the page with ``views``, and its timing."""
    for page in result.worker.get("pages", []):
        if tuple(page["views"].split(",")) == views:
            timing = result.timings.get(page["path"])
            if timing is not None and timing.drawn_ms:
                return statistics.median(timing.drawn_ms), timing
            return None, timing
    return None, None


def _why(result: CaseResult) -> str:
    return str(result.worker.get("status", "no page timing"))


def long_goals(goals: Goals, results: list[CaseResult]) -> None:
    """The goals of issue 13 and 17 that the cases measure."""
    by_name = {r.case.name: r for r in results}
    memory: dict[tuple[str, int], CaseResult] = {
        (r.case.what, r.case.tokens): r for r in results if r.case.name.endswith("memory")
    }

    switch = by_name.get("layer switch at 4096")
    if switch is not None:
        widget = switch.worker.get("widget")
        median = statistics.median(widget["switch_s"]) if widget else None
        first = f"; first head-view chunk {widget['first_head_s']:.3f} s" if widget else ""
        if widget and "switch_keys" in widget:
            first += f"; each switch asks for {', '.join(widget['switch_keys'])} (layer 1's keys)"
        goals.add(
            Goal(
                "4096 tokens, live widget: uncached layer switch ≤ 200 ms of Python",
                None if median is None else median * 1000,
                200,
                " ms",
                detail=(f"median of {len(widget['switch_s'])}{first}" if widget else _why(switch)),
            )
        )

    long = by_name.get("every layer at 8192")
    if long is not None:
        w = long.worker
        capture, fwd = w.get("capture_s"), w.get("forward_s")
        goals.add(
            Goal(
                "8192 tokens, every layer: capture ≤ 2× the model's own sdpa forward",
                capture / fwd if capture and fwd else None,
                2.0,
                "×",
                detail=f"capture {capture:.1f} s, forward {fwd:.1f} s"
                if capture and fwd
                else _why(long),
            )
        )
        peak = w.get("peak_delta_bytes")
        goals.add(
            Goal(
                "8192 tokens, every layer: capture's peak RSS ≤ 4 GB above the model",
                None if peak is None else peak / 1e9,
                4.0,
                " GB",
                detail="" if peak is not None else _why(long),
            )
        )
        painted, timing = _painted(long, ALL_VIEWS)
        goals.add(
            Goal(
                "8192 tokens: head view drawn (first painted frame) ≤ 1.5 s",
                None if painted is None else painted / 1000,
                1.5,
                " s",
                detail="" if painted is not None else _why(long),
            )
        )
        if timing is not None and timing.switch_ms:
            page_switch = statistics.median(timing.switch_ms)
            goals.add(
                Goal("8192 tokens: layer switch in the page ≤ 200 ms", page_switch, 200, " ms")
            )
        widget = w.get("widget")
        if widget and widget["switch_s"]:
            goals.add(
                Goal(
                    "8192 tokens: layer switch in the live widget ≤ 200 ms (Python, uncached)",
                    statistics.median(widget["switch_s"]) * 1000,
                    200,
                    " ms",
                )
            )

    huge = by_name.get("32768 with layers=")
    if huge is not None:
        painted, timing = _painted(huge, ALL_VIEWS)
        opened = [] if timing is None else list(timing.probes.items())
        ok = painted is not None and all(
            "ms" in v and "fail" not in v for k, v in opened if k.startswith("open")
        )
        detail = (
            f"{huge.case.model}, layers={huge.case.layers}: head view {painted:.0f} ms; "
            + "; ".join(f"{k}: {v}" for k, v in opened if k.startswith("open"))
            if painted is not None
            else _why(huge)
        )
        goals.add(done("32768 tokens with layers=: all three views open", ok, detail))

    cells = by_name.get("32 x 32 heads, model view")
    if cells is not None:
        painted, _ = _painted(cells, ("model",))
        goals.add(
            done(
                "32 x 32 heads, 2048 tokens, every layer: the model view's 1024 cells draw",
                painted is not None,
                f"painted in {painted:.0f} ms" if painted is not None else _why(cells),
            )
        )
    page = by_name.get("32 x 32 heads, default page")
    if page is not None and page.worker.get("pages"):
        left_out = page.worker["pages"][0]["left_out"]
        missing = page.worker["pages"][0].get("views_missing", [])
        complete = not {"head", "model", "unknown"} & set(missing)
        goals.add(
            done(
                "32 x 32 heads, 512 tokens: the default page holds every layer of the head "
                "and model views",
                complete,
                f"left out: {left_out}",
            )
        )

    for tokens in (2048, 3072):
        capture = memory.get(("capture", tokens))
        if capture is None:
            continue
        w = capture.worker
        fwd = memory.get(("forward", tokens))
        fwd_peak = fwd.worker.get("peak_delta_bytes") if fwd else None
        ratio = w["peak_delta_bytes"] / w["trace_bytes"] if "trace_bytes" in w else None
        detail = (
            f"peak +{w['peak_delta_bytes'] / 1e6:.0f} MB for a {w['trace_bytes'] / 1e6:.0f} MB "
            f"trace; the forward pass alone peaks at +{(fwd_peak or 0) / 1e6:.0f} MB"
            if ratio is not None
            else _why(capture)
        )
        goals.add(
            Goal(
                f"{tokens} tokens: capture's peak ≤ 1.2× the trace it returns",
                ratio,
                1.2,
                "×",
                detail=detail,
            )
        )
        if ratio is not None and fwd_peak is not None:
            # The trace is O(N) now, so the forward pass's own peak dominates the line above;
            # what capture adds beyond it is the part capture can change.
            added = (w["peak_delta_bytes"] - fwd_peak) / w["trace_bytes"]
            goals.add(
                Goal(
                    f"{tokens} tokens: capture's peak beyond the forward's own ≤ 1.2× the trace",
                    added,
                    1.2,
                    "×",
                    detail=f"+{(w['peak_delta_bytes'] - fwd_peak) / 1e6:.0f} MB beyond the forward",
                )
            )


def peer_goals(goals: Goals, results: dict[tuple[str, int], tuple[Any, Any]]) -> None:
    """Issue 13's default-page bar, from the peers table's views."""
    ours = results.get(("attnscope page, all views", 256), (None, None))[0]
    theirs = results.get(("bertviz head_view", 256), (None, None))[0]
    if ours is not None and theirs is not None and "capture" in ours.seconds:
        goals.add(
            Goal(
                "256 MiniLM tokens: default save_html ≥ 40× smaller than bertviz head_view",
                (theirs.size or 0) / (ours.size or 1),
                40,
                "×",
                at_least=True,
                detail=f"{(ours.size or 0) / 1e6:.1f} MB against {(theirs.size or 0) / 1e6:.1f} MB",
            )
        )
        our_s = ours.seconds["capture"] + ours.seconds["save_html"]
        their_s = (theirs.run.eager_forward_s or 0.0) + (theirs.python_s or 0.0)
        goals.add(
            Goal(
                "256 MiniLM tokens: default save_html ≥ 8× faster than bertviz head_view, "
                "each with its forward pass",
                their_s / our_s,
                8,
                "×",
                at_least=True,
                detail=f"{our_s:.2f} s (capture + save_html) against {their_s:.2f} s",
            )
        )
    big = results.get(("attnscope page, all views", 512))
    if big is not None and "save_html" in big[0].seconds:
        goals.add(
            Goal(
                "512 MiniLM tokens: save_html of all three views ≤ 0.5 s",
                big[0].seconds["save_html"],
                0.5,
                " s",
            )
        )
