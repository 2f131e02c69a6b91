"""Helsinki import: cold (no cache) and warm (from the disk cache), each as a ratio to a
bare pyosmium pass over the same file (node locations on, every object visited) measured
in the same run; and the peak RSS of a process after loading Helsinki.

Run: ``python benchmarks/bench_world.py``. Goals: cold <= 15x, warm <= 2x the bare pass,
peak RSS <= 300 MB.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import print_table, time_call  # noqa: E402

CHILD = r"""
import json, os, resource, sys, time
import urban_gym.world as w
t = time.perf_counter()
city = w.load_city("helsinki")
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "from": city.meta["loaded_from"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))
"""


def child(cache: str) -> dict:
    env = dict(os.environ, URBAN_GYM_CACHE=cache)
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bare_pass(path: str) -> None:
    import osmium

    n = 0
    for _ in osmium.FileProcessor(path).with_locations():
        n += 1


def main() -> None:
    from urban_gym.world.loader import builtin_path

    path = str(builtin_path("helsinki"))
    bare = time_call(lambda: bare_pass(path), repeat=7)
    cold, warm, rss = [], [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as cache:
            c = child(cache)
            assert c["from"] == "import", c
            cold.append(c["seconds"])
            rss.append(c["rss_mb"])
            for _ in range(2):
                wv = child(cache)
                assert wv["from"] == "cache", wv
                warm.append(wv["seconds"])
    bare2 = time_call(lambda: bare_pass(path), repeat=7)
    ref = statistics.median([bare, bare2])
    c_med, w_med = statistics.median(cold), statistics.median(warm)
    print_table(
        f"Helsinki world ({os.path.getsize(path) / 1e6:.2f} MB .osm.pbf)",
        [
            ("bare pyosmium pass (reference)", f"{ref * 1000:.0f} ms", "1.0x", ""),
            ("cold import (no cache)", f"{c_med * 1000:.0f} ms", f"{c_med / ref:.1f}x", "<= 15x"),
            ("warm load (disk cache)", f"{w_med * 1000:.0f} ms", f"{w_med / ref:.2f}x", "<= 2x"),
            ("peak RSS after loading", f"{max(rss):.0f} MB", "", "<= 300 MB"),
        ],
    )


if __name__ == "__main__":
    main()
