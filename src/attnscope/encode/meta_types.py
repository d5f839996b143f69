"""``_meta``'s shape: one TypedDict per interface of ``js/wire/types.ts``, same names and fields.

``tests/test_wire_meta_types.py`` reads ``js/wire/types.ts`` and fails when an
interface there and its TypedDict here name different fields, so a field added
on one side only is caught. ``NotRequired`` marks what Python leaves out of
some ``_meta`` (``views`` before a widget adds it, ``comparison`` on a single
trace, ...); the TypeScript side marks more fields optional, for pages written
by older versions.

Examples
--------
>>> import numpy as np
>>> from attnscope import AttentionTrace
>>> from attnscope.encode.meta import build_meta
>>> meta: Meta = build_meta(AttentionTrace(["a"], np.ones((1, 1, 1, 1), np.float32)))
>>> meta["streams"]["self"]["num_heads"], set(meta) <= set(Meta.__annotations__)
(1, True)
"""

from typing import Literal, NotRequired, TypedDict


class SideMeta(TypedDict):
    """One side's tokens (``_meta.sides.source`` / ``target``)."""

    labels: list[str]
    raw: list[str]
    kinds: list[Literal["token", "special", "padding"]]
    segments: list[int] | None
    continues: NotRequired[list[bool]]
    """Per token: a piece that continues the word before it (``##bel``); not in a comparison's
    ``a`` / ``b``."""
    words: NotRequired[list[int] | None]
    """The word each token belongs to (:func:`attnscope.analysis.word_ids`)."""


class StreamMeta(TypedDict):
    """One attention stream (``_meta.streams[name]``)."""

    label: str
    query_side: str
    key_side: str
    layers: list[int]
    num_heads: int
    num_kv_heads: int
    q_len: int
    k_len: int
    head_dim: int | None
    has_bias: bool
    has_mask: bool
    has_softcap: bool
    has_sinks: bool
    causal: bool
    """No query sees a later key (:func:`~attnscope.encode.meta.sees_no_later_keys`): the views
    open on the last ordinary query token."""
    thumb_rows: int
    thumb_cols: int
    top_k: int
    top_block: int | None
    pseudo_heads: list[str]
    qk_missing: NotRequired[list[list[int]]]
    """An exported page that left some heads' q and k out: per layer position, those heads."""
    rollout_query: NotRequired[bool]
    """The live head view offers the rollout of its locked query (long self-attention)."""
    has_value_norms: NotRequired[bool]
    """The trace holds value norms (``capture(..., value_norms=True)``): ``vnorm:`` chunks."""


class StatisticMeta(TypedDict):
    """One head statistic of the ``stats:`` chunk."""

    name: str
    label: str
    formula: str
    source: str
    spread: NotRequired[str]
    inputs: NotRequired[int]
    over: NotRequired[str]
    strongest: NotRequired[str]


class ComparisonMeta(TypedDict):
    """``_meta.comparison``: two inputs shown over their aligned tokens."""

    a: SideMeta
    b: SideMeta
    alignment: list[list[int]]
    divergence: dict[str, list[list[float | None]]]
    ranking: dict[str, list[list[int]]]


class GenerationMeta(TypedDict):
    """``_meta.generation``: where the prompt ends in a trace of a generation."""

    stream: str
    prompt_length: int
    generated: int
    thumb_rows: int
    thumb_cols: int


class ImageGridMeta(TypedDict):
    """One grid of an image's tokens."""

    name: str
    rows: int
    cols: int
    tiles: list[int] | None
    positions: list[int]


class ImageMeta(TypedDict):
    """One image of ``_meta.images`` (inline in ``js/wire/types.ts``)."""

    height: int
    width: int
    grids: list[ImageGridMeta]


class ImagesMeta(TypedDict):
    """``_meta.images``: the stream, the query rows of ``image:`` chunks, each image."""

    stream: str
    queries: list[int]
    left_out: int
    images: list[ImageMeta]


class SegmentsMeta(TypedDict):
    """``_meta.segments``: one stream's tokens split into sentences, turns or positions."""

    stream: str
    by: str
    edges: list[int]
    labels: list[str]
    titles: list[str]


class Meta(TypedDict):
    """``_meta``: everything small about a trace (``docs/protocol.md``, "_meta")."""

    protocol: int
    title: str
    sides: dict[str, SideMeta | None]
    streams: dict[str, StreamMeta]
    statistics: list[StatisticMeta]
    neuron_unavailable: str | None
    generation: GenerationMeta | None
    images: ImagesMeta | None
    notes: list[str]
    embedded: bool
    views: NotRequired[list[str]]
    comparison: NotRequired[ComparisonMeta | None]
    segments: NotRequired[SegmentsMeta | None]


MIRRORED: dict[str, type] = {
    "Meta": Meta,
    "SideMeta": SideMeta,
    "StreamMeta": StreamMeta,
    "StatisticMeta": StatisticMeta,
    "ComparisonMeta": ComparisonMeta,
    "GenerationMeta": GenerationMeta,
    "ImageGridMeta": ImageGridMeta,
    "ImagesMeta": ImagesMeta,
    "SegmentsMeta": SegmentsMeta,
}
"""Each TypedDict by the name of its interface in ``js/wire/types.ts``."""
