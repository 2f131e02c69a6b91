"""Equirectangular frames for PoseGraph360 tests, written to a real capture folder.

``bearing_panorama(x, y)`` is a tiny ``(32, 64, 3)`` equirect whose red and green channels
encode the compass bearing ``b`` of each column (``R = 127.5 + 127.5 sin b``,
``G = 127.5 + 127.5 cos b``; centre column = north, as rendered panoramas have it) and
whose blue channel grows from the top row to the bottom one (plus ``(|x| + |y|) mod 50``,
so frames at different places differ). A perspective crop's centre
pixel therefore tells the camera's bearing, which makes yaw checks hand-checkable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from urban_gym.families.posegraph360.world import (
    ImageFolderFrames,
    PoseGraph,
    RenderedFrames,
    export_capture,
)

PANO_H = 32


def bearing_panorama(x: float, y: float, h: int = PANO_H) -> np.ndarray:
    w = 2 * h
    b = np.radians(((np.arange(w) + 0.5) / w - 0.5) * 360.0)
    img = np.zeros((h, w, 3), np.uint8)
    img[..., 0] = np.round(127.5 + 127.5 * np.sin(b)).astype(np.uint8)[None, :]
    img[..., 1] = np.round(127.5 + 127.5 * np.cos(b)).astype(np.uint8)[None, :]
    img[..., 2] = (np.linspace(0, 200, h).astype(np.uint8) + int(abs(x) + abs(y)) % 50)[:, None]
    return img


def pixel_bearing(rgb: np.ndarray) -> float:
    """The bearing (degrees) a pixel of a view of a :func:`bearing_panorama` looks along."""
    r, g = float(rgb[0]) - 127.5, float(rgb[1]) - 127.5
    return float(np.degrees(np.arctan2(r, g)) % 360.0)


def folder_graph(graph: PoseGraph, folder: Path) -> PoseGraph:
    """``graph`` drawing its frames from a folder of PNGs written for it."""
    _, csv_path = export_capture(
        graph.with_source(RenderedFrames(bearing_panorama)), folder, kind="folder"
    )
    return graph.with_source(ImageFolderFrames(csv_path.parent))
