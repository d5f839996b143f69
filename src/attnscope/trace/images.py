"""Images in a trace: which tokens show which part of which picture.

A vision-language model turns each image into a run of tokens laid out on a
grid (after its own patch merging and tiling). :class:`ImageRegion` records,
for one image, the token positions in raster order of that grid, the grid,
the tile layout where the model tiles, and the pixels the model saw
(downscaled), so attention over the tokens can be laid back on the picture.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from attnscope.errors import AttnscopeError, AttnscopeTypeError

PixelArray = npt.NDArray[np.uint8]


def _pair(value: Any, what: str) -> tuple[int, int]:
    pair = tuple(int(v) for v in value)
    if len(pair) != 2 or min(pair) < 1:
        raise AttnscopeError(f"{what} must be two positive integers (rows, cols); got {value!r}.")
    return pair[0], pair[1]


@dataclass(frozen=True)
class ImageRegion:
    """One image's tokens in a trace and the grid they form.

    Parameters
    ----------
    positions
        Token positions of the grid's cells in raster order (row by row),
        ``rows * cols`` of them.
    grid
        ``(rows, cols)`` of the grid after the model's merging and tiling.
    pixels
        The picture the model saw, ``(height, width, 3)`` uint8, downscaled;
        the grid covers it exactly.
    tiles
        ``(rows, cols)`` of tiles when the model splits the image into tiles
        (each tile is ``grid / tiles`` cells), else None.
    extra
        Other token positions of the image by name (``"overview"``: a
        downscaled whole-image view some models add after the tiles;
        ``"class"``: class tokens the vision encoder keeps).
    extra_grids
        ``(rows, cols)`` of each ``extra`` run that forms a grid.

    Examples
    --------
    >>> region = ImageRegion((3, 4, 5, 6), (2, 2), np.zeros((8, 8, 3), np.uint8))
    >>> region.cell_of(5)
    (1, 0)
    """

    positions: tuple[int, ...]
    grid: tuple[int, int]
    pixels: PixelArray = field(repr=False)
    tiles: tuple[int, int] | None = None
    extra: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    extra_grids: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions", tuple(int(p) for p in self.positions))
        object.__setattr__(self, "grid", _pair(self.grid, "grid"))
        if self.tiles is not None:
            object.__setattr__(self, "tiles", _pair(self.tiles, "tiles"))
        rows, cols = self.grid
        if len(self.positions) != rows * cols:
            raise AttnscopeError(
                f"an image's grid {rows} x {cols} has {rows * cols} cells but "
                f"{len(self.positions)} token positions were given; pass one position per cell."
            )
        pixels = np.asarray(self.pixels)
        if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
            raise AttnscopeError(
                f"an image's pixels must be a (height, width, 3) uint8 array; got "
                f"{pixels.dtype} {pixels.shape}."
            )
        object.__setattr__(self, "pixels", pixels)
        object.__setattr__(
            self, "extra", {str(k): tuple(int(p) for p in v) for k, v in self.extra.items()}
        )
        object.__setattr__(
            self,
            "extra_grids",
            {str(k): _pair(v, f"extra_grids[{k!r}]") for k, v in self.extra_grids.items()},
        )

    def all_positions(self) -> list[int]:
        """Every token position of the image: the grid's and the extra ones."""
        return [*self.positions, *(p for run in self.extra.values() for p in run)]

    def cell_of(self, position: int) -> tuple[int, int] | None:
        """``(row, col)`` of the grid cell a token position shows, or None."""
        try:
            index = self.positions.index(position)
        except ValueError:
            return None
        return divmod(index, self.grid[1])

    def to_json(self) -> dict[str, Any]:
        """Everything but the pixels, as JSON (the trace file keeps the pixels as an array)."""
        return {
            "positions": list(self.positions),
            "grid": list(self.grid),
            "tiles": None if self.tiles is None else list(self.tiles),
            "extra": {k: list(v) for k, v in self.extra.items()},
            "extra_grids": {k: list(v) for k, v in self.extra_grids.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], pixels: PixelArray) -> ImageRegion:
        """Rebuild a region from :meth:`to_json` and its pixels.

        Examples
        --------
        >>> r = ImageRegion((0,), (1, 1), np.zeros((2, 2, 3), np.uint8))
        >>> ImageRegion.from_json(r.to_json(), r.pixels).grid
        (1, 1)
        """
        tiles = data.get("tiles")
        return cls(
            positions=tuple(data["positions"]),
            grid=tuple(data["grid"]),  # type: ignore[arg-type]
            pixels=pixels,
            tiles=None if tiles is None else tuple(tiles),  # type: ignore[arg-type]
            extra=dict(data.get("extra") or {}),
            extra_grids=dict(data.get("extra_grids") or {}),
        )


def check_regions(regions: Sequence[ImageRegion], length: int) -> list[ImageRegion]:
    """``regions`` as a list, checked against a sequence of ``length`` tokens.

    Examples
    --------
    >>> check_regions([ImageRegion((7,), (1, 1), np.zeros((1, 1, 3), np.uint8))], 4)
    Traceback (most recent call last):
    ...
    attnscope.errors.AttnscopeError: image 0 has token position 7 but the trace has 4 tokens (0..3).
    """
    seen: set[int] = set()
    for i, region in enumerate(regions):
        if not isinstance(region, ImageRegion):
            raise AttnscopeTypeError(
                f"trace.images[{i}] must be an ImageRegion; got {type(region)}."
            )
        for p in region.all_positions():
            if not 0 <= p < length:
                raise AttnscopeError(
                    f"image {i} has token position {p} but the trace has {length} tokens "
                    f"(0..{length - 1})."
                )
            if p in seen:
                raise AttnscopeError(
                    f"token position {p} belongs to two images (image {i} and an earlier "
                    "one); each token shows one image."
                )
            seen.add(p)
    return list(regions)
