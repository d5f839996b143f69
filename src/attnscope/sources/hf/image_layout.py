"""How a vision-language model lays each image's tokens out: read, never guessed from counts.

One reader per family (:mod:`~attnscope.sources.hf.image_grids` for one grid
per image, :mod:`~attnscope.sources.hf.image_tiles` for tiled images, listed
in :mod:`~attnscope.sources.hf.image_readers`) takes the processor's output
and the model's and processor's own settings (patch size, merge size, feature
strategy, tiles) and says, for each image, how many image tokens it has in the
sequence and which of them is which cell of its grid. A family without a
reader, or a reader that finds a setting missing, gives a reason instead: the
image tokens then stay plain tokens and the trace's notes say why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.trace.images import ImageRegion


@dataclass
class Layout:
    """One image's run of image tokens: how many, and which index is which grid cell.

    Examples
    --------
    >>> layout = Layout(5, (2, 2), [1, 2, 3, 4], np.zeros((4, 4, 3), np.uint8),
    ...                 extra={"class": [0]})
    >>> layout.region([10, 11, 12, 13, 14]).positions, layout.region([10, 11, 12, 13, 14]).extra
    ((11, 12, 13, 14), {'class': (10,)})
    """

    count: int
    grid: tuple[int, int]
    cells: list[int]
    pixels: npt.NDArray[np.uint8]
    tiles: tuple[int, int] | None = None
    extra: dict[str, list[int]] = field(default_factory=dict)
    extra_grids: dict[str, tuple[int, int]] = field(default_factory=dict)

    def region(self, positions: Sequence[int]) -> ImageRegion:
        """The :class:`ImageRegion` of this image, given its image tokens' positions in order."""
        return ImageRegion(
            positions=tuple(positions[i] for i in self.cells),
            grid=self.grid,
            pixels=self.pixels,
            tiles=self.tiles,
            extra={k: tuple(positions[i] for i in v) for k, v in self.extra.items()},
            extra_grids=self.extra_grids,
        )


Reader = Callable[[Any, Any, Mapping[str, Any], Sequence[Any]], "list[Layout] | str"]


def setting(value: Any) -> int | None:
    """A model's or processor's integer setting, or None where it is missing or not an int.

    Examples
    --------
    >>> setting(14), setting(None), setting(True)
    (14, None, None)
    """
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def first(value: Any) -> int | None:
    """A square size's side, from an int or a (height, width) pair."""
    return setting(value[0] if isinstance(value, list | tuple) and value else value)


def tiled_cells(rows: int, cols: int, side: int) -> list[int]:
    """For each cell of the whole tiled grid in raster order, its index in the run of tokens.

    Tiles come row by row, each with ``side * side`` tokens in raster order.

    Examples
    --------
    >>> tiled_cells(1, 2, 2)
    [0, 1, 4, 5, 2, 3, 6, 7]
    """
    cells = []
    for r in range(rows * side):
        for c in range(cols * side):
            tile = (r // side) * cols + c // side
            cells.append(tile * side * side + (r % side) * side + c % side)
    return cells


def assembled(tiles: npt.NDArray[Any], rows: int, cols: int) -> npt.NDArray[Any]:
    """``rows * cols`` tiles ``(channels, h, w)`` in raster order as one ``(channels, H, W)``."""
    return np.concatenate(
        [np.concatenate(list(tiles[r * cols : (r + 1) * cols]), 2) for r in range(rows)], 1
    )


def unpadded_picture(
    whole: npt.NDArray[Any], kept: tuple[int, int], full: tuple[int, int], patch: int
) -> npt.NDArray[Any]:
    """The centred ``kept`` (rows, cols) patches of a ``(channels, H, W)`` picture of ``full``.

    Anyres unpadding cuts a letterbox's padding evenly from both sides.

    Examples
    --------
    >>> unpadded_picture(np.zeros((3, 8, 8)), (2, 4), (4, 4), 2).shape
    (3, 4, 8)
    """
    top = (full[0] - kept[0]) // 2 * patch
    left = (full[1] - kept[1]) // 2 * patch
    return whole[:, top : top + kept[0] * patch, left : left + kept[1] * patch]


def newline_rows(base: int, grid: tuple[int, int]) -> tuple[int, list[int], list[int]]:
    """After ``base`` tokens, a grid whose rows each end in a newline: count, cells, newlines.

    Examples
    --------
    >>> newline_rows(1, (2, 2))
    (7, [1, 2, 4, 5], [3, 6])
    """
    line = grid[1] + 1
    cells = [base + r * line + c for r in range(grid[0]) for c in range(grid[1])]
    return base + grid[0] * line, cells, [base + r * line + grid[1] for r in range(grid[0])]


def overview_then_rows(
    base: int,
    grid: tuple[int, int],
    *,
    overview: list[int],
    overview_grid: tuple[int, int],
    tiles: tuple[int, int],
    pixels: Any,
    before: dict[str, list[int]] | None = None,
) -> Layout:
    """An anyres image (LLaVA-NeXT, OneVision): ``base`` tokens, then rows ending in a newline.

    ``overview`` are the whole-image tokens among the first ``base``; ``before``
    other named runs there (a kept class token), listed ahead of it.

    Examples
    --------
    >>> lay = overview_then_rows(4, (2, 2), overview=[0, 1, 2, 3], overview_grid=(2, 2),
    ...                          tiles=(1, 1), pixels=None)
    >>> lay.count, lay.cells, lay.extra["newline"]
    (10, [4, 5, 7, 8], [6, 9])
    """
    count, cells, newlines = newline_rows(base, grid)
    return Layout(
        count=count,
        grid=grid,
        cells=cells,
        pixels=pixels,
        tiles=tiles,
        extra={**(before or {}), "overview": overview, "newline": newlines},
        extra_grids={"overview": overview_grid},
    )
