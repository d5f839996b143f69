"""The head view's segments mode: ``_meta.segments`` and the ``segments:<stream>:<layer>`` chunk.

A widget made with ``segments=`` (sentences, chat turns or token positions;
the ``boundaries`` of :func:`attnscope.segments`) draws rows that are segments:
``_meta.segments`` says where each starts and how to label it, and the chunk
of a layer holds :attr:`~attnscope.analysis.segments.SegmentAttention.mass`
of every head, f32 ``(heads, S, S)`` (``docs/protocol.md``, "Chunks"). Segments
are few (a sentence is tens of tokens), so the chunk is small and exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from attnscope.analysis.segments import SegmentAttention
from attnscope.encode.arrays import NamedArray
from attnscope.trace import Tokens
from attnscope.trace.images import ImageRegion

LABEL_WORDS = 6
"""Words of a segment its label shows."""
LABEL_CHARS = 36
"""Longest label; a longer one is cut with an ellipsis (the hover shows more)."""
TITLE_CHARS = 200
"""Longest text of a segment its hover shows."""


def segment_text(
    tokens: Tokens,
    first: int,
    stop: int,
    words: int | None = None,
) -> str:
    """The text of tokens ``first .. stop - 1``: pieces joined into words, words by spaces.

    Special and padding tokens are left out; a segment with no other text
    (a chat turn's markers and blank generated tokens) shows its labels as
    they are. ``words`` keeps the first that many words; pieces are joined by
    the tokens' :attr:`~attnscope.trace.Tokens.word_ids`.

    Examples
    --------
    >>> t = Tokens.from_strings(["[CLS]", "the", "play", "##ing", "cat", ".", "[SEP]"])
    >>> segment_text(t, 0, 7), segment_text(t, 0, 7, words=2), segment_text(t, 6, 7)
    ('the playing cat.', 'the playing', '[SEP]')
    """
    ids, kinds, labels = tokens.word_ids, tokens.kinds, tokens.labels
    pieces: list[str] = []
    previous = None
    for i in range(first, stop):
        label = labels[i].replace("\\n", " ").replace("\u2423", " ").strip()
        if kinds[i] != "token" or not label:
            continue
        glued = ids[i] == previous or (pieces and label in ".,;:!?)'\"")
        pieces[-1:] = [pieces[-1] + label] if glued and pieces else [*pieces[-1:], label]
        previous = ids[i]
    if not pieces:
        return "".join(labels[first:stop]).strip()
    return " ".join(pieces if words is None else pieces[:words])


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "\u2026"


def image_label(index: int, region: ImageRegion) -> tuple[str, str]:
    """The label and hover text of a segment that is exactly image ``index``'s tokens.

    Examples
    --------
    >>> image_label(0, ImageRegion((1, 2, 3, 4), (2, 2), np.zeros((4, 4, 3), np.uint8)))
    ('img0 (2×2 patches)', 'image 0: a 2×2 grid of patches (4 tokens)')
    """
    rows, cols = region.grid
    tiles = "" if region.tiles is None else f"{region.tiles[0]}×{region.tiles[1]} tiles, "
    more = [f"{len(run)} {name}" for name, run in region.extra.items() if run]
    label = f"img{index} ({tiles}{rows}×{cols} patches)"
    title = f"image {index}: a {rows}×{cols} grid of patches ({rows * cols} tokens)"
    if region.tiles is not None:
        title += f" in {region.tiles[0]}×{region.tiles[1]} tiles"
    if more:
        title += ", and " + ", ".join(f"{m} tokens" for m in more)
    return label, title


def _image_spans(images: Sequence[ImageRegion]) -> dict[tuple[int, int], tuple[str, str]]:
    spans = {}
    for i, region in enumerate(images):
        shown = region.all_positions()
        spans[min(shown), max(shown) + 1] = image_label(i, region)
    return spans


def segments_meta(
    found: SegmentAttention | Sequence[int],
    tokens: Tokens,
    stream: str,
    by: str,
    images: Sequence[ImageRegion] = (),
) -> dict[str, Any]:
    """``_meta.segments``: the stream, how it was split, edges, labels and hover titles.

    ``found`` is the segment attention, or its edges ``[0, s1, ..., n]``. A
    segment that spans exactly one of ``images`` (its first to its last
    token) is labelled by that image and its grid, not by its tokens' labels.

    Examples
    --------
    >>> from attnscope import AttentionTrace, segments
    >>> t = AttentionTrace(["Hi", ".", "Yes", "!"], np.full((1, 1, 4, 4), 0.25, np.float32))
    >>> m = segments_meta(segments(t, "sentences"), t.source, "self", "sentences")
    >>> m["edges"], m["labels"], m["titles"][1]
    ([0, 2, 4], ['Hi.', 'Yes!'], 'tokens 2–3: Yes!')
    >>> image = ImageRegion((1, 2), (1, 2), np.zeros((2, 4, 3), np.uint8))
    >>> segments_meta([0, 1, 3, 4], t.source, "self", "images", [image])["labels"]
    ['Hi', 'img0 (1×2 patches)', '!']
    """
    edges = [int(e) for e in (found.edges if isinstance(found, SegmentAttention) else found)]
    spans = _image_spans(images)
    labels, titles = [], []
    for first, stop in pairwise(edges):
        pictured = spans.get((first, stop))
        if pictured is not None:
            labels.append(pictured[0])
            titles.append(f"tokens {first}\u2013{stop - 1}: {pictured[1]}")
            continue
        labels.append(_cut(segment_text(tokens, first, stop, LABEL_WORDS), LABEL_CHARS))
        text = _cut(segment_text(tokens, first, stop), TITLE_CHARS)
        titles.append(f"tokens {first}\u2013{stop - 1}: {text}")
    return {"stream": stream, "by": by, "edges": edges, "labels": labels, "titles": titles}


def segment_arrays(found: SegmentAttention, position: int) -> list[NamedArray]:
    """The ``segments:`` chunk of layer position ``position``: ``mass`` f32 ``(heads, S, S)``.

    NaN marks a segment with no counted query (padding only).

    Examples
    --------
    >>> from attnscope import AttentionTrace, segments
    >>> t = AttentionTrace(list("abcd"), np.full((2, 3, 4, 4), 0.25, np.float32))
    >>> [(n, a.shape) for n, a in segment_arrays(segments(t, [2]), 1)]
    [('mass', (3, 2, 2))]
    """
    return [("mass", np.ascontiguousarray(found.mass[position], dtype=np.float32))]
