"""PoseGraph360 frames drawn piecemeal (the tiles a view reads, completed when a later
view of the frame needs more) beside whole panoramas per frame, in one process, alternating.

"Whole" is the same env with its world's frame source swapped for one that renders every
new frame whole (what every frame cost before; same cache size, same seeds). Two agents:
``random`` -- seeded random masked actions, resets counted (``bench_throughput.py``'s
loop); ``walk`` -- forward (W SMALL) along the streets, taking a branch at each end
(``bench_posegraph.py``'s walk), a new frame each step. Each row builds fresh worlds.
Figures are steps per CPU second of the process (steadier than wall time on a shared
machine), with the median of the per-repeat ratios.

Run: ``python benchmarks/bench_pano_window.py [--repeats 3] [--seconds 6]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gymnasium as gym  # noqa: E402

import urban_gym  # noqa: E402, F401
from benchmarks.bench_posegraph import timed_steps  # noqa: E402
from benchmarks.bench_throughput import rollout_rate  # noqa: E402
from urban_gym.families.posegraph360.world.frames import RenderedFrames  # noqa: E402

ID = "UrbanGym/PoseGraph360-v0"


def make(size: int, whole: bool, tag: float):
    """A fresh env at ``size`` px with a world of its own (worlds are cached per process
    by their arguments: ``cache_mb`` differs by ``tag``), so no frame is drawn yet.
    """
    env = gym.make(ID, view_size=size, cache_mb=48.0 - tag)
    if whole:
        u = env.unwrapped
        src = u.graph.source
        u.graph = u.graph.with_source(RenderedFrames(src.render, src.cache.max_bytes / 2**20))
    return env


def rate(agent: str, env, seconds: float, seed: int) -> float:
    """Steps per CPU second of this process (all its threads: on a machine other jobs
    share, steady where wall time is not) of ``agent``: ``random`` for about ``seconds``,
    ``walk`` for 600 steps at a small view, 60 at a large one.
    """
    c0 = time.process_time()
    if agent == "random":
        steps = rollout_rate(env, seconds, seed=seed)[1]
    else:
        steps = 600 if env.unwrapped.view_wh[0] < 256 else 60  # one walk, new frames all along
        timed_steps(env, (0,), steps)
    return steps / (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6.0)
    args = ap.parse_args()
    for size in (84, 512):  # compile the kernels, load the city
        rate("random", make(size, False, 1.0), 1.0, 99)
    rows = []
    for size in (84, 512):
        for agent in ("random", "walk"):
            got: dict[str, list[float]] = {"whole": [], "tiles": []}
            for rep in range(args.repeats):
                for mode in ("whole", "tiles"):
                    tag = 0.1 * len(rows) + 0.01 * rep + 0.001 * (mode == "tiles")
                    env = make(size, mode == "whole", tag)
                    got[mode].append(rate(agent, env, args.seconds, rep))
                    env.close()
            ratios = [t / w for t, w in zip(got["tiles"], got["whole"])]
            rows.append(
                [
                    f"{size}x{size}",
                    agent,
                    " / ".join(f"{v:,.0f}" for v in got["whole"]),
                    " / ".join(f"{v:,.0f}" for v in got["tiles"]),
                    f"{statistics.median(ratios):.2f}x",
                ]
            )
    print("| view | agent | whole frames, steps/CPU-s | tiles, steps/CPU-s | median ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
