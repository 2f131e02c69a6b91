"""Render a gallery of urban_gym images: a Helsinki panorama, four 90-degree views, one
view under every light and weather condition, first-person frames and a map with every
marker kind.

Run: ``python examples/render_gallery.py [--out out/gallery] [--city helsinki]
[--x -190.7 --y -378.2 --yaw 90]``. Writes PNG files into ``--out`` and prints their paths.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from PIL import Image

from urban_gym.render import (
    Conditions,
    FirstPersonRenderer,
    MapMarkers,
    MapRenderer,
    PanoramaRenderer,
    perspective,
    perspective_batch,
)
from urban_gym.world import load_city
from urban_gym.world.grid import GridOverlay

# A crossing in Kamppi, Helsinki, with shop signs all around (metres from the origin).
DEFAULT_SPOT = (-190.7, -378.2, 90.0)


def save(img: np.ndarray, path: Path, written: list[Path]) -> None:
    Image.fromarray(img).save(path)
    written.append(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/gallery", help="output folder")
    ap.add_argument("--city", default="helsinki", help="city spec (see urban_gym.world)")
    ap.add_argument("--x", type=float, default=None, help="viewer x (m east)")
    ap.add_argument("--y", type=float, default=None, help="viewer y (m north)")
    ap.add_argument("--yaw", type=float, default=None, help="bearing of the condition views")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    city = load_city(args.city)
    if args.x is None or args.y is None:
        if args.city == "helsinki":
            x, y, yaw = DEFAULT_SPOT
        else:  # the front of the first POI, looking at its sign
            p = city.pois[0]
            x, y, yaw = p.front[0], p.front[1], (p.facing + 180.0) % 360.0
    else:
        x, y, yaw = args.x, args.y, 90.0
    if args.yaw is not None:
        yaw = args.yaw
    name = city.name
    written: list[Path] = []
    t0 = time.perf_counter()

    pano_r = PanoramaRenderer(city, 2048, 1024)
    pano = pano_r.render(x, y).rgb
    save(pano, out / f"{name}_panorama.png", written)
    views = perspective_batch(pano, [0, 90, 180, 270], fov=90.0, size=512)
    for v, label in zip(views, "NESW"):
        save(v, out / f"{name}_view_{label}.png", written)

    conds = [
        Conditions("day"),
        Conditions("dusk"),
        Conditions("night"),
        Conditions("day", "fog"),
        Conditions("day", "rain", seed=1),
    ]
    strip = []
    for c in conds:
        tag = c.time_of_day if c.weather == "clear" else c.weather
        v = perspective(pano_r.render(x, y, c).rgb, yaw, fov=90.0, size=512)
        save(v, out / f"{name}_view_{tag}.png", written)
        strip.append(v)
    save(np.concatenate(strip, axis=1), out / f"{name}_conditions.png", written)
    save(pano_r.render(x, y, Conditions("night")).rgb, out / f"{name}_panorama_night.png", written)

    fp = FirstPersonRenderer(city, 128, 128, fov=90.0)
    frames = [fp.render(x, y, (yaw + d) % 360.0).rgb for d in (0, 90, 180, 270)]
    save(np.concatenate(frames, axis=1), out / f"{name}_firstperson_128.png", written)

    # a map with every marker kind
    node = city.nearest_node(x, y)
    far = sorted(
        city.network.nodes,
        key=lambda n: abs(np.hypot(city.node_xy[n][0] - x, city.node_xy[n][1] - y) - 150.0),
    )[0]
    path = city.shortest_path(far, node)
    traj = [city.node_xy[n] for n in path]
    u, v = next(iter(city.network.edges(path[len(path) // 2])))
    closure = list(city.edge_geometry(u, v).coords)
    half = 160.0
    grid = GridOverlay((x - half, y - half, x + half, y + half), 5, 5)
    dests = [(x + 90.0, y + 60.0), (x - 70.0, y + 110.0), (x + 40.0, y - 120.0)]
    markers = MapMarkers(
        agent=(x, y, yaw),
        start=traj[0],
        goal=(x + 120.0, y + 20.0),
        destinations=dests,
        closures=[closure],
        trajectory=traj,
        grid=grid,
        selected=(x - 100.0, y - 40.0),
    )
    m = MapRenderer(city).render(
        (x, y), metres_per_pixel=0.7, size=512, labels=True, markers=markers
    )
    save(m, out / f"{name}_map_markers.png", written)
    overview = MapRenderer(city).render(
        ((city.bounds[0] + city.bounds[2]) / 2, (city.bounds[1] + city.bounds[3]) / 2),
        metres_per_pixel=3.5,
        size=(512, 512),
    )
    save(overview, out / f"{name}_map_overview.png", written)

    for p in written:
        print(p)
    print(f"{len(written)} images in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
