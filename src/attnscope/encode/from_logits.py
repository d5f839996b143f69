"""Top keys and thumbnails of a stream that keeps q and k, computed from the scores.

Softmax keeps the order of the scores and ``w_i / max(w) = exp(s_i - max(s))``,
so a ``top:`` chunk needs, per query row, only the strongest scores, the row's
largest score and the softmax normaliser: no weight of the row is formed. A
thumbnail cell is ``exp(max(s over its keys) - logsumexp(s))``. Scores come a
block of query rows at a time, of one head for thumbnails
(:func:`~attnscope.trace.rows.logit_rows`) and of every head for top keys
(:func:`~attnscope.trace.rows.logit_heads`), never more than
:data:`~attnscope.trace.rows.BLOCK_VALUES` of them, cut where a causal or
windowed mask hides every key after a point (half the work of a causal head),
on the stream's device.

The strongest keys are ``torch.topk`` of the scores; rows where a tie could
change the answer (equal scores, fewer than ``k`` visible keys) are redone
from their weights by :func:`~attnscope.encode.arrays.top_keys`, whose tie
rule (lower key index first) therefore holds everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from attnscope.encode.arrays import (
    THUMB_SAMPLE,
    U16_LIMIT,
    F32Array,
    U8Array,
    pick_rows,
    scale_thumbnails,
    stream_thumbnails,
    stream_top_keys,
    top_keys,
)
from attnscope.errors import AttnscopeError
from attnscope.trace.rows import (
    block_rows,
    compute_rows,
    logit_heads,
    logit_rows,
    sink_logit,
    visible_stop,
)

if TYPE_CHECKING:
    import torch

    from attnscope.trace import AttentionStream

IndexArray = npt.NDArray[np.unsignedinteger[Any]]

THUMB_SCORES = 1 << 27
"""Most scores a stream's thumbnails compute by default (fewer queries sampled past it)."""


def _normaliser(
    scores: torch.Tensor,
    top: torch.Tensor,
    sink: float | torch.Tensor | None,
    *,
    overwrite: bool = False,
) -> torch.Tensor:
    """``sum(exp(s - max(s)))`` of each row (the sink's term included): ``1 / max weight``.

    ``sink`` is one logit for every row, or a tensor of one per row. With
    ``overwrite`` the scores themselves are the work space.
    """
    import torch

    shifted = scores.sub_(top[:, None]) if overwrite else scores - top[:, None]
    total = shifted.exp_().sum(dim=1)
    if sink is not None:
        total += torch.exp(sink - top)
    return total


