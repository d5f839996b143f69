"""Chunk keys: the one module that writes and reads them (``js/wire/keys.ts`` is its mirror).

A key names one chunk of a trace (``docs/protocol.md``, "Chunks"):
``thumbs:<stream>`` (or ``thumbs:<stream>:<first row>``), ``top:<stream>:<layer>``
(or ``top:<stream>:<layer>:<first row>``), ``attn:<stream>:<layer>:<head>``,
``qk:<stream>:<layer>:<head>``, ``stats:<stream>``, ``pseudo:<stream>:<layer>``
(or ``pseudo:<stream>:<layer>:<query>``) and
``tile:<stream>:<layer>:<head|mean>:<level>:<row>:<col>``, and the image view's
``image:<stream>:<layer>`` and ``pixels:<stream>``, and a segmented widget's
``segments:<stream>:<layer>``, and the value norms of a trace captured with
``value_norms=True``, ``vnorm:<stream>:<layer>``; a comparison puts its
side before any of them (``a/``, ``b/``, ``diff/``). This module only knows the
shape of a key; whether a trace has the chunk is :func:`attnscope.encode.chunks.parse_key`'s
question. Everything else builds keys with :class:`ChunkKey` or the functions
below, so a test can find a key written by hand anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from attnscope.errors import AttnscopeError

ChunkKind = Literal[
    "thumbs", "top", "attn", "qk", "stats", "pseudo", "tile", "image", "pixels", "segments", "vnorm"
]

KINDS: tuple[ChunkKind, ...] = get_args(ChunkKind)
"""Every chunk kind, in protocol order."""

ANALYSIS_KINDS = ("stats", "pseudo")
"""Chunk kinds of one trace's analysis, which a comparison does not offer."""

SHAPES: dict[ChunkKind, str] = {
    "thumbs": "thumbs:<stream> or thumbs:<stream>:<first row>",
    "top": "top:<stream>:<layer> or top:<stream>:<layer>:<first row>",
    "attn": "attn:<stream>:<layer>:<head>",
    "qk": "qk:<stream>:<layer>:<head>",
    "stats": "stats:<stream>",
    "pseudo": "pseudo:<stream>:<layer> or pseudo:<stream>:<layer>:<query>",
    "tile": "tile:<stream>:<layer>:<head|mean>:<level>:<row>:<col>",
    "image": "image:<stream>:<layer>",
    "pixels": "pixels:<stream>",
    "segments": "segments:<stream>:<layer>",
    "vnorm": "vnorm:<stream>:<layer>",
}
"""How each kind's keys are written, for error messages."""

_PARTS: dict[ChunkKind, int] = {
    "thumbs": 2,
    "top": 3,
    "attn": 4,
    "qk": 4,
    "stats": 2,
    "pseudo": 3,
    "tile": 7,
    "image": 3,
    "pixels": 2,
    "segments": 3,
    "vnorm": 3,
}
_ROW_KINDS = ("thumbs", "top", "pseudo")  # one more part: a first row (pseudo: a query)


@dataclass(frozen=True)
class ChunkKey:
    """A parsed chunk key.

    Examples
    --------
    >>> ChunkKey("attn", "self", 2, 5).key, ChunkKey("thumbs", "self", first_row=9).key
    ('attn:self:2:5', 'thumbs:self:9')
    >>> ChunkKey("tile", "self", 1, None, tile=(3, 2, 5)).key
    'tile:self:1:mean:3:2:5'
    """

    kind: ChunkKind
    stream: str
    layer: int | None = None
    head: int | None = None
    first_row: int | None = field(default=None, repr=False)  # keeps the repr of other keys
    """Thumbnails, top keys and pseudo-heads only: the first query row covered
    (thumbnails: the prompt's length, for generated rows; top keys: the first row
    of one block; pseudo-heads: the one query of a rollout row)."""
    tile: tuple[int, int, int] | None = field(default=None, repr=False)
    """Overview tiles only: (level, row, col); ``head`` None is the layer mean."""

    @property
    def key(self) -> str:
        """The key as the browser writes it."""
        parts = [self.kind, self.stream]
        if self.tile is not None:
            head = "mean" if self.head is None else str(self.head)
            return ":".join([*parts, str(self.layer), head, *map(str, self.tile)])
        parts += [str(p) for p in (self.layer, self.head) if p is not None]
        if self.first_row is not None:
            parts.append(str(self.first_row))
        return ":".join(parts)


