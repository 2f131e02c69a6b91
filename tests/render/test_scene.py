"""The scene's per-cell wall candidates: every wall that can be seen from the cell, once."""

from __future__ import annotations

import numpy as np

from urban_gym.render.scene import CELL_M, Scene


def _brute_force(scene: Scene, x: float, y: float) -> np.ndarray:
    """Walls whose nearest point lies within max_distance + one cell of the cell centre."""
    ci, cj = (x - scene.gx0) // CELL_M, (y - scene.gy0) // CELL_M
    cx, cy = scene.gx0 + (ci + 0.5) * CELL_M, scene.gy0 + (cj + 0.5) * CELL_M
    dx, dy = scene.bx - scene.ax, scene.by - scene.ay
    ll = np.where(dx * dx + dy * dy > 0, dx * dx + dy * dy, 1.0)
    t = np.clip(((cx - scene.ax) * dx + (cy - scene.ay) * dy) / ll, 0.0, 1.0)
    d = np.hypot(scene.ax + t * dx - cx, scene.ay + t * dy - cy)
    return np.flatnonzero(d <= scene.max_distance + CELL_M)


def test_candidates_are_the_walls_in_reach_sorted_and_distinct(small_city):
    scene = Scene(small_city, max_distance=120.0)
    x0, y0, x1, y1 = small_city.bounds
    for x, y in [(x0 + 5, y0 + 5), ((x0 + x1) / 2, (y0 + y1) / 2), (x1 - 1, y0 + 40)]:
        segs, xy = scene.candidate_data(x, y)
        assert np.array_equal(segs, _brute_force(scene, x, y))
        assert np.array_equal(xy, scene.seg_xy[:, segs])
        assert len(segs) > 0
