"""Walking-distance fields on Helsinki's network: the compiled Dijkstra
(:mod:`urban_gym.world.dijkstra_kernel`) against its pure-Python reference
(:func:`urban_gym.world.dijkstra.shortest_from_python`) in the same run, from the same
seeded random points (each field is what a CityWalk reset on a new task computes).

    .venv/bin/python benchmarks/bench_routing.py [--points 200] [--repeat 5]

Prints milliseconds a field (median over ``--repeat`` rounds) and the ratio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import print_table, time_call  # noqa: E402


def sources(city, router, points: int, seed: int = 7) -> list[tuple]:
    """``(u, du, v, dv)`` of the network edge nearest each of ``points`` random places."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x0, y0, x1, y1 = city.bounds
    out = []
    for x, y in zip(rng.uniform(x0, x1, points), rng.uniform(y0, y1, points)):
        loc = router.locate(float(x), float(y))
        out.append((loc.u, loc.offset, loc.v, loc.length - loc.offset))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=200, help="sources a round")
    ap.add_argument("--repeat", type=int, default=5, help="rounds (the median is printed)")
    args = ap.parse_args()

    from urban_gym.world import dijkstra, load_city
    from urban_gym.world.routing import Router

    city = load_city("helsinki")
    router = Router(city)
    net = dijkstra.pack(city, router._adj)
    mask = dijkstra.closed_mask(net, router.closed)
    src = sources(city, router, args.points)
    if dijkstra._kernel() is None:
        raise SystemExit("the compiled Dijkstra is not available here (see the warning)")

    def rounds(fn) -> float:
        return time_call(lambda: [fn(net, mask, *s) for s in src], repeat=args.repeat)

    rounds(dijkstra.shortest_from)  # compiled and loaded before timing
    compiled = rounds(dijkstra.shortest_from) / len(src)
    python = rounds(dijkstra.shortest_from_python) / len(src)
    print_table(
        f"Distance fields on Helsinki ({len(net.ids):,} nodes, {len(src)} sources)",
        [
            ("Python reference, ms a field", f"{python * 1e3:.3f}", "1.00x", ""),
            (
                "compiled (indexed heap), ms a field",
                f"{compiled * 1e3:.3f}",
                f"{python / compiled:.1f}x faster",
                "",
            ),
        ],
    )


if __name__ == "__main__":
    main()