def read_key(key: object) -> ChunkKey:
    """Read the parts of ``key``; raise AttnscopeError when it is not a chunk key's shape.

    Examples
    --------
    >>> read_key("top:self:1:64")
    ChunkKey(kind='top', stream='self', layer=1, head=None)
    >>> read_key("tile:self:0:mean:1:0:1").tile
    (1, 0, 1)
    >>> read_key("top:self")
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: malformed key 'top:self'; expected top:<stream>:<layer> ...
    """
    if not isinstance(key, str):
        raise AttnscopeError(f"a chunk key is a string, not {type(key).__name__}.")
    kind, *parts = key.split(":")
    if kind not in _PARTS:
        raise AttnscopeError(f"unknown chunk kind {kind!r}; use one of {sorted(KINDS)}.")
    known: ChunkKind = kind  # type: ignore[assignment]  # checked on the line above
    count = _PARTS[known] - 1
    with_row = known in _ROW_KINDS and len(parts) == count + 1
    if len(parts) != count and not with_row:
        raise AttnscopeError(f"malformed key {key!r}; expected {SHAPES[known]}.")
    stream, rest = parts[0], parts[1:]
    if known == "tile":
        head = None if rest[1] == "mean" else _index(rest[1], key)
        level, row, col = (_index(p, key) for p in rest[2:])
        return ChunkKey(known, stream, _index(rest[0], key), head, tile=(level, row, col))
    numbers = [_index(p, key) for p in rest]
    first_row = numbers.pop() if with_row else None
    layer, head = [*numbers, None, None][:2]
    return ChunkKey(known, stream, layer, head, first_row=first_row)


def _index(text: str, key: str) -> int:
    if not text.isdigit():
        raise AttnscopeError(f"{text!r} in {key!r} is not a non-negative integer.")
    return int(text)


def side_key(side: str, key: str) -> str:
    """The key of chunk ``key`` of one side of a comparison.

    Examples
    --------
    >>> side_key("diff", "top:self:0")
    'diff/top:self:0'
    """
    return f"{side}/{key}"


def split_side(key: str) -> tuple[str, str] | None:
    """``(side, key)`` of a comparison's ``side/key``, or None when ``key`` names no side.

    Examples
    --------
    >>> split_side("diff/top:self:0"), split_side("top:self:0")
    (('diff', 'top:self:0'), None)
    """
    side, slash, rest = key.partition("/")
    return (side, rest) if slash else None


def bare_key(key: str) -> str:
    """``key`` without a comparison's side, if it has one.

    Examples
    --------
    >>> bare_key("b/qk:self:0:3"), bare_key("qk:self:0:3")
    ('qk:self:0:3', 'qk:self:0:3')
    """
    split = split_side(key)
    return key if split is None else split[1]


def kind_of(key: str) -> str:
    """The kind ``key`` (or a comparison's side key) names, unchecked: the text before ``:``.

    Examples
    --------
    >>> kind_of("a/stats:self"), kind_of("top:self:0")
    ('stats', 'top')
    """
    return bare_key(key).partition(":")[0]


def thumbs_key(stream: str, first_row: int | None = None) -> str:
    """Every layer and head's thumbnail; from ``first_row`` on, the generated rows only.

    Examples
    --------
    >>> thumbs_key("self"), thumbs_key("self", 9)
    ('thumbs:self', 'thumbs:self:9')
    """
    return ChunkKey("thumbs", stream, first_row=first_row).key


def top_key(stream: str, layer: int, first_row: int | None = None) -> str:
    """One layer's strongest keys per query; from ``first_row``, one block of rows.

    Examples
    --------
    >>> top_key("self", 2), top_key("self", 2, 64)
    ('top:self:2', 'top:self:2:64')
    """
    return ChunkKey("top", stream, layer, first_row=first_row).key


def attn_key(stream: str, layer: int, head: int) -> str:
    """One head's weights at full resolution.

    Examples
    --------
    >>> attn_key("self", 1, 3)
    'attn:self:1:3'
    """
    return ChunkKey("attn", stream, layer, head).key


