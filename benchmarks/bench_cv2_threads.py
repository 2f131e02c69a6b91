"""OpenCV's threads in one process: steps/s and cores busy of a rollout (seeded random masked
actions, resets counted) with the renderer choosing the count -- one thread for an image
of at most ``urban_gym.render.threads.ONE_THREAD_MAX_PIXELS`` pixels -- against OpenCV's
own count for the machine (``URBAN_GYM_CV2_THREADS`` set to it, which leaves the count to
the process). Each run is a fresh process; the two settings alternate, ``--runs`` times
each.

    .venv/bin/python benchmarks/bench_cv2_threads.py [--steps-seconds 6] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ROWS = [
    ("CityWalk 84x84", "UrbanGym/CityWalk-v0", {"view_size": 84}),
    ("CityWalk 128x128", "UrbanGym/CityWalk-v0", {}),
    ("PoseGraph360 84x84", "UrbanGym/PoseGraph360-v0", {"view_size": 84}),
    ("PoseGraph360 512x512", "UrbanGym/PoseGraph360-v0", {}),
    ("StreetGraph 512x512 views", "UrbanGym/StreetGraph-v0", {}),
]

RUN = """
import json, time
from benchmarks.bench_throughput import make, rollout_rate
env = make({env_id!r}, {kwargs!r})
rollout_rate(env, {seconds} / 3)  # warm-up: kernels, caches
c = time.process_time()
rate, steps = rollout_rate(env, {seconds}, seed=1)
cores = (time.process_time() - c) / (steps / rate)
from urban_gym.render.threads import threads_for
h, w = env.unwrapped._view_shape() or (0, 0)
print(json.dumps([rate, cores, threads_for(h * w)]))
"""


def measure(env_id: str, kwargs: dict, seconds: float, process_count: bool) -> list:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("URBAN_GYM_CV2_THREADS", None)
    if process_count:
        import cv2

        env["URBAN_GYM_CV2_THREADS"] = str(cv2.getNumThreads())
    code = RUN.format(env_id=env_id, kwargs=kwargs, seconds=seconds)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=6.0, help="timed seconds per run")
    ap.add_argument("--runs", type=int, default=2, help="runs per setting (alternating)")
    args = ap.parse_args()
    import cv2

    print(
        f"\n### OpenCV threads in one process ({os.cpu_count()} cores; OpenCV's own count "
        f"here: {cv2.getNumThreads()})\n"
    )
    print(
        "| env | the renderer's choice (view): threads, steps/s, cores busy | OpenCV's count: steps/s, cores busy |"
    )
    print("|---|---|---|")
    for label, env_id, kwargs in ROWS:
        mine, theirs = [], []
        for _ in range(args.runs):
            mine.append(measure(env_id, kwargs, args.seconds, False))
            theirs.append(measure(env_id, kwargs, args.seconds, True))
        pin = mine[0][2] or cv2.getNumThreads()
        a = " / ".join(f"{r:,.0f}" for r, _, _ in mine)
        b = " / ".join(f"{r:,.0f}" for r, _, _ in theirs)
        ca = " / ".join(f"{c:.2f}" for _, c, _ in mine)
        cb = " / ".join(f"{c:.2f}" for _, c, _ in theirs)
        print(f"| {label} | {pin}: {a} steps/s; {ca} | {b} steps/s; {cb} |")


if __name__ == "__main__":
    main()
