"""CityWalk throughput on the default Helsinki suite: environment steps per second without
any view and with a 128x128 first-person view, each next to a reference measured in the
same run -- Gymnasium's ``CartPole-v1`` step for the no-view env (the cheapest standard
env) and a bare :class:`~urban_gym.render.FirstPersonRenderer` drawing the same 128x128
views the env drew (same poses, pedestrians and conditions) for the view env, so that
ratio is the env's whole cost over its rendering (just below 1 when rendering dominates;
above 1 where the env reuses an unchanged view, e.g. after a jump).

The agent cycles through moves, sprints, turns, a turning move and a jump (no
``terminate``), so episodes run to the 150-step limit and resets are included.

Run: ``python benchmarks/bench_citywalk.py``. Goals: >= 5,000 steps/s without a view,
>= 300 steps/s with the 128x128 view.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import print_table  # noqa: E402

ACTIONS = [
    {"action": "move", "direction": "forward", "duration": 1.0},
    {"action": "sprint", "direction": "forward", "duration": 2.0},
    {"action": "look", "yaw": 30.0},
    {"action": "move", "direction": "forward", "duration": 1.5, "yaw_rate": 40.0},
    {"action": "move", "direction": "left", "duration": 1.0},
    {"action": "look", "yaw": -60.0},
    {"action": "sprint", "direction": "forward", "duration": 1.2},
    {"action": "jump"},
]


def env_rate(
    view_size: int | None, steps: int, repeat: int = 3, poses: list | None = None
) -> tuple[float, float]:
    """Median steps/s over ``repeat`` runs of ``steps`` steps, and the median reset time
    (s). When ``poses`` is a list, the first run's views (pose, pedestrians, conditions)
    are appended to it."""
    from urban_gym.families.citywalk.env import CityWalkEnv

    env = CityWalkEnv(view_size=view_size)
    canon = [env.action_set.normalise(a) for a in ACTIONS]
    rates, resets = [], []
    env.reset(seed=0)
    for r in range(repeat):
        env.reset(seed=r)
        t0 = time.perf_counter()
        for i in range(steps):
            _, _, term, trunc, _ = env.step(canon[i % len(canon)])
            if poses is not None and r == 0:
                w = env.walker
                peds = [tuple(p) for p in env.pedestrian_positions()]
                poses.append((w.x, w.y, w.heading, w.pitch, peds, dict(env.conditions)))
            if term or trunc:
                t1 = time.perf_counter()
                env.reset()
                resets.append(time.perf_counter() - t1)
        rates.append(steps / (time.perf_counter() - t0))
    if not resets:
        t1 = time.perf_counter()
        env.reset(seed=99)
        resets.append(time.perf_counter() - t1)
    return statistics.median(rates), statistics.median(resets)


def cartpole_rate(steps: int, repeat: int = 3) -> float:
    import gymnasium as gym

    env = gym.make("CartPole-v1").unwrapped
    rates = []
    for r in range(repeat):
        env.reset(seed=r)
        t0 = time.perf_counter()
        for i in range(steps):
            _, _, term, trunc, _ = env.step(i % 2)
            if term or trunc:
                env.reset()
        rates.append(steps / (time.perf_counter() - t0))
    return statistics.median(rates)


def render_rate(poses: list) -> float:
    """Frames/s of a fresh bare 128x128 FirstPersonRenderer drawing the same views the env
    drew (same poses, pedestrians and conditions, in the same order)."""
    from urban_gym.render import Conditions, FirstPersonRenderer
    from urban_gym.world import load_city

    r = FirstPersonRenderer(load_city("helsinki"), width=128, height=128)
    t0 = time.perf_counter()
    for x, y, h, pitch, peds, cond in poses:
        r.render(x, y, h, pitch, conditions=Conditions(**cond), pedestrians=peds)
    return len(poses) / (time.perf_counter() - t0)


def main() -> None:
    from urban_gym.world import load_city

    load_city("helsinki")  # load (and cache) the world outside the timings
    cp = cartpole_rate(20000)
    nv, nv_reset = env_rate(None, 6000)
    cp2 = cartpole_rate(20000)
    cp_ref = statistics.median([cp, cp2])
    rows = [
        ("CartPole-v1 step (reference)", f"{cp_ref:,.0f} steps/s", "1.0x", ""),
        ("CityWalk step, no view", f"{nv:,.0f} steps/s", f"{nv / cp_ref:.3f}x", ">= 5,000 steps/s"),
        ("CityWalk reset, no view", f"{nv_reset * 1000:.1f} ms", "", ""),
    ]
    try:
        from urban_gym.render import FirstPersonRenderer  # noqa: F401
    except ImportError:
        rows.append(("FirstPersonRenderer 128x128", "not available", "", ""))
    else:
        env_rates, ref_rates = [], []
        for _ in range(3):  # alternate env and reference, each from a cold renderer
            poses: list = []
            env_rates.append(env_rate(128, 300, repeat=1, poses=poses)[0])
            ref_rates.append(render_rate(poses))
        wv, ren = statistics.median(env_rates), statistics.median(ref_rates)
        rows += [
            (
                "FirstPersonRenderer 128x128, same views (reference)",
                f"{ren:,.0f} frames/s",
                "1.0x",
                "",
            ),
            (
                "CityWalk step, 128x128 view",
                f"{wv:,.0f} steps/s",
                f"{wv / ren:.2f}x",
                ">= 300 steps/s",
            ),
        ]
    print_table("CityWalk on Helsinki (default suite, one process)", rows)


if __name__ == "__main__":
    main()
