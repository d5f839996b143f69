"""``attnscope.head_detector``: TransformerLens's ``detect_head``, on a trace or a model.

The scores are TransformerLens's (``transformer_lens/head_detector.py``,
``detect_head``), written from its definition:

- a detection pattern ``D`` (``n x n``, lower triangular) says where the head
  is expected to look: ``previous_token`` ``D[i, i-1] = 1``; ``duplicate_token``
  ``D[i, j] = 1`` for an earlier key ``j < i`` holding query ``i``'s token;
  ``induction`` ``D[i, j] = 1`` where the token *before* key ``j`` is query
  ``i``'s token (``j <= i``);
- ``"mul"``: ``(A' * D).sum() / A'.sum()``, the share of the head's attention
  that falls where ``D`` says;
- ``"abs"``: ``1 - round(|A - D|'.sum() / n, 3)`` (TransformerLens's
  ``1 - round(mean * size, 3)``, rounding included);

where ``'`` zeroes the first key's column (``exclude_bos``) and the diagonal
(``exclude_current_token``), and ``A`` is the head's ``n x n`` pattern. Over
several inputs the score is the mean of each input's, as ``detect_head``
averages over a list of prompts.

This is a score *on the given input*. The induction score papers and courses
quote (TransformerLens/ARENA: BOS + random tokens repeated, the stripe at
offset ``-(seq_len-1)``) is :func:`attnscope.induction_sweep`; on the same head
the two differ by about 2x.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from attnscope.analysis.access import pick_stream, require_self_attention
from attnscope.analysis.frames import pandas_for
from attnscope.analysis.repeats import PatternKind, pattern_rows, token_codes
from attnscope.errors import AttnscopeError, AttnscopeTypeError
from attnscope.trace import AttentionTrace

if TYPE_CHECKING:
    import pandas as pd

HeadKind = Literal["previous_token", "duplicate_token", "induction"]
HEAD_KINDS: tuple[HeadKind, ...] = ("previous_token", "duplicate_token", "induction")
"""The detection patterns by name (TransformerLens's ``HEAD_NAMES`` without ``_head``)."""
ErrorMeasure = Literal["mul", "abs"]
Float64Array = npt.NDArray[np.float64]


def head_kind(kind: str) -> HeadKind:
    """The detection pattern ``kind`` names: ``"previous-token"``, ``"induction_head"`` ...

    Examples
    --------
    >>> head_kind("previous-token"), head_kind("induction_head"), head_kind("duplicate")
    ('previous_token', 'induction', 'duplicate_token')
    >>> head_kind("copying")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: kind='copying' is not a head detector; choose one of ...
    """
    name = str(kind).lower().replace("-", "_").replace(" ", "_").removesuffix("_head")
    name = {"previous": "previous_token", "prev": "previous_token"}.get(name, name)
    name = "duplicate_token" if name == "duplicate" else name
    for known in HEAD_KINDS:
        if name == known:
            return known
    raise AttnscopeError(
        f"kind={kind!r} is not a head detector; choose one of {list(HEAD_KINDS)}, or pass "
        "your own (n, n) detection pattern as an array."
    )


def detection_pattern(kind: str, token_ids: Sequence[Any]) -> Float64Array:
    """TransformerLens's detection pattern of ``kind`` for a sequence of tokens, ``(n, n)``.

    Tokens are compared for equality (ids, or raw token strings).

    Examples
    --------
    >>> detection_pattern("induction", [7, 1, 2, 1, 2]).astype(int).tolist()
    [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]
    >>> detection_pattern("previous-token", [7, 1, 2]).astype(int).tolist()
    [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    """
    chosen = head_kind(kind)
    n = len(token_ids)
    if chosen == "previous_token":
        return np.eye(n, k=-1, dtype=np.float64)
    _, codes = np.unique(np.array([str(t) for t in token_ids], dtype=object), return_inverse=True)
    repeat: PatternKind = "induction" if chosen == "induction" else "duplicate"
    rows = pattern_rows(codes.astype(np.int64).reshape(-1), slice(0, n), repeat)
    return rows.astype(np.float64)


def similarity_scores(
    attention: npt.ArrayLike,
    pattern: npt.ArrayLike,
    *,
    exclude_bos: bool = False,
    exclude_current_token: bool = False,
    error_measure: ErrorMeasure = "mul",
) -> Float64Array:
    """TransformerLens's score of each head's pattern ``(..., n, n)`` against ``pattern``.

    Examples
    --------
    >>> a = np.array([[1.0, 0.0], [0.25, 0.75]])
    >>> d = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> float(similarity_scores(a, d)), float(similarity_scores(a, d, error_measure="abs"))
    (0.125, -0.25)
    """
    weights = np.array(attention, dtype=np.float64)
    target = np.asarray(pattern, dtype=np.float64)
    n = weights.shape[-1]
    if weights.shape[-2:] != (n, n) or target.shape != (n, n):
        raise AttnscopeError(
            f"the detection pattern must be ({n}, {n}) like the attention; got "
            f"{target.shape} for attention of shape {weights.shape}."
        )
    diagonal = np.eye(n, dtype=bool)
    if error_measure == "mul":
        if exclude_bos:
            weights[..., :, 0] = 0.0
        if exclude_current_token:
            weights[..., diagonal] = 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            mul: Float64Array = (weights * target).sum(axis=(-2, -1)) / weights.sum(axis=(-2, -1))
        return mul
    if error_measure != "abs":
        raise AttnscopeError(f"error_measure={error_measure!r}; use 'mul' or 'abs'.")
    diff = np.abs(weights - target)
    if exclude_bos:
        diff[..., :, 0] = 0.0
    if exclude_current_token:
        diff[..., diagonal] = 0.0
    raw = diff.sum(axis=(-2, -1)) / n
    # TransformerLens rounds the error to 3 decimals (Python's round, half to even).
    rounded = np.vectorize(lambda v: 1.0 - round(float(v), 3), otypes=[np.float64])(raw)
    return np.asarray(rounded, dtype=np.float64)


def _trace_scores(
    trace: AttentionTrace, kind: str | npt.ArrayLike, stream: str | None, options: dict[str, Any]
) -> tuple[list[int], int, Float64Array]:
    """``(layers, heads)`` scores of one trace's stream."""
    chosen = pick_stream(trace, stream)
    require_self_attention(chosen, "head_detector")
    n = chosen.q_len
    if isinstance(kind, str):
        tokens = trace.tokens_for(chosen.query_side)
        pattern = detection_pattern(kind, list(token_codes(tokens)))
    else:
        pattern = np.asarray(kind, dtype=np.float64)
        if pattern.shape != (n, n):
            raise AttnscopeError(
                f"a detection pattern must be ({n}, {n}) for this {n}-token trace; got "
                f"shape {pattern.shape}."
            )
    scores = np.stack(
        [
            similarity_scores(chosen.layer_attention(position), pattern, **options)
            for position in range(chosen.num_layers)
        ]
    )
    return list(chosen.layers), chosen.num_heads, scores


def _chosen_heads(
    heads: Sequence[tuple[int, int]] | Mapping[int, Sequence[int]] | None,
) -> set[tuple[int, int]] | None:
    if heads is None:
        return None
    if isinstance(heads, Mapping):
        return {(int(layer), int(h)) for layer, hs in heads.items() for h in hs}
    return {(int(layer), int(h)) for layer, h in heads}


def head_detector(
    source: Any,
    kind: str | npt.ArrayLike,
    inputs: Any = None,
    *,
    tokenizer: Any = None,
    heads: Sequence[tuple[int, int]] | Mapping[int, Sequence[int]] | None = None,
    exclude_bos: bool = False,
    exclude_current_token: bool = False,
    error_measure: ErrorMeasure = "mul",
    stream: str | None = None,
) -> pd.DataFrame:
    """TransformerLens's ``detect_head`` scores of every head, on a trace or a model's input.

    Parameters
    ----------
    source
        An :class:`~attnscope.AttentionTrace`, a list of traces (the score is
        their mean), or a ``transformers`` model (or name) with ``inputs``.
    kind
        ``"previous_token"``, ``"duplicate_token"`` or ``"induction"`` (also
        spelled ``"previous-token"``, ``"induction_head"`` ...), or your own
        ``(n, n)`` detection pattern.
    inputs
        With a model: the text or token ids to run (as :func:`attnscope.capture`
        takes them), or a list of them (the score is the mean over inputs, as
        ``detect_head`` does for a list of prompts). TransformerLens's
        ``to_tokens`` prepends BOS; pass token ids to give exactly the tokens
        you mean.
    tokenizer
        The model's tokenizer (None loads it).
    heads
        Score only these heads: ``[(layer, head), ...]`` or ``{layer: [heads]}``
        (the other rows are left out; ``detect_head`` sets them to -1).
    exclude_bos, exclude_current_token
        Leave out the attention to the first token / to the query itself.
    error_measure
        ``"mul"`` (share of attention where the pattern is 1) or ``"abs"``
        (``1 -`` the summed absolute difference over ``n``, rounded to 3
        decimals as TransformerLens rounds it).
    stream
        Which stream of an encoder–decoder trace (``"encoder"``, ``"decoder"``).

    Returns
    -------
    pandas.DataFrame
        ``layer``, ``head``, ``score``; ``attrs`` holds ``kind``,
        ``error_measure``, the exclusions and ``inputs`` (how many were scored).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> back = [[1, 0, 0], [1, 0, 0], [0, 1, 0]]  # head 0 looks one token back
    >>> even = [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]]  # head 1 spreads evenly
    >>> t = AttentionTrace(["x", "y", "z"], np.array([[back, even]], np.float32))
    >>> head_detector(t, "previous-token")["score"].round(3).tolist()
    [0.667, 0.278]
    """
    if error_measure not in ("mul", "abs"):
        raise AttnscopeError(
            f"error_measure={error_measure!r} is not a TransformerLens error measure; use 'mul' "
            "(the share of attention where the pattern is 1) or 'abs'."
        )
    if isinstance(kind, str):
        head_kind(kind)
    wanted = _chosen_heads(heads)
    options: dict[str, Any] = {
        "exclude_bos": exclude_bos,
        "exclude_current_token": exclude_current_token,
        "error_measure": error_measure,
    }
    traces = _traces(source, inputs, tokenizer)
    found = [_trace_scores(t, kind, stream, options) for t in traces]
    layers, num_heads, _ = found[0]
    if any(f[0] != layers or f[1] != num_heads for f in found):
        raise AttnscopeError(
            "the traces hold different layers or heads; score traces of one model, captured "
            "with the same layers=."
        )
    mean = np.mean(np.stack([f[2] for f in found]), axis=0)
    pandas = pandas_for("attnscope.head_detector")
    frame = pandas.DataFrame(
        {
            "layer": np.repeat(np.array(layers, np.int64), num_heads),
            "head": np.tile(np.arange(num_heads, dtype=np.int64), len(layers)),
            "score": mean.reshape(-1),
        }
    )
    if wanted is not None:
        keep = [(int(r.layer), int(r.head)) in wanted for r in frame.itertuples()]
        frame = frame[keep].reset_index(drop=True)
    frame.attrs.update(
        kind=kind if isinstance(kind, str) else "custom",
        error_measure=error_measure,
        exclude_bos=exclude_bos,
        exclude_current_token=exclude_current_token,
        inputs=len(traces),
        protocol="TransformerLens detect_head",
    )
    result: pd.DataFrame = frame
    return result


def _traces(source: Any, inputs: Any, tokenizer: Any) -> list[AttentionTrace]:
    if isinstance(source, AttentionTrace) or (
        isinstance(source, list | tuple) and source and isinstance(source[0], AttentionTrace)
    ):
        if inputs is not None:
            raise AttnscopeTypeError(
                "a trace is scored as it is: pass it without inputs (inputs are for a model)."
            )
        return [source] if isinstance(source, AttentionTrace) else list(source)
    if inputs is None:
        raise AttnscopeTypeError(
            "head_detector needs a trace, or a model with inputs: "
            "head_detector(model, 'induction', ids)."
        )
    from attnscope.analysis.scan import batch_rows
    from attnscope.sources import capture
    from attnscope.sources.inputs import is_token_ids

    rows = batch_rows(inputs)  # a (B, N) batch of ids: B inputs
    many = isinstance(rows, list | tuple) and bool(rows)
    many = many and all(isinstance(x, str) or is_token_ids(x) for x in rows)
    items = list(rows) if many else [inputs]
    return [capture(source, item, tokenizer=tokenizer) for item in items]
