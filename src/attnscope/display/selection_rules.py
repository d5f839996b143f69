"""The rules of a widget's selection: each synced trait checked, and the traits that move together.

:class:`~attnscope.AttentionWidget` declares the traits (``docs/protocol.md``,
"Synced traits"); this base class holds what keeps them valid: each
``@validate`` refuses a value out of range for the shown stream with a
:class:`traitlets.TraitError` that says what would be valid, a new stream clamps
the selection to its shape, and a generation's step and query follow each
other. Every check runs with every trait already set, so their order does not
matter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t

from attnscope.analysis.statistics import STATISTICS
from attnscope.encode.analysis_chunks import pseudo_heads, rollout_unavailable
from attnscope.encode.meta import generation_meta
from attnscope.encode.stream_change import CLAMPED, clamp_to_stream, stream_shape

if TYPE_CHECKING:
    from attnscope.display.scan_ranking import ScanRanking
    from attnscope.encode.comparison import ComparisonChunks
    from attnscope.encode.selection import ViewName
    from attnscope.trace import AttentionStream, AttentionTrace


class HeadList(t.List):  # type: ignore[type-arg]
    """A trait holding a list of head indices, where ``None`` stands for every head."""

    def validate(self, obj: Any, value: Any) -> Any:
        """Check the list as a list of ints, None read as ``[]`` (every head)."""
        return super().validate(obj, [] if value is None else value)


class SelectionRules(anywidget.AnyWidget):  # type: ignore[misc]
    """The checks and links of a widget's selection traits; the widget declares the traits.

    A subclass sets ``_views``, ``_trace``, ``_compared`` and ``_ranking``
    before its traits are first assigned.

    Examples
    --------
    >>> import numpy as np, traitlets
    >>> from attnscope import AttentionTrace, AttentionWidget
    >>> w = AttentionWidget(AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32)))
    >>> isinstance(w, SelectionRules)
    True
    >>> try:
    ...     w.head = 2
    ... except traitlets.TraitError as err:
    ...     print(err)
    head=2 is out of range: stream 'self' has 2 heads (0..1).
    """

    _views: tuple[ViewName, ...]
    _trace: AttentionTrace
    _compared: ComparisonChunks | None
    _ranking: ScanRanking | None

    def _not_offered(self, view: object) -> str:
        return (
            f"view={view!r} is not offered by this widget, whose views are "
            f"{list(self._views)}; pick one of those, or create the widget with views= "
            f"including {view!r}."
        )

    def _stream(self) -> AttentionStream:
        return self._trace.streams[self.stream]

    # -- validation: each runs with every trait already set, so order does not matter --
    @t.validate("view")
    def _check_view(self, proposal: t.Bunch) -> str:
        value = str(proposal["value"])
        if value not in self._views:
            raise t.TraitError(self._not_offered(value))
        return value

    @t.validate("stream")
    def _check_stream(self, proposal: t.Bunch) -> str:
        value = proposal["value"]
        if value not in self._trace.streams:
            raise t.TraitError(unknown_stream(value, self._trace))
        return str(value)

    @t.validate("layer")
    def _check_layer(self, proposal: t.Bunch) -> int:
        value = int(proposal["value"])
        stream = self._stream()
        if not 0 <= value < stream.num_layers:
            raise t.TraitError(
                f"layer={value} is out of range: stream {self.stream!r} has "
                f"{stream.num_layers} layers, positions 0..{stream.num_layers - 1} (model "
                f"layers {list(stream.layers)}; position = index in that list)."
            )
        return value

    @t.validate("heads")
    def _check_heads(self, proposal: t.Bunch) -> list[int]:
        value = proposal["value"]
        count = self._stream().num_heads
        if not value:
            return list(range(count))
        return self._indices(value, "heads", count, "heads", "pass None for all heads")

    @t.validate("head")
    def _check_head(self, proposal: t.Bunch) -> int:
        value = int(proposal["value"])
        count = self._stream().num_heads
        if not 0 <= value < count:
            raise t.TraitError(
                f"head={value} is out of range: stream {self.stream!r} has {count} heads "
                f"(0..{count - 1})."
            )
        return value

    @t.validate("query")
    def _check_query(self, proposal: t.Bunch) -> int | None:
        return self._check_token(proposal["value"], "query", self._stream().q_len)

    @t.validate("key")
    def _check_key(self, proposal: t.Bunch) -> int | None:
        return self._check_token(proposal["value"], "key", self._stream().k_len)

    def _check_token(self, value: int | None, name: str, length: int) -> int | None:
        if value is None:
            return None
        if not 0 <= int(value) < length:
            raise t.TraitError(
                f"{name}={value} is out of range: stream {self.stream!r} has {length} "
                f"{name} positions (0..{length - 1}); use None for no selection."
            )
        return int(value)

    @t.validate("pair_filter")
    def _check_pair_filter(self, proposal: t.Bunch) -> str:
        value = str(proposal["value"])
        sides = {self._stream().query_side, self._stream().key_side}
        segmented = any(self._trace.tokens_for(s).segments is not None for s in sides)
        if value != "all" and not segmented:
            raise t.TraitError(
                f"pair_filter={value!r} needs a sentence-pair input, and this trace has no "
                "segments; pass sentence_b_start= or text_pair=, or keep pair_filter='all'."
            )
        return value

    @t.validate("compare_side")
    def _check_compare_side(self, proposal: t.Bunch) -> str | None:
        value = proposal["value"]
        if self._compared is None:
            if value is not None:
                raise t.TraitError(
                    f"compare_side={value!r} applies to comparisons, and this widget shows one "
                    "trace; compare two with AttentionWidget(attnscope.compare(trace_a, "
                    "trace_b)) or show_head_view(model, text, compare=other_text)."
                )
            return None
        return str(value)

    @t.observe("compare_side")
    def _none_compares_both(self, change: t.Bunch) -> None:
        # traitlets lets None past validation; on a comparison it stands for A - B.
        if change["new"] is None and self._compared is not None:
            self.set_trait("compare_side", "diff")  # declared by the widget class

    # -- generation: the step and the query move together ------------------------------
    def _generation(self) -> tuple[int, int] | None:
        """(prompt length, generated tokens) when the shown stream is a generation's."""
        found = self._meta.get("generation") if self._meta else generation_meta(self._trace)
        if not found or found["stream"] != self.stream:
            return None
        return int(found["prompt_length"]), int(found["generated"])

    @t.validate("step")
    def _check_step(self, proposal: t.Bunch) -> int | None:
        value = proposal["value"]
        if value is None:
            return None
        generation = self._generation()
        if generation is None:
            raise t.TraitError(
                f"step={value} applies to a trace of a generation, and this one (stream "
                f"{self.stream!r}) has none; capture one with attnscope.capture(model, prompt, "
                "max_new_tokens=N), or leave step=None."
            )
        if not 0 <= int(value) < generation[1]:
            raise t.TraitError(
                f"step={value} is out of range: {generation[1]} tokens were generated "
                f"(steps 0..{generation[1] - 1}); use None for no step."
            )
        return int(value)

    @t.validate("generated_only")
    def _check_generated_only(self, proposal: t.Bunch) -> bool:
        value = bool(proposal["value"])
        if value and self._generation() is None:
            raise t.TraitError(
                "generated_only=True shows the rows of generated tokens, and this trace has "
                "none; capture one with attnscope.capture(model, prompt, max_new_tokens=N)."
            )
        return value

    # Both read the traits' current values, not the change's: notifications held while
    # the widget is built arrive after every trait is set, some of them stale.
    @t.observe("step")
    def _query_follows_step(self, _change: t.Bunch) -> None:
        generation = self._generation()
        if self.step is not None and generation is not None:
            self.query = generation[0] + self.step - 1  # the row that chose the token

    @t.observe("query")
    def _step_follows_query(self, _change: t.Bunch) -> None:
        generation = self._generation()
        if self.step is None or generation is None:
            return
        step = None if self.query is None else self.query - generation[0] + 1
        self.set_trait("step", step if step is not None and 0 <= step < generation[1] else None)

    @t.validate("rank_by")
    def _check_rank_by(self, proposal: t.Bunch) -> str | None:
        value = proposal["value"]
        scanned = [] if self._ranking is None else self._ranking.names
        if value is not None and value not in STATISTICS and value not in scanned:
            raise t.TraitError(
                f"rank_by={value!r} is not a statistic; use None or one of "
                f"{[*STATISTICS, *scanned]} (attnscope.analysis.STATISTICS explains each"
                f"{'; scan:<column> are the scan= table' if scanned else ''})."
            )
        return None if value is None else str(value)

    @t.validate("pseudo_heads")
    def _check_pseudo_heads(self, proposal: t.Bunch) -> list[str]:
        offered = pseudo_heads(self._stream())
        value = list(proposal["value"])
        bad = [v for v in value if v not in offered]
        if bad:
            why = rollout_unavailable(self._stream()) if "rollout" in bad else None
            raise t.TraitError(
                f"pseudo_heads {bad} are not offered by stream {self.stream!r}; it offers "
                f"{offered}{f' ({why})' if why else ''}."
            )
        return [name for name in offered if name in value]

    @t.validate("queries")
    def _check_queries(self, proposal: t.Bunch) -> list[int]:
        length = self._stream().q_len
        value = list(proposal["value"])
        fix = "use [] for the single query"
        return self._indices(value, "queries", length, "query positions", fix)

    def _indices(self, value: list[Any], name: str, count: int, unit: str, fix: str) -> list[int]:
        """``value`` sorted and deduplicated, every index in ``0..count-1``."""
        bad = [i for i in value if not 0 <= int(i) < count]
        if bad:
            raise t.TraitError(
                f"{name} {bad} are out of range: stream {self.stream!r} has {count} {unit} "
                f"(0..{count - 1}); {fix}."
            )
        return sorted({int(i) for i in value})

    @t.observe("stream")
    def _clamp_to_stream(self, change: t.Bunch) -> None:
        # The first assignment, in __init__, comes from the default name: nothing to move.
        old_name = change["old"] if change["old"] in self._trace.streams else self.stream
        # One rule with the browser's (encode/stream_change.py, js/wire/stream_change.ts).
        shapes = [stream_shape(self._trace, n) for n in (old_name, self.stream)]
        clamped = clamp_to_stream({n: getattr(self, n) for n in CLAMPED}, *shapes)
        with self.hold_trait_notifications():
            for name, value in clamped.items():
                setattr(self, name, value)
            if self._generation() is None:  # the generation is another stream's
                self.set_trait("step", None)
                self.generated_only = False


def unknown_stream(value: object, trace: AttentionTrace) -> str:
    """The message refusing a stream name the trace does not hold.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> unknown_stream("cross", AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
    "stream 'cross' is not in this trace; choose one of ['self']."
    """
    return f"stream {value!r} is not in this trace; choose one of {list(trace.streams)}."
