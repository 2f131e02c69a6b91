"""Every embedded city's load: cold (a fresh process, an empty cache: the OSM import) and
warm (a fresh process, the disk cache the cold load left), each with the process's peak
RSS after loading.

Run: ``python benchmarks/bench_cities.py [--repeat N] [CITY ...]`` (default: every city
of ``urban-gym cities``, 3 repeats; the median time and the largest RSS are reported).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CHILD = r"""
import json, resource, sys, time
t = time.perf_counter()
import urban_gym.world as w
t_import = time.perf_counter() - t
t = time.perf_counter()
city = w.load_city(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "import_seconds": t_import, "from": city.meta["loaded_from"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
"""


def child(city: str, cache: str) -> dict:
    """Load ``city`` in a fresh Python process whose disk cache is ``cache``."""
    env = dict(os.environ, URBAN_GYM_CACHE=cache)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, city], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(city: str, repeat: int = 3) -> dict:
    """Median cold and warm load seconds and the largest peak RSS (MB) of each, over
    ``repeat`` fresh caches (one cold and one warm load in each).
    """
    cold, warm, cold_rss, warm_rss = [], [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            c = child(city, cache)
            if c["from"] != "import":
                raise RuntimeError(f"{city}: a cold load came from {c['from']!r}")
            w = child(city, cache)
            if w["from"] != "cache":
                raise RuntimeError(f"{city}: a warm load came from {w['from']!r}")
        cold.append(c["seconds"])
        cold_rss.append(c["rss_mb"])
        warm.append(w["seconds"])
        warm_rss.append(w["rss_mb"])
    return {
        "city": city,
        "cold_s": statistics.median(cold),
        "cold_rss_mb": max(cold_rss),
        "warm_s": statistics.median(warm),
        "warm_rss_mb": max(warm_rss),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure the cities and print a Markdown table."""
    from urban_gym.world.builtin import BUILTIN, builtin_names
    from urban_gym.world.loader import builtin_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cities", nargs="*", help="embedded city names (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON rows")
    a = ap.parse_args(argv)
    rows = []
    for city in a.cities or builtin_names():
        if city not in BUILTIN:
            raise SystemExit(f"unknown city {city!r}; embedded: {', '.join(builtin_names())}")
        row = measure(city, a.repeat)
        row["data_kb"] = os.path.getsize(builtin_path(city)) / 1000
        rows.append(row)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| city | data kB | cold load s | cold peak RSS MB | warm load s | warm peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['city']} | {r['data_kb']:.0f} | {r['cold_s']:.2f} | {r['cold_rss_mb']:.0f} | "
            f"{r['warm_s']:.2f} | {r['warm_rss_mb']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
