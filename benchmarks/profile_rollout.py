"""Where a rollout's time goes: cProfile over the loop ``bench_throughput.py`` times.

Seeded random masked actions with resets counted, on one env, for about ``--seconds``
after a warm-up of ``--warmup`` steps; prints the steps, resets and steps/s of the
profiled loop (slower than unprofiled: cProfile's own cost) and the functions by their own
time. ``--out FILE`` also writes the raw profile (``python -m pstats FILE``, snakeviz).

    .venv/bin/python benchmarks/profile_rollout.py UrbanGym/CityWalk-v0 --env-kwargs '{"view_size": 84}'

``--timing S`` first times S seconds of the same loop without the profiler, step by step.
``--vector N`` profiles instead the main process of ``gym.make_vec(..., vectorization_mode=
"async")`` with N workers (what it spends per step of the vector; its CPU time per step is
printed too), ``--native N`` the id's native vector env of N envs (``gym.make_vec``'s
default), and ``--first-step`` a fresh Python process from its first import to its first
``step`` (run as a child process, so nothing is loaded before). ``--passes`` times the
renderer's passes instead of profiling: each wrapped in ``time.perf_counter`` (a fraction of
a microsecond a call, where cProfile adds its cost to every Python call), printed as
microseconds per step of the loop and per call, nested passes inside their callers.
``--caches`` prints, after the loop, every in-memory cache of the process
(:class:`urban_gym.caching.LRUCache`) that was used: entries, megabytes, hits and misses
in the loop, and its hit rate there (to size a cache: rerun with another ``cache_mb``).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_throughput import make, masked_choice  # noqa: E402


def step_times(env, obs, rng, n: int, episode: int, seconds: float):
    """Time each step and reset of ``seconds`` of the loop (no profiler) and print the step
    percentiles, the mean reset and the resets' share of the time; returns the loop's
    ``(obs, episode)`` to go on from."""
    import numpy as np

    steps, resets = [], []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        a = masked_choice(rng, obs, n)
        t = time.perf_counter()
        obs, _, term, trunc, _ = env.step(a)
        steps.append(time.perf_counter() - t)
        if term or trunc:
            episode += 1
            t = time.perf_counter()
            obs, _ = env.reset(seed=1000 * episode)
            resets.append(time.perf_counter() - t)
    st = np.array(steps) * 1e3
    total = st.sum() + 1e3 * sum(resets)
    print(
        f"unprofiled, {len(st)} steps: step ms p50 {np.percentile(st, 50):.2f}, "
        f"p90 {np.percentile(st, 90):.2f}, p99 {np.percentile(st, 99):.2f}; "
        f"{len(resets)} resets, mean {1e3 * np.mean(resets or [0]):.2f} ms, "
        f"{100 * 1e3 * sum(resets) / total:.0f}% of the time"
    )
    return obs, episode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("env_id")
    p.add_argument("--env-kwargs", default="{}", help="JSON object of gym.make keyword arguments")
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--warmup", type=int, default=200, help="steps before profiling")
    p.add_argument("--top", type=int, default=25, help="functions to print")
    p.add_argument("--out", type=Path, help="write the raw profile here")
    p.add_argument(
        "--timing",
        type=float,
        default=0.0,
        metavar="S",
        help="first time S seconds of the loop unprofiled, step by step: percentiles and resets",
    )
    p.add_argument("--vector", type=int, default=0, metavar="N", help="profile an async vector env")
    p.add_argument(
        "--native", type=int, default=0, metavar="N", help="profile the native vector env of N envs"
    )
    p.add_argument("--first-step", action="store_true", help="profile a fresh process's first step")
    p.add_argument("--passes", action="store_true", help="time the renderer's passes (no profiler)")
    p.add_argument(
        "--caches", action="store_true", help="print the caches' hit rates over the loop"
    )
    args = p.parse_args(argv)
    import numpy as np

    kwargs = json.loads(args.env_kwargs)
    if not isinstance(kwargs, dict):
        p.error(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
    if args.vector < 0 or args.native < 0:
        p.error(f"--vector {args.vector} / --native {args.native}: N must be 1 or more")
    if args.first_step:
        return first_step_profile(args.env_id, kwargs, args.top)
    if args.vector or args.native:
        n, mode = (args.vector, "async") if args.vector else (args.native, None)
        return vector_profile(args.env_id, kwargs, n, args.seconds, args.top, mode, args.out)
    env = make(args.env_id, kwargs)
    rng = np.random.default_rng(0)
    n = env.action_space.n
    obs, _ = env.reset(seed=0)
    episode = 0
    for _ in range(args.warmup):
        obs, _, term, trunc, _ = env.step(masked_choice(rng, obs, n))
        if term or trunc:
            episode += 1
            obs, _ = env.reset(seed=1000 * episode)
    if args.timing:
        obs, episode = step_times(env, obs, rng, n, episode, args.timing)
    if args.passes:
        return pass_times(env, obs, rng, n, episode, args.seconds)
    if args.caches:
        return cache_rates(env, obs, rng, n, episode, args.seconds)
    prof = cProfile.Profile()
    steps = resets = 0
    t0 = time.perf_counter()
    prof.enable()
    while time.perf_counter() - t0 < args.seconds:
        obs, _, term, trunc, _ = env.step(masked_choice(rng, obs, n))
        steps += 1
        if term or trunc:
            episode += 1
            resets += 1
            obs, _ = env.reset(seed=1000 * episode)
    prof.disable()
    wall = time.perf_counter() - t0
    print(
        f"{args.env_id} {kwargs}: {steps} steps, {resets} resets, {steps / wall:,.0f} steps/s (profiled)"
    )
    if args.out:
        prof.dump_stats(str(args.out))
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
    return 0


#: (module, attribute) of the passes ``--passes`` times, outermost first
PASSES = [
    ("urban_gym.render.firstperson", "cast"),  # the caster as each renderer calls it
    ("urban_gym.render.panorama", "cast"),
    ("urban_gym.render.firstperson.FirstPersonRenderer", "_render_pitched"),
    ("urban_gym.render.firstperson", "check_position"),
    ("urban_gym.render.raycast", "_cast_compiled"),
    ("urban_gym.render.raycast", "_cast_numpy"),
    ("urban_gym.render.raycast", "find_hits"),
    ("urban_gym.render.raycast", "wall_candidates"),
    ("urban_gym.render.scene.Scene", "candidate_data"),
    ("urban_gym.render.raycast", "_runs"),
    ("urban_gym.render.raycast", "ground_maps"),
    ("urban_gym.render.raycast", "fill"),
    ("urban_gym.render.fill", "_draw_ground"),
    ("urban_gym.render.raycast", "draw_boards"),
    ("urban_gym.render.raycast", "draw_sprites"),
    ("urban_gym.render.sprites", "_plan"),
    ("urban_gym.render.sprites", "_draw_numpy"),
    ("urban_gym.render.raycast", "_weather"),
    ("urban_gym.render.map.MapRenderer", "render"),
    ("urban_gym.render.map.MapRenderer", "_canvas"),
    ("urban_gym.render.map.MapRenderer", "_draw_static"),
    ("urban_gym.render.map.MapRenderer", "_draw_labels"),
    ("urban_gym.render.map.MapRenderer", "_draw_markers"),
]


def pass_times(env, obs, rng, n: int, episode: int, seconds: float) -> int:
    """``--passes``: microseconds per step in each of :data:`PASSES` (and in every
    compiled kernel) over ``seconds`` of the loop."""
    import importlib
    from collections import Counter

    spent: Counter = Counter()
    calls: Counter = Counter()

    def timed(fn, label):
        def run(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[label] += time.perf_counter() - t
                calls[label] += 1

        return run

    def owner(path: str):
        parts = path.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for name in parts[i:]:
                obj = getattr(obj, name)
            return obj
        raise ImportError(path)

    targets = [(owner(m), a, f"{m.rsplit('.', 1)[-1]}.{a}") for m, a in PASSES]
    from urban_gym.render.kernels import jit

    targets += [(jit, name, f"kernel {name}") for name in jit.__all__]
    for obj, attr, label in targets:
        setattr(obj, attr, timed(getattr(obj, attr), label))
    steps = resets = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        t = time.perf_counter()
        obs, _, term, trunc, _ = env.step(masked_choice(rng, obs, n))
        spent["env.step"] += time.perf_counter() - t
        steps += 1
        if term or trunc:
            episode += 1
            resets += 1
            t = time.perf_counter()
            obs, _ = env.reset(seed=1000 * episode)
            spent["env.reset"] += time.perf_counter() - t
    wall = time.perf_counter() - t0
    print(f"{steps} steps, {resets} resets, {steps / wall:,.0f} steps/s (passes timed)\n")
    print("| pass | us a step | calls | us a call |")
    print("|---|---|---|---|")
    for label, sec in sorted(spent.items(), key=lambda kv: -kv[1]):
        k = calls[label] or (resets if label == "env.reset" else steps)
        print(f"| {label} | {sec / steps * 1e6:,.1f} | {k} | {sec / k * 1e6:,.1f} |")
    return 0


def cache_rates(env, obs, rng, n: int, episode: int, seconds: float) -> int:
    """``--caches``: the hits and misses of every in-memory cache over ``seconds`` of the
    loop, largest first."""
    from urban_gym import caching

    before = {id(c): (c.hits, c.misses) for c in list(caching._ALL_LRU)}
    steps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        obs, _, term, trunc, _ = env.step(masked_choice(rng, obs, n))
        steps += 1
        if term or trunc:
            episode += 1
            obs, _ = env.reset(seed=1000 * episode)
    wall = time.perf_counter() - t0
    print(f"{steps} steps, {steps / wall:,.0f} steps/s\n")
    print("| cache | bound MB | entries | MB | hits | misses | hit rate |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for c in list(caching._ALL_LRU):
        h0, m0 = before.get(id(c), (0, 0))
        hits, misses = c.hits - h0, c.misses - m0
        if hits + misses:
            rows.append((c.nbytes, c, hits, misses))
    for nbytes, c, hits, misses in sorted(rows, key=lambda r: -r[0]):
        bound = "-" if c.max_bytes is None else f"{c.max_bytes / 2**20:g}"
        name = c.name or type(c).__name__ + " (unnamed)"
        print(
            f"| {name} | {bound} | {len(c)} | {nbytes / 2**20:.1f} | {hits} | {misses} "
            f"| {hits / (hits + misses):.1%} |"
        )
    return 0


FIRST_STEP = """
import cProfile, pstats, time
t0 = time.perf_counter()
prof = cProfile.Profile()
prof.enable()
import gymnasium as gym, numpy as np
import urban_gym
env = gym.make({env_id!r}, **{kwargs!r})
obs, _ = env.reset(seed=0)
mask = obs.get("action_mask")
env.step(int(np.flatnonzero(mask)[0]) if mask is not None else 0)
prof.disable()
print({label!r}, f"{{time.perf_counter() - t0:.2f}} s from start to first step (profiled)")
pstats.Stats(prof).sort_stats("cumtime").print_stats({top})
"""


def first_step_profile(env_id: str, kwargs: dict, top: int) -> int:
    """Profile a fresh process from its first import to its first step (by cumulative
    time: what the first step waits for)."""
    import subprocess

    label = f"{env_id} {kwargs}:"
    code = FIRST_STEP.format(env_id=env_id, kwargs=kwargs, top=top, label=label)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", code], env=env).returncode


def vector_profile(
    env_id: str,
    kwargs: dict,
    n: int,
    seconds: float,
    top: int,
    mode: str | None = "async",
    out: Path | None = None,
) -> int:
    """Profile the main process of a vector env of ``n`` envs stepping seeded random masked
    actions (after 300 steps of warm-up): an async one (``mode="async"``: where its time per
    step of the vector goes, beside the workers' own work) or the id's native one
    (``mode=None``: ``gym.make_vec``'s default, all the work in this process)."""
    import gymnasium as gym
    import numpy as np

    import urban_gym  # noqa: F401 - registers the ids

    if mode is None:
        v = gym.make_vec(env_id, num_envs=n, **kwargs)
    else:
        v = gym.make_vec(env_id, num_envs=n, vectorization_mode=mode, **kwargs)
    rng = np.random.default_rng(0)
    obs, _ = v.reset(seed=0)

    def act(obs):
        if mode is None:  # the batch's masks, uniform over the valid entries (bench_vector.py)
            m = v.action_masks()
            return (rng.random(m.shape) * m).argmax(1)
        return np.array([masked_choice(rng, {"action_mask": m}, 0) for m in obs["action_mask"]])

    for _ in range(300):
        obs, *_ = v.step(act(obs))
    prof = cProfile.Profile()
    steps, c0, t0 = 0, time.process_time(), time.perf_counter()
    prof.enable()
    while time.perf_counter() - t0 < seconds:
        obs, *_ = v.step(act(obs))
        steps += 1
    prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    v.close()
    print(
        f"{env_id} {kwargs}, {n} {mode or 'native'} envs: {steps * n / wall:,.0f} steps/s "
        "(profiled); "
        f"the main process {1e3 * cpu / steps:.3f} ms CPU per step of the vector, "
        f"{1e3 * wall / steps:.3f} ms wall"
    )
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)
    if out:
        prof.dump_stats(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
