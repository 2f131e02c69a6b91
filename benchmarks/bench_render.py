"""Rendering speed, each figure next to a reference measured in the same run.

* perspective 512x512 crop of a 2048x1024 panorama (cached remap grids) vs a bare
  ``cv2.remap`` of the same size with precomputed float maps. Goal: <= 1.5x.
* first-person 128x128 frames per second on one core (OpenCV limited to one thread),
  walking along a Helsinki street and turning; reference: a 128x128 perspective crop of a
  ready panorama. Goal: >= 300 frames/s.
* panorama 2048x1024 along the same street; reference: one bare full-size ``cv2.remap``
  of a 2048x1024 RGB image. Goal: <= 80 ms.
* map 512x512 (labels and markers) following the walker; reference: the bare 512x512 remap.

Run: ``python benchmarks/bench_render.py``. Wall-clock times are medians; on a shared
machine the process CPU time (also printed) shows what the code itself costs.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import print_table, time_call  # noqa: E402
from urban_gym.render import (  # noqa: E402
    FirstPersonRenderer,
    MapMarkers,
    MapRenderer,
    PanoramaRenderer,
    perspective,
)
from urban_gym.render.camera import view_directions  # noqa: E402
from urban_gym.world import load_city  # noqa: E402

SPOT = (-190.7, -378.2)  # a crossing in Kamppi, Helsinki (the gallery's panorama)


def walk(city, start, n: int, step: float = 0.5) -> list[tuple[float, float, float]]:
    """``n`` poses ``step`` metres apart along the network from ``start``, turning."""
    node = city.nearest_node(*start)
    far = max(
        city.network.nodes,
        key=lambda m: -abs(np.hypot(*np.subtract(city.node_xy[m], start)) - 300.0),
    )
    path = city.shortest_path(node, far)
    pts = np.array([city.node_xy[m] for m in path])
    seg = np.diff(pts, axis=0)
    cum = np.concatenate([[0.0], np.cumsum(np.hypot(seg[:, 0], seg[:, 1]))])
    s = np.minimum(np.arange(n) * step, cum[-1] - 1e-6)
    i = np.clip(np.searchsorted(cum, s, side="right") - 1, 0, len(seg) - 1)
    f = (s - cum[i]) / np.maximum(cum[i + 1] - cum[i], 1e-9)
    xy = pts[i] + seg[i] * f[:, None]
    heading = np.degrees(np.arctan2(seg[i, 0], seg[i, 1]))
    yaw = heading + 40.0 * np.sin(np.arange(n) / 7.0)
    return [(float(a), float(b), float(c)) for (a, b), c in zip(xy, yaw)]


def fps(fn, poses) -> tuple[float, float]:
    """Frames per second over ``poses``: (wall clock, process CPU time)."""
    fn(*poses[0])
    t, c = time.perf_counter(), time.process_time()
    for p in poses:
        fn(*p)
    return len(poses) / (time.perf_counter() - t), len(poses) / (time.process_time() - c)


def main() -> None:
    city = load_city("helsinki")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    pano_r = PanoramaRenderer(city, 2048, 1024)
    pano = pano_r.render(*SPOT).rgb

    # perspective crop vs bare remap
    bearing, elev = view_directions(512, 512, 90.0, 0.0, 37.0)
    mx = (((bearing / 360.0 + 0.5) * 2048 - 0.5) % 2048).astype(np.float32)
    my = np.clip((90.0 - elev) / 180.0 * 1024 - 0.5, 0, 1023).astype(np.float32)

    def bare_512() -> None:
        cv2.remap(pano, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)

    full_x = np.tile(np.arange(2048, dtype=np.float32)[None, :], (1024, 1)) + 0.3
    full_y = np.tile(np.arange(1024, dtype=np.float32)[:, None], (1, 2048)) + 0.3

    def bare_full() -> None:
        cv2.remap(pano, full_x, full_y, cv2.INTER_LINEAR)

    ref512 = time_call(bare_512, repeat=9, number=20)
    crop = time_call(lambda: perspective(pano, 37.0, size=512), repeat=9, number=20)
    ref_full = time_call(bare_full, repeat=7, number=3)

    # first-person frames on one core
    poses = walk(city, SPOT, 400)
    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    fp = FirstPersonRenderer(city, 128, 128, fov=90.0)
    fp_wall, fp_cpu = fps(lambda x, y, yaw: fp.render(x, y, yaw), poses)
    ref_fps = 1.0 / time_call(lambda: perspective(pano, 37.0, size=128), repeat=9, number=50)
    cv2.setNumThreads(threads)

    # panoramas along the street (1 m apart), ground windows cached as an agent walks
    pposes = walk(city, SPOT, 30, step=1.0)
    pano_r.render(*pposes[0][:2])
    times, cpu = [], []
    for x, y, _ in pposes:
        t, c = time.perf_counter(), time.process_time()
        pano_r.render(x, y)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    pano_t, pano_cpu = statistics.median(times), statistics.median(cpu)
    ids_t = time_call(lambda: pano_r.render(*SPOT, depth=True, ids=True), repeat=5)

    # maps following the walker
    mr = MapRenderer(city)

    def map_frame(i=[0]) -> None:  # noqa: B006 - a counter
        x, y, yaw = poses[i[0] % len(poses)]
        i[0] += 1
        mr.render((x, y), 1.0, 512, labels=True, markers=MapMarkers(agent=(x, y, yaw)))

    map_t = time_call(map_frame, repeat=7, number=10)

    print_table(
        f"Rendering, Helsinki (load average {load:.1f} on {os.cpu_count()} cores)",
        [
            ("bare cv2.remap 512x512 (reference)", f"{ref512 * 1e3:.2f} ms", "1.0x", ""),
            (
                "perspective() 512x512 crop",
                f"{crop * 1e3:.2f} ms",
                f"{crop / ref512:.2f}x",
                "<= 1.5x",
            ),
            ("perspective() 128x128 crop (reference)", f"{ref_fps:.0f} frames/s", "1.0x", ""),
            (
                "first-person 128x128, 1 thread",
                f"{fp_wall:.0f} frames/s (CPU time: {fp_cpu:.0f}/s)",
                f"{fp_wall / ref_fps:.3f}x",
                ">= 300 frames/s",
            ),
            ("bare cv2.remap 2048x1024 (reference)", f"{ref_full * 1e3:.1f} ms", "1.0x", ""),
            (
                "panorama 2048x1024",
                f"{pano_t * 1e3:.0f} ms (CPU time: {pano_cpu * 1e3:.0f} ms)",
                f"{pano_t / ref_full:.1f}x",
                "<= 80 ms",
            ),
            (
                "panorama 2048x1024 with depth and ids",
                f"{ids_t * 1e3:.0f} ms",
                f"{ids_t / ref_full:.1f}x",
                "",
            ),
            (
                "map 512x512, labels and agent marker",
                f"{map_t * 1e3:.1f} ms",
                f"{map_t / ref512:.1f}x",
                "",
            ),
        ],
    )


if __name__ == "__main__":
    main()
