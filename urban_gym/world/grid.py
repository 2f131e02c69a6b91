"""A labelled grid over a rectangle of the city, e.g. the 5x5 localization grid.

Cells are named ``"x:i y:j"``: ``i`` counts columns from the west edge (0) eastwards and
``j`` counts rows from the north edge (0) southwards, the way a map image is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LABEL = re.compile(r"x\s*[:=]\s*(\d+)\s*[, ]?\s*y\s*[:=]\s*(\d+)", re.I)


@dataclass(frozen=True)
class GridOverlay:
    """``nx`` x ``ny`` cells over ``bounds = (xmin, ymin, xmax, ymax)`` in metres."""

    bounds: tuple[float, float, float, float]
    nx: int = 5
    ny: int = 5

    def __post_init__(self) -> None:
        x0, y0, x1, y1 = self.bounds
        if not (x1 > x0 and y1 > y0):
            raise ValueError(
                f"GridOverlay bounds={self.bounds!r} must have xmax > xmin and ymax > ymin"
            )
        if self.nx < 1 or self.ny < 1:
            raise ValueError(f"GridOverlay needs at least 1x1 cells, got {self.nx}x{self.ny}")

    @property
    def cell_size(self) -> tuple[float, float]:
        """Width and height of one cell, metres."""
        x0, y0, x1, y1 = self.bounds
        return ((x1 - x0) / self.nx, (y1 - y0) / self.ny)

    def cell_of(self, x: float, y: float) -> tuple[int, int]:
        """``(i, j)`` of the cell holding ``(x, y)``; points outside raise ValueError."""
        x0, y0, x1, y1 = self.bounds
        if not (x0 <= x <= x1 and y0 <= y <= y1):
            raise ValueError(f"point ({x:.1f}, {y:.1f}) lies outside the grid bounds {self.bounds}")
        w, h = self.cell_size
        i = min(int((x - x0) / w), self.nx - 1)
        j = min(int((y1 - y) / h), self.ny - 1)
        return i, j

    def label_of(self, x: float, y: float) -> str:
        """The label of the cell holding ``(x, y)`` (metres); points outside raise ValueError."""
        i, j = self.cell_of(x, y)
        return self.label(i, j)

    @staticmethod
    def label(i: int, j: int) -> str:
        """The label of cell ``(i, j)``: ``"x:i y:j"``."""
        return f"x:{i} y:{j}"

    def labels(self) -> list[str]:
        """All cell labels, row by row from the north-west corner."""
        return [self.label(i, j) for j in range(self.ny) for i in range(self.nx)]

    def parse(self, text: str) -> tuple[int, int] | None:
        """``(i, j)`` from an answer such as ``"x:3 y:1"`` or ``"x=3, y=1"``, if valid."""
        m = _LABEL.search(str(text))
        if not m:
            return None
        i, j = int(m.group(1)), int(m.group(2))
        if 0 <= i < self.nx and 0 <= j < self.ny:
            return i, j
        return None

    def cell_bounds(self, i: int, j: int) -> tuple[float, float, float, float]:
        """``(xmin, ymin, xmax, ymax)`` of cell ``(i, j)``."""
        x0, _, _, y1 = self.bounds
        w, h = self.cell_size
        return (x0 + i * w, y1 - (j + 1) * h, x0 + (i + 1) * w, y1 - j * h)

    def cell_center(self, i: int, j: int) -> tuple[float, float]:
        """The centre ``(x, y)`` of cell ``(i, j)``, metres."""
        a, b, c, d = self.cell_bounds(i, j)
        return ((a + c) / 2.0, (b + d) / 2.0)
