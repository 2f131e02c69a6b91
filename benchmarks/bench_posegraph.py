"""PoseGraph360 env steps per second at 512x512 and 84x84, next to a reference measured in
the same run: a bare perspective crop (``urban_gym.render.perspective``) of the same
panorama at the same view size and camera yaws.

"Once frames are cached": the timed walk repeats a walk whose panoramas were rendered in
a first pass (the frame LRU holds them), cycling forward and camera moves (W SMALL, A, D,
D, A) and taking a branch at the end of each street, so a step costs the crop, the branch
arrows (at junctions), the action mask and the bookkeeping. Also reported: the cost of a step that renders a new
panorama (cold frames, 2048x1024), and of building the Helsinki pose graph beside reading
it back from the world cache (what ``load_posegraph`` does in a fresh process).

Run: ``python benchmarks/bench_posegraph.py``. Goal: cached step <= 1.5x the crop.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import print_table, time_call  # noqa: E402

#: Action-table indices (the RL face): W SMALL, A (24°), D, D, A.
CYCLE = (0, 3, 7, 7, 3)


def timed_steps(env, actions, n: int) -> tuple[float, list[tuple[float, float, dict]]]:
    """Seconds per step over ``n`` steps of a walk: the ``actions`` cycle, except that at
    the end of a street the walker takes a branch (UP, else LEFT, else RIGHT, else turns
    the camera 90°) -- so junction views (with arrows) come at their natural rate. Also
    returns (camera bearing, pitch, state) of every timed step for the reference crops."""
    env.reset(seed=0, options={"task_index": 0})
    u = env.unwrapped
    poses, t_total, k = [], 0.0, 0
    for _ in range(n):
        a = actions[k % len(actions)]
        k += 1
        t = u.graph.trajectories[u.state.trajectory]
        if a == 0 and u.state.frame == t.last:  # W would not move: choose a branch
            ch = u._branch_choices()
            a = next(
                (14 + i for i, b in enumerate(("LEFT", "UP", "RIGHT")) if b == "UP" and b in ch),
                None,
            )
            if a is None:
                a = next((14 + i for i, b in enumerate(("LEFT", "UP", "RIGHT")) if b in ch), 10)
        t0 = time.perf_counter()
        _, _, term, trunc, info = env.step(a)
        t_total += time.perf_counter() - t0
        poses.append((info["pose"]["heading"], info["pitch"], info["state"]))
        if term or trunc:
            env.reset(seed=0, options={"task_index": 0})
    return t_total / n, poses


def main() -> None:
    from urban_gym.families.posegraph360 import tasks as T
    from urban_gym.families.posegraph360.env import PoseGraph360Env
    from urban_gym.families.posegraph360.world import PoseGraph, State, load_posegraph
    from urban_gym.families.posegraph360.world import graph as graph_module
    from urban_gym.render import perspective
    from urban_gym.world import load_city

    city = load_city("helsinki")
    build = time_call(lambda: PoseGraph.from_city(city), repeat=3)
    g = load_posegraph("helsinki")  # built and written to the world cache if not there yet

    def read_back():
        graph_module._GRAPHS.clear()  # forget this process's memo, as a fresh process has none
        load_posegraph("helsinki")

    read = time_call(read_back, repeat=5)
    # a long straight-ish task: map navigation, first hard task of the default suite
    task = next(
        t
        for t in T.PoseGraphTaskGenerator("helsinki").generate("map_navigation", 3)
        if t.difficulty == "hard"
    )
    rows = []
    for size in (512, 84):
        env = PoseGraph360Env(
            city="helsinki",
            tasks=[task],
            view_size=size,
            pano_width=2048,
            stagnation_limit=10_000,
            step_limit=10_000,
            away_limit=10_000,
            cache_mb=1024,
        )
        n = 200  # about 40 frames: they all fit the frame cache
        timed_steps(env, CYCLE, n)  # first pass: renders and caches the frames
        _, poses = timed_steps(env, CYCLE, n)
        views = []
        for yaw, pitch, st in poses:
            pano, ph = env.unwrapped.graph.panorama(State(**st))
            views.append((pano, round(yaw, 1), pitch, ph))

        def crops(views=views, size=size):
            for pano, yaw, pitch, ph in views:
                perspective(pano, yaw, pitch, 90.0, size, pano_heading=ph)

        src = env.unwrapped.graph.source
        misses = src.cache.misses
        steps, refs = [], []
        for _ in range(7):  # interleaved rounds, medians: robust to a busy machine
            steps.append(timed_steps(env, CYCLE, n)[0])
            refs.append(time_call(crops, repeat=1) / len(views))
        step, crop = statistics.median(steps), statistics.median(refs)
        if src.cache.misses != misses:
            raise RuntimeError("frames were rendered during the timed steps: grow cache_mb")
        rows.append(
            (
                f"{size}x{size} bare perspective crop (reference)",
                f"{crop * 1e6:.0f} us ({1 / crop:.0f}/s)",
                "1.0x",
                "",
            )
        )
        rows.append(
            (
                f"{size}x{size} env.step, frames cached",
                f"{step * 1e6:.0f} us ({1 / step:.0f} steps/s)",
                f"{step / crop:.2f}x",
                "<= 1.5x",
            )
        )
    # a step onto a frame not rendered yet (the renderer's cost)
    env = PoseGraph360Env(city="helsinki", tasks=[task], view_size=512, pano_width=2048)
    cold = []
    for _ in range(3):
        env.reset(seed=0, options={"task_index": 0})
        env.unwrapped.graph.source.cache.clear()
        t = time.perf_counter()
        env.step(0)
        cold.append(time.perf_counter() - t)
    rows.append(
        (
            "512x512 env.step onto an unrendered frame (2048x1024 pano)",
            f"{statistics.median(cold) * 1000:.0f} ms",
            "",
            "",
        )
    )
    rows.append(
        (
            "build the Helsinki pose graph",
            f"{build * 1000:.0f} ms",
            "",
            f"{len(g.junctions)} junctions, {g.n_frames} frames",
        )
    )
    rows.append(
        (
            "read it back from the world cache (load_posegraph, memo cleared)",
            f"{read * 1000:.1f} ms",
            f"{build / read:.0f}x faster than the build",
            "",
        )
    )
    print_table("PoseGraph360-v0 step throughput (Helsinki)", rows)


if __name__ == "__main__":
    main()