def qk_key(stream: str, layer: int, head: int) -> str:
    """One head's q and k vectors.

    Examples
    --------
    >>> qk_key("self", 1, 3)
    'qk:self:1:3'
    """
    return ChunkKey("qk", stream, layer, head).key


def stats_key(stream: str) -> str:
    """Every head statistic of every layer of ``stream``.

    Examples
    --------
    >>> stats_key("encoder")
    'stats:encoder'
    """
    return ChunkKey("stats", stream).key


def pseudo_key(stream: str, layer: int, query: int | None = None) -> str:
    """One layer's pseudo-heads; with ``query``, that query's rollout row only.

    Examples
    --------
    >>> pseudo_key("self", 1), pseudo_key("self", 1, 1090)
    ('pseudo:self:1', 'pseudo:self:1:1090')
    """
    return ChunkKey("pseudo", stream, layer, first_row=query).key


def tile_key(stream: str, layer: int, head: int | None, tile: tuple[int, int, int]) -> str:
    """One overview tile, ``(level, row, col)``; ``head`` None is the layer's mean.

    Examples
    --------
    >>> tile_key("self", 0, None, (0, 0, 0)), tile_key("self", 0, 2, (1, 0, 1))
    ('tile:self:0:mean:0:0:0', 'tile:self:0:2:1:0:1')
    """
    return ChunkKey("tile", stream, layer, head, tile=tile).key


def image_key(stream: str, layer: int) -> str:
    """One layer's weights of every text query over the image tokens (image view).

    Examples
    --------
    >>> image_key("self", 1)
    'image:self:1'
    """
    return ChunkKey("image", stream, layer).key


def pixels_key(stream: str) -> str:
    """The pictures of ``_meta.images`` (image view).

    Examples
    --------
    >>> pixels_key("self")
    'pixels:self'
    """
    return ChunkKey("pixels", stream).key


def segments_key(stream: str, layer: int) -> str:
    """One layer's segment x segment mass of every head (head view, segments mode).

    Examples
    --------
    >>> segments_key("self", 2)
    'segments:self:2'
    """
    return ChunkKey("segments", stream, layer).key


def value_norms_key(stream: str, layer: int) -> str:
    """One layer's value norms and value-weighted row sums (the views' value-norm weighting).

    Examples
    --------
    >>> value_norms_key("self", 2)
    'vnorm:self:2'
    """
    return ChunkKey("vnorm", stream, layer).key


WHY_KINDS = ("why", "whys")
"""A widget part's keys, outside :data:`KINDS` (no trace holds them: the neuron view's "why"
panel, ``display/why_sources.py``): ``why:<stream>:<layer>:<head>:<query>:<key>``, one
pair's score split into its sources, and ``whys:<stream>``, the pairs the widget has."""


def why_key(stream: str, layer: int, head: int, query: int, key: int) -> str:
    """The "why" panel's chunk of one (layer position, head, query, key).

    Examples
    --------
    >>> why_key("self", 2, 3, 5, 1)
    'why:self:2:3:5:1'
    """
    return ":".join(["why", stream, *(str(n) for n in (layer, head, query, key))])


def whys_key(stream: str) -> str:
    """The pairs a widget's "why" panel holds for ``stream`` (what a saved page can show).

    Examples
    --------
    >>> whys_key("self")
    'whys:self'
    """
    return ":".join(["whys", stream])


def read_why_key(key: object) -> tuple[str, tuple[int, ...]] | None:
    """The parts of a ``why:`` or ``whys:`` key, or None for any other key.

    ``(stream, (layer, head, query, key))`` of a ``why:`` key, ``(stream, ())`` of a ``whys:``.

    Examples
    --------
    >>> read_why_key("why:self:2:3:5:1"), read_why_key("whys:self"), read_why_key("top:self:0")
    (('self', (2, 3, 5, 1)), ('self', ()), None)
    """
    if not isinstance(key, str):
        return None
    kind, _, rest = key.partition(":")
    parts = rest.split(":")
    if kind == "whys" and len(parts) == 1 and parts[0]:
        return parts[0], ()
    if kind != "why" or len(parts) != 5 or not all(p.isdigit() for p in parts[1:]):
        return None
    return parts[0], tuple(int(p) for p in parts[1:])