def _strongest(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ``k`` largest scores of each row, strongest first, their keys, and exactness.

    Returns ``(values, keys, exact)``; ``exact`` is False for a row where a
    tie could change which keys are kept or their order (``topk`` does not
    say which of equal scores it keeps), or that sees fewer than ``k`` keys.
    """
    keep = min(k + 1, scores.shape[1])  # one more than kept: a tie at the boundary shows
    values, keys = scores.topk(keep, dim=1)
    exact = values[:, k - 1].isfinite()
    if keep > 1:
        exact &= (values[:, 1:] < values[:, :-1]).all(dim=1)
    return values[:, :k], keys[:, :k], exact


def logit_top_keys(
    stream: AttentionStream,
    position: int,
    k: int,
    rows: slice | None = None,
    *,
    block: int | None = None,
) -> tuple[IndexArray, U8Array, F32Array]:
    """:func:`~attnscope.encode.arrays.top_keys` of every head of one layer, from the scores.

    ``1 <= k <= k_len``; query ``rows`` (a slice, all by default) make the
    second axis. The stream must keep q and k. With ``block``, the rows are
    computed as blocks of that many rows from the first, each exactly as a
    call for that block alone computes it (the same products, so the same
    bytes); the arrays for all of them are made once, before any scores, so
    no block's output lands between two blocks' temporaries (whose sizes
    grow row by row under a causal mask, and would leave the heap a hole
    per block that the next, larger block cannot reuse).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.array([[[[1.0], [0.0], [2.0]]]], np.float32)
    >>> index, weight, rowmax = logit_top_keys(AttentionStream(queries=q, keys=q), 0, 2)
    >>> index[0].tolist(), weight[0].tolist()
    ([[2, 0], [0, 1], [2, 0]], [[255, 94], [255, 255], [255, 35]])
    """
    import torch

    first, last = (0, stream.q_len) if rows is None else rows.indices(stream.q_len)[:2]
    heads = stream.num_heads
    shape = (heads, max(last - first, 0), k)
    out = _TopKeys(
        np.empty(shape, np.uint16 if stream.k_len < U16_LIMIT else np.uint32),
        np.empty(shape, np.uint8),
        np.empty(shape[:2], np.float32),
        first,
    )
    sinks = None
    if stream.sinks is not None:
        logits = [sink_logit(stream, position, head) for head in range(heads)]
        sinks = torch.tensor(logits, dtype=torch.float32, device=stream.device)
    # Every head of a block of rows at once: few large operations (a block of a
    # screenful of rows is what a layer switch in the head view computes).
    step = max(1, block_rows(stream.k_len) // heads)
    size = max(1, last - first if block is None else block)
    for begin in range(first, last, size):
        end = min(begin + size, last)
        for start in range(begin, end, step):
            rows_here = slice(start, min(start + step, end))
            _top_of_rows(stream, position, k, rows_here, sinks=sinks, out=out)
    return out.key_index, out.weight, out.rowmax


class _TopKeys(NamedTuple):
    """Where :func:`logit_top_keys` writes: arrays whose second axis starts at query ``first``."""

    key_index: IndexArray
    weight: U8Array
    rowmax: F32Array
    first: int


def _top_of_rows(
    stream: AttentionStream,
    position: int,
    k: int,
    part: slice,
    *,
    sinks: torch.Tensor | None,
    out: _TopKeys,
) -> None:
    """Top keys of every head for query rows ``part``, written into ``out``."""
    import torch

    heads = stream.num_heads
    n, at = part.stop - part.start, slice(part.start - out.first, part.stop - out.first)
    stop = min(stream.k_len, max(visible_stop(stream, position, part), k + 1))
    scores = logit_heads(stream, position, part, stop, reuse=True).reshape(heads * n, stop)
    values, keys, exact = _strongest(scores, k)
    top = values[:, 0]
    sink = None if sinks is None else sinks.repeat_interleave(n)
    total = _normaliser(scores, top, sink, overwrite=True)
    quantised = torch.round((values - top[:, None]).exp_() * 255).nan_to_num_(nan=0.0)
    out.key_index[:, at] = keys.reshape(heads, n, k).cpu().numpy()
    out.weight[:, at] = quantised.reshape(heads, n, k).cpu().numpy()
    out.rowmax[:, at] = (1 / total).reshape(heads, n).cpu().numpy()
    redo = torch.nonzero(~exact).flatten().cpu().numpy()
    for head in np.unique(redo // n):
        picked = part.start + redo[redo // n == head] % n
        weights = compute_rows(stream, position, int(head), picked)[:, :stop].numpy()
        i, w, m = top_keys(weights, k, index_dtype=out.key_index.dtype)
        rows = picked - out.first
        out.key_index[head, rows], out.weight[head, rows], out.rowmax[head, rows] = i, w, m


def logit_pooled(
    stream: AttentionStream,
    picks: npt.NDArray[np.intp],
    owners: npt.NDArray[np.intp],
    rows: int,
    cols: int,
) -> F32Array:
    """Block-max pooled weights ``(layers, heads, rows, cols)`` of query ``picks``, from the scores.

    Query ``picks[i]`` is pooled into thumbnail row ``owners[i]`` (both
    ascending); key column ``c`` into thumbnail column ``j`` where
    ``j * k_len // cols <= c < (j + 1) * k_len // cols``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.zeros((1, 1, 4, 2), np.float32)
    >>> picks = np.arange(4); owners = np.array([0, 0, 1, 1])
    >>> logit_pooled(AttentionStream(queries=q, keys=q), picks, owners, 2, 2)[0, 0].tolist()
    [[0.25, 0.25], [0.25, 0.25]]
    """
    import torch

    k_len = stream.k_len
    col_edges = np.arange(cols) * k_len // cols
    uniform = k_len % cols == 0
    pooled = np.zeros((stream.num_layers, stream.num_heads, rows, cols), np.float32)
    # Quarter blocks: picks spread over all queries, and a causal mask then hides more.
    step = max(1, block_rows(k_len) // 4)
    for position in range(stream.num_layers):
        for head in range(stream.num_heads):
            sink = sink_logit(stream, position, head)
            for start in range(0, picks.size, step):
                chosen, rows_of = picks[start : start + step], owners[start : start + step]
                stop = max(1, visible_stop(stream, position, chosen))
                scores = logit_rows(stream, position, head, chosen, stop)
                top = scores.amax(dim=1)
                total = _normaliser(scores, top, sink)
                if uniform:
                    width = k_len // cols
                    if stop % width:
                        scores = torch.nn.functional.pad(
                            scores, (0, -stop % width), value=-torch.inf
                        )
                    cells = scores.view(len(chosen), -1, width).amax(dim=2)
                else:
                    edges = col_edges[col_edges < stop]
                    cells = torch.from_numpy(
                        np.maximum.reduceat(scores.cpu().numpy(), edges, axis=1)
                    )
                    cells = cells.to(scores.device)
                block = ((cells - top[:, None]).exp_() / total[:, None]).nan_to_num_(nan=0.0)
                part = block.cpu().numpy()
                firsts = np.flatnonzero(np.diff(rows_of, prepend=-1))
                part = np.maximum.reduceat(part, firsts, axis=0)
                target = pooled[position, head, rows_of[firsts], : part.shape[1]]
                pooled[position, head, rows_of[firsts], : part.shape[1]] = np.maximum(target, part)
    return pooled


def layer_top_keys(
    stream: AttentionStream,
    position: int,
    k: int,
    rows: slice | None = None,
    *,
    block: int | None = None,
) -> tuple[IndexArray, U8Array, F32Array]:
    """Top keys of every head of one layer, of query ``rows`` (all by default).

    From the scores when the stream keeps q and k, else from its weights;
    ``block`` as in :func:`logit_top_keys` (weights give each row the same
    keys whatever the block).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> s = AttentionStream(np.array([[[[0.1, 0.8, 0.1]]]], np.float32))
    >>> layer_top_keys(s, 0, 2)[0].tolist()
    [[[1, 0]]]
    """
    if stream.has_weights:
        return stream_top_keys(stream, position, k, rows)
    return logit_top_keys(stream, position, k, rows, block=block)


def any_thumbnails(
    stream: AttentionStream,
    rows: int,
    cols: int,
    *,
    first_row: int = 0,
    sample: int | None = None,
) -> U8Array:
    """Thumbnails as :func:`~attnscope.encode.arrays.stream_thumbnails`, from scores if it can.

    ``sample`` queries are pooled per thumbnail row; by default up to
    :data:`~attnscope.encode.arrays.THUMB_SAMPLE`, fewer when the stream's
    scores would pass :data:`THUMB_SCORES` (a thumbnail of 8192 queries then
    pools one query per row: the picture of every head at a cost of two
    layers' top keys).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.zeros((1, 1, 4, 2), np.float32)
    >>> any_thumbnails(AttentionStream(queries=q, keys=q), 2, 2)[0, 0].tolist()
    [[255, 255], [255, 255]]
    """
    if sample is None:
        per_sample = stream.num_layers * stream.num_heads * rows * stream.k_len
        sample = max(1, min(THUMB_SAMPLE, THUMB_SCORES // per_sample))
    if stream.has_weights:
        return stream_thumbnails(stream, rows, cols, sample=sample, first_row=first_row)
    q_len = stream.q_len - first_row
    if not (0 < rows <= q_len and 0 < cols <= stream.k_len):
        raise AttnscopeError(
            f"thumbnail size {rows}x{cols} must lie between 1x1 and the attention's "
            f"{q_len}x{stream.k_len}."
        )
    picks, owners = pick_rows(q_len, rows, sample)
    return scale_thumbnails(logit_pooled(stream, picks + first_row, owners, rows, cols))
