"""CityWalk throughput on the default Helsinki suite: environment steps per second without
any view and with a 128x128 first-person view, each next to a reference measured in the
same run -- Gymnasium's ``CartPole-v1`` step for the no-view env (the cheapest standard
env) and a bare :class:`~urban_gym.render.FirstPersonRenderer` 128x128 frame for the view
env (so the ratio is the env's overhead on top of rendering).

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


def env_rate(view_size: int | None, steps: int, repeat: int = 3) -> tuple[float, float]:
    """Median steps/s over ``repeat`` runs of ``steps`` steps, and the median reset time (s)."""
    from urban_gym.envs.citywalk import CityWalkEnv

    env = CityWalkEnv(view_size=view_size)
    canon = [env.action_set.normalise(a) for a in ACTIONS]
    rates, resets = [], []
    env.reset(seed=0)
    for r in range(repeat):
        env.reset(seed=r)
        t0 = time.perf_counter()
        for i in range(steps):
            _, _, term, trunc, _ = env.step(canon[i % len(canon)])
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


def render_rate(frames: int, repeat: int = 3) -> float:
    from urban_gym.render import Conditions, FirstPersonRenderer
    from urban_gym.tasks.citywalk import DEFAULT_SUITE_PATH
    from urban_gym.tasks.spec import load_suite
    from urban_gym.world import load_city

    city = load_city("helsinki")
    r = FirstPersonRenderer(city, width=128, height=128)
    starts = [
        (t.start["x"], t.start["y"], t.start["heading"]) for t in load_suite(DEFAULT_SUITE_PATH)
    ]
    cond = Conditions()
    r.render(*starts[0], conditions=cond)
    rates = []
    for k in range(repeat):
        t0 = time.perf_counter()
        for i in range(frames):
            x, y, h = starts[(i + k * frames) % len(starts)]
            r.render(x, y, h + 13.0 * i, conditions=cond)
        rates.append(frames / (time.perf_counter() - t0))
    return statistics.median(rates)


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
        ren = render_rate(200)
    except ImportError:
        rows.append(("FirstPersonRenderer 128x128", "not available", "", ""))
    else:
        wv, _ = env_rate(128, 300)
        ren2 = render_rate(200)
        ren_ref = statistics.median([ren, ren2])
        rows += [
            ("FirstPersonRenderer 128x128 frame (reference)", f"{ren_ref:,.0f} frames/s", "1.0x", ""),
            ("CityWalk step, 128x128 view", f"{wv:,.0f} steps/s", f"{wv / ren_ref:.2f}x", ">= 300 steps/s"),
        ]  # fmt: skip
    print_table("CityWalk on Helsinki (default suite, one process)", rows)


if __name__ == "__main__":
    main()
