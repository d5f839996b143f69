"""The protocol's ``_meta``: everything small about a trace, sent once as JSON.

Tokens, streams and their shapes, what the neuron view can show, notes
(``docs/protocol.md``, "``_meta``").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from attnscope.encode.analysis_chunks import (
    offers_query_rollout,
    pseudo_heads,
    sides_words,
    statistics_meta,
)
from attnscope.encode.image_chunks import images_meta
from attnscope.encode.meta_types import GenerationMeta, ImagesMeta, Meta, SideMeta, StreamMeta
from attnscope.trace import AttentionStream, AttentionTrace, Tokens
from attnscope.trace.labels import mend_surrogates

PROTOCOL_VERSION = 1
THUMB_SIZE = 64
"""Largest side of a model-view thumbnail, in cells."""
TOP_K = 64
"""Keys kept per query row in a ``top:`` chunk (all keys when there are fewer)."""
TOP_BLOCK_SCORES = 1 << 18
"""Most scores of one head in one block of a ``top:`` chunk (:func:`stream_top_block`)."""
TOP_BLOCK_MIN = 16
"""Fewest query rows in one block of a ``top:`` chunk, however long the keys."""
DERIVE_BLOCK_SCORES = 2**24
"""Most q·k multiply-adds of one block of query rows a page that derives computes for the
head view (12 heads of size 32 at 512 tokens: 64 rows, about 40 ms)."""

STREAM_LABELS = {
    "self": "self-attention",
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention",
    "cross": "cross-attention",
}


def thumb_shape(stream: AttentionStream, first_row: int = 0) -> tuple[int, int]:
    """Rows and columns of the stream's thumbnails: the lengths, capped at :data:`THUMB_SIZE`.

    ``first_row`` > 0 sizes thumbnails of the rows from it on (the generated rows).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> thumb_shape(AttentionStream(np.full((1, 1, 100, 10), 0.1, np.float32)))
    (64, 10)
    >>> thumb_shape(AttentionStream(np.full((1, 1, 100, 10), 0.1, np.float32)), first_row=90)
    (10, 10)
    """
    return min(stream.q_len - first_row, THUMB_SIZE), min(stream.k_len, THUMB_SIZE)


def generation_meta(trace: AttentionTrace) -> GenerationMeta | None:
    """``_meta.generation``: where the prompt ends in a trace of a generation, else None.

    The stream it applies to is the one over the source tokens, prompt and
    generated tokens both (``query_side`` = ``key_side`` = ``"source"``).
    ``thumb_rows`` / ``thumb_cols`` give the size of the ``thumbs:<stream>:<prompt_length>``
    thumbnails (the generated rows only).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> att = np.tril(np.ones((3, 3), np.float32)); att /= att.sum(-1, keepdims=True)
    >>> trace = AttentionTrace(["a", "b", "c"], att[None, None], metadata={"generation": {
    ...     "prompt_length": 2, "generated_ids": [7], "generated_text": "c", "settings": {}}})
    >>> generation_meta(trace)
    {'stream': 'self', 'prompt_length': 2, 'generated': 1, 'thumb_rows': 1, 'thumb_cols': 3}
    """
    record = trace.metadata.get("generation")
    if not isinstance(record, dict):
        return None
    prompt, new = int(record["prompt_length"]), len(record["generated_ids"])
    for name, stream in trace.streams.items():
        sides = (stream.query_side, stream.key_side)
        if sides == ("source", "source") and stream.q_len == stream.k_len == prompt + new:
            return {
                "stream": name,
                "prompt_length": prompt,
                "generated": new,
                "thumb_rows": min(new, THUMB_SIZE),
                "thumb_cols": min(stream.k_len, THUMB_SIZE),
            }
    return None


def stream_top_k(stream: AttentionStream) -> int:
    """Keys per query row in the stream's ``top:`` chunks.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> stream_top_k(AttentionStream(np.full((1, 1, 3, 5), 0.2, np.float32)))
    5
    """
    return min(stream.k_len, TOP_K)


def stream_top_block(stream: AttentionStream, *, derived: bool = False) -> int:
    """Query rows per block of the stream's ``top:`` chunks: ``top:<stream>:<layer>:<first row>``.

    The head view's one block rule: the largest power of two of rows whose
    top keys cost at most a fixed amount of work, and at least
    :data:`TOP_BLOCK_MIN`. The head view asks for the blocks of the rows it
    shows, so a layer switch computes a screenful of rows, not the layer.
    What a row costs depends on who computes it: Python reads one head's
    recorded scores (``k_len`` a row, at most :data:`TOP_BLOCK_SCORES`: 64
    rows at 4096 keys); a page that derives (``derived=True``,
    ``docs/protocol.md``, "Pages that derive") computes every head's q·k
    (``heads × k_len × head_dim`` multiply-adds a row, at most
    :data:`DERIVE_BLOCK_SCORES`).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.zeros((1, 1, 4096, 8), np.float32)
    >>> stream_top_block(AttentionStream(queries=q, keys=q))
    64
    >>> q = np.zeros((1, 12, 512, 32), np.float32)
    >>> stream_top_block(AttentionStream(queries=q, keys=q), derived=True)
    64
    """
    per_row, limit = stream.k_len, TOP_BLOCK_SCORES
    if derived:
        per_row = stream.num_heads * stream.k_len * (stream.head_dim or 1)
        limit = DERIVE_BLOCK_SCORES
    rows = limit // max(per_row, 1)
    return max(TOP_BLOCK_MIN, 1 << (rows.bit_length() - 1)) if rows else TOP_BLOCK_MIN


def build_meta(
    trace: AttentionTrace, *, embedded: bool = False, notes: tuple[str, ...] = ()
) -> Meta:
    r"""Build the protocol's ``_meta`` dict: everything small about ``trace``.

    Every string is valid Unicode: a lone surrogate in a token (which a
    kernel's UTF-8 messages cannot carry) arrives as U+FFFD; the trace keeps
    the raw token. The tokens come mended (:attr:`Tokens.mended_labels`);
    the other strings (title, notes, images) are mended here.

    Parameters
    ----------
    trace
        The trace to describe.
    embedded
        True in the exported page, where chunks are embedded rather than requested.
    notes
        Extra notes appended to the trace's own (for example, chunks left out of a page).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> meta = build_meta(AttentionTrace(["a", "b"], np.full((1, 2, 2, 2), 0.5, np.float32)))
    >>> meta["streams"]["self"]["num_heads"], meta["sides"]["source"]["labels"]
    (2, ['a', 'b'])
    >>> build_meta(AttentionTrace(["\udc80"], np.ones((1, 1, 1, 1))))["sides"]["source"]["raw"]
    ['�']
    """
    streams = {name: _stream_meta(name, s, embedded=embedded) for name, s in trace.streams.items()}
    sides: dict[str, SideMeta | None] = {
        "source": side_json(trace.source),
        "target": None if trace.target is None else side_json(trace.target),
    }
    for side, words in sides_words(trace).items():
        described = sides[side]
        if described is not None:
            described["words"] = words
    meta: Meta = {
        "protocol": PROTOCOL_VERSION,
        "title": title(trace),
        "sides": sides,
        "streams": streams,
        "statistics": statistics_meta(),
        "neuron_unavailable": _neuron_unavailable(trace),
        "generation": generation_meta(trace),
        "images": cast("ImagesMeta | None", images_meta(trace)),
        "notes": [*trace.notes, *notes],
        "embedded": embedded,
    }
    rest = mend_strings({key: value for key, value in meta.items() if key != "sides"})
    return cast(Meta, {key: sides if key == "sides" else rest[key] for key in meta})


def mend_strings(value: Any) -> Any:
    r"""``value`` (JSON-like) with every string in it passed through :func:`mend_surrogates`.

    Examples
    --------
    >>> mend_strings({"labels": ["a", "\udc80"]}) == {"labels": ["a", "\ufffd"]}
    True
    """
    if isinstance(value, str):
        return mend_surrogates(value)
    if isinstance(value, dict):
        return {mend_strings(k): mend_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mend_strings(v) for v in value]
    return value


def side_json(tokens: Tokens) -> SideMeta:
    """One side's tokens for the views, with which pieces continue a word (``continues``).

    Labels and raw tokens are mended for the browser; all of it is read from
    what ``tokens`` computed once (:attr:`Tokens.continues`, :attr:`Tokens.mended_labels`).

    Examples
    --------
    >>> from attnscope import Tokens
    >>> side_json(Tokens.from_strings(["[CLS]", "un", "##bel", "[SEP]"]))["continues"]
    [False, False, True, False]
    """
    return {
        "labels": list(tokens.mended_labels),
        "raw": list(tokens.mended_raw),
        "kinds": list(tokens.kinds),
        "segments": None if tokens.segments is None else list(tokens.segments),
        "continues": list(tokens.continues),
    }


SOURCE_WORDS = {
    "tensors": "attention tensors passed in",
    "attnscope.MultiHeadAttention": "your MultiHeadAttention",
}
"""How a title names a trace that did not come from a named model, by ``metadata["source"]``."""


def title(trace: AttentionTrace) -> str:
    """The widget's title: the model's name (or where the attention came from) and its size.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionTrace
    >>> title(AttentionTrace.from_tensors(np.ones((1, 2, 1, 1), np.float32), ["a"]))
    'attention tensors passed in · 1 layer × 2 heads'
    >>> t = AttentionTrace(["a"], np.ones((3, 1, 1, 1), np.float32),
    ...                    metadata={"display_name": "all-MiniLM-L6-v2", "model_type": "bert"})
    >>> title(t)
    'all-MiniLM-L6-v2 · 3 layers × 1 head'
    """
    first = trace.stream
    size = f"{count(first.num_layers, 'layer')} × {count(first.num_heads, 'head')}"
    return f"{_source_name(trace.metadata)} · {size}"


def count(number: int, noun: str) -> str:
    """``"1 layer"``, ``"6 layers"``.

    Examples
    --------
    >>> count(1, "head"), count(12, "head")
    ('1 head', '12 heads')
    """
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _source_name(metadata: Mapping[str, Any]) -> str:
    for key in ("display_name", "model_name", "model_type"):
        # model_name is name_or_path in traces saved before display_name existed.
        value = str(metadata.get(key) or "").rstrip("/")
        if value:
            return value.rsplit("/", 1)[-1]
    source = str(metadata.get("source") or "")
    return SOURCE_WORDS.get(source, source or "attention")


def sees_no_later_keys(stream: AttentionStream) -> bool:
    """Whether the stream's mask rule hides every later key from every query: causal attention.

    True for a self-attention stream (queries and keys the same tokens) whose
    ``key_spans`` end each query ``r``'s visible keys at or before ``r + 1``
    (causal, sliding-window causal, causal with padding), or whose boolean
    ``mask`` hides every key after ``r`` from query ``r`` in every layer and
    head. Its last query then sees the most of the input, and the views open
    on it (``_meta.streams[s].causal``). False for cross-attention, for
    bidirectional streams and for a stream with no mask rule (weights passed in
    as they are: nothing says which keys the model hid).

    Examples
    --------
    >>> import numpy as np
    >>> from attnscope import AttentionStream
    >>> q = np.zeros((1, 1, 3, 2), np.float32)
    >>> causal = np.array([[[0, 1], [0, 2], [0, 3]]], np.int32)
    >>> sees_no_later_keys(AttentionStream(queries=q, keys=q, key_spans=causal))
    True
    >>> sees_no_later_keys(AttentionStream(queries=q, keys=q))
    False
    >>> later = np.triu(np.ones((3, 3), bool), 1)[None, None]
    >>> sees_no_later_keys(AttentionStream(np.full((1, 1, 3, 3), 1 / 3, np.float32), mask=later))
    True
    """
    q_len, k_len = stream.q_len, stream.k_len
    if stream.query_side != stream.key_side or q_len != k_len:
        return False
    if stream.key_spans is not None and bool(
        np.all(stream.key_spans[..., 1] <= np.arange(1, q_len + 1))
    ):
        return True
    if stream.mask is None:
        return False
    full = np.broadcast_to(stream.mask, (*stream.mask.shape[:2], q_len, k_len))  # a view
    keys = np.arange(k_len)
    step = max(1, _MASK_CHECK_VALUES // max(k_len, 1))  # a block of rows: nothing N^2 is made
    for first in range(0, q_len, step):
        rows = np.arange(first, min(first + step, q_len))
        later = keys[None, :] > rows[:, None]
        if not np.all(full[..., first : first + len(rows), :][..., later]):
            return False
    return True


_MASK_CHECK_VALUES = 1 << 22
"""Mask entries :func:`sees_no_later_keys` reads at a time (a block of query rows)."""


def _stream_meta(name: str, stream: AttentionStream, *, embedded: bool) -> StreamMeta:
    rows, cols = thumb_shape(stream)
    described: StreamMeta = {
        "label": STREAM_LABELS.get(name, name),
        "query_side": stream.query_side,
        "key_side": stream.key_side,
        "layers": list(stream.layers),
        "num_heads": stream.num_heads,
        "num_kv_heads": stream.num_kv_heads,
        "q_len": stream.q_len,
        "k_len": stream.k_len,
        "head_dim": stream.head_dim,
        "has_bias": stream.bias is not None,
        "has_mask": stream.has_mask,
        "has_softcap": stream.softcap is not None and bool(np.any(stream.softcap > 0)),
        "has_sinks": stream.sinks is not None,
        "causal": sees_no_later_keys(stream),
        "thumb_rows": rows,
        "thumb_cols": cols,
        "top_k": stream_top_k(stream),
        # The exported page embeds whole-layer top: chunks and answers nothing else.
        "top_block": None if embedded else stream_top_block(stream),
        "pseudo_heads": pseudo_heads(stream),
    }
    if not embedded and offers_query_rollout(stream):
        # The live head view: the rollout of its locked query (one pseudo: row), long inputs.
        described["rollout_query"] = True
    if stream.value_norms is not None:  # issue 36: vnorm: chunks answer
        described["has_value_norms"] = True
    return described


def _neuron_unavailable(trace: AttentionTrace) -> str | None:
    if any(s.has_qk for s in trace.streams.values()):
        return None
    reason = trace.metadata.get("neuron_unavailable")
    if isinstance(reason, str) and reason:
        return reason
    return (
        "This trace holds attention weights only: no query and key vectors were "
        "recorded. Capture it with attnscope.capture(model, text) or "
        "attnscope.MultiHeadAttention to see the neuron view."
    )
