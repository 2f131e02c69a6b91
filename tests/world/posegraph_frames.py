"""Equirectangular frames for PoseGraph360 tests, written to a real capture folder.

``bearing_panorama(x, y)`` is a tiny ``(32, 64, 3)`` equirect whose red channel encodes
the compass bearing of each column (``R = bearing / 360 * 255``, centre column = north,
as rendered panoramas have it), whose green channel encodes the frame's x position and
whose blue channel grows from the top row to the bottom one. A perspective crop's centre
pixel therefore tells the camera's bearing, which makes yaw checks hand-checkable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from urban_gym.world.posegraph import (
    ImageFolderFrames,
    PoseGraph,
    RenderedFrames,
    export_capture,
)

PANO_H = 32


def bearing_panorama(x: float, y: float, h: int = PANO_H) -> np.ndarray:
    w = 2 * h
    bearings = (((np.arange(w) + 0.5) / w - 0.5) * 360.0) % 360.0
    img = np.zeros((h, w, 3), np.uint8)
    img[..., 0] = np.round(bearings / 360.0 * 255.0).astype(np.uint8)[None, :]
    img[..., 1] = int(abs(round(x))) % 256
    img[..., 2] = np.linspace(0, 255, h).astype(np.uint8)[:, None]
    return img


def red_to_bearing(red: float) -> float:
    """Inverse of the red-channel encoding (degrees, +-0.7 from quantisation)."""
    return float(red) / 255.0 * 360.0


def folder_graph(graph: PoseGraph, folder: Path) -> PoseGraph:
    """``graph`` drawing its frames from a folder of PNGs written for it."""
    _, csv_path = export_capture(
        graph.with_source(RenderedFrames(bearing_panorama)), folder, kind="folder"
    )
    return graph.with_source(ImageFolderFrames(csv_path.parent))
