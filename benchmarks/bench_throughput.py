"""Throughput as a reinforcement-learning rollout sees it, beside MiniGrid and CartPole.

Every registered id (and the variants the benchmarks page sets goals for: 84x84 views,
symbolic StreetGraph, ``pano_width``) runs in this one process with seeded random *masked* actions
(uniform over the valid entries of ``obs["action_mask"]``); episodes that end are reset
and the resets are counted in the time; nothing is pre-rendered or pre-cached (each row
builds a fresh env; process-wide caches that a real run would also share, such as the
loaded city, stay warm). The reference rows -- ``MiniGrid-Empty-8x8-v0`` and
``CartPole-v1`` -- run the same loop in the same process, before and after the rows, and
every row prints its ratio to MiniGrid's mean of the two. Secondary rows, labelled as such, repeat a row with the same seeds in the same
env: for PoseGraph360 and StreetGraph with their frame caches warm (what the older
per-family benchmarks report), for CityWalk with the distance fields and pedestrian crowds of
the tasks already seen (what a long training run has after its first minutes: the primary
row's few seconds see mostly new tasks of the 970).

Before the rows, one untimed process runs a few hundred random steps of every row's env:
on a fresh checkout that compiles the kernels into the package's cache, on a fresh machine
it fills the world cache -- one-time costs a training run does not pay again, reported
with their duration (the first step after an install, with the compile, is its own row of
the fresh-process table).

Also measured: the panorama 2048x1024 render time (absolute), the wall time of a fresh
Python process from start to its first ``step`` on each id (and on CityWalk-v0 with numba's
compile cache empty), the peak RSS of one process
holding the three Helsinki envs (after 200 and after 2,000 steps each), and the steps/s of ``gym.make_vec(...,
vectorization_mode="async")`` with 2 workers over 1 worker, with the CPU the workers got
(on a machine other jobs share, 2 workers cannot scale past the cores left to them), and
the same scaling for a control env (:mod:`benchmarks.busy_env`) whose steps only spend CPU:
as long as the env's mean step, and replaying the env's own recorded step times -- what
lockstep allows for steps of that length, and what the spread of the step times costs.

The reference rows also hold ViZDoom's raw ``DoomGame`` (160x120 RGB, frame skip 1, the
screen read each step), the fair peer for first-person pixels, and every row gives its ratio to
it. Between the rows and the references after them, the native batched vector env
(``gym.make_vec(id, num_envs=N)``) runs at N = 1, 8, 32, 64 and on 1 and 2 threads; after the
tables, the memory of 64 CityWalk envs in one process and MaskablePPO's end-to-end steps/s
through the native vector env and through ``SubprocVecEnv`` (:mod:`benchmarks.bench_vector`).

Run: ``python benchmarks/bench_throughput.py`` (about 10 minutes) or ``--quick`` (about
three, noisier). ``--only SUBSTRING`` limits the rows to labels containing it;
``--skip-process`` skips the fresh-process, memory, PPO and vector-env sections;
``--skip-native`` the native vector env's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (label, env id, kwargs, goal as a ratio to MiniGrid or None)
ROWS: list[tuple[str, str, dict, str]] = [
    (
        "StreetGraph symbolic (Helsinki)",
        "UrbanGym/StreetGraph-v0",
        {"observation": "symbolic"},
        ">= 10x",
    ),
    ("StreetGraph 4 views 84x84", "UrbanGym/StreetGraph-v0", {"image_size": 84}, ">= 2x"),
    ("StreetGraph-v0 (default 512x512 views)", "UrbanGym/StreetGraph-v0", {}, ""),
    ("StreetGraph-Procedural-v0", "UrbanGym/StreetGraph-Procedural-v0", {}, ""),
    ("CityWalk-NoView-v0", "UrbanGym/CityWalk-NoView-v0", {}, ">= 2x"),
    ("CityWalk first-person 84x84", "UrbanGym/CityWalk-v0", {"view_size": 84}, ">= 1.0x"),
    ("CityWalk-v0 first-person 128x128", "UrbanGym/CityWalk-v0", {}, ">= 0.5x"),
    ("PoseGraph360 84x84", "UrbanGym/PoseGraph360-v0", {"view_size": 84}, ">= 1.0x"),
    (
        "PoseGraph360 84x84 pano_width=512",
        "UrbanGym/PoseGraph360-v0",
        {"view_size": 84, "pano_width": 512},
        "",
    ),
    ("PoseGraph360-v0 512x512", "UrbanGym/PoseGraph360-v0", {}, ">= 0.1x"),
    ("PoseGraph360-Procedural-v0", "UrbanGym/PoseGraph360-Procedural-v0", {}, ""),
]
#: rows repeated with warm caches (secondary): the frames of PoseGraph360 and StreetGraph
#: (as the older benchmarks measure), the per-task distance fields and crowds of CityWalk
#: (what a long training run has after its first minutes)
CACHED_ROWS = (
    "PoseGraph360 84x84",
    "StreetGraph 4 views 84x84",
    "CityWalk-NoView-v0",
    "CityWalk first-person 84x84",
)
#: ids whose 2-worker async scaling is measured, with their kwargs
VECTOR_ROWS = [
    ("CityWalk first-person 84x84", "UrbanGym/CityWalk-v0", {"view_size": 84}),
    ("PoseGraph360 84x84", "UrbanGym/PoseGraph360-v0", {"view_size": 84}),
    ("StreetGraph 4 views 84x84", "UrbanGym/StreetGraph-v0", {"image_size": 84}),
]
HELSINKI_IDS = ("UrbanGym/PoseGraph360-v0", "UrbanGym/StreetGraph-v0", "UrbanGym/CityWalk-v0")


def masked_choice(rng, obs, n: int) -> int:
    """A uniform random valid action (all actions when the observation has no mask)."""
    import numpy as np

    mask = obs.get("action_mask") if isinstance(obs, dict) else None
    if mask is None:
        return int(rng.integers(n))
    # the valid entries of the 1-D mask (np.flatnonzero's result, without its ravel and
    # dispatch: the loop should cost the env's side no more than the references' side)
    valid = np.asarray(mask).nonzero()[0]
    return int(valid[rng.integers(len(valid))]) if len(valid) else 0


def rollout_rate(env, seconds: float, min_steps: int = 20, seed: int = 0) -> tuple[float, int]:
    """Steps/s of seeded random masked actions for about ``seconds`` (resets counted)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = env.action_space.n
    episode = 0
    obs, _ = env.reset(seed=seed)  # the first reset (world loading) is not counted
    t0 = time.perf_counter()
    steps = 0
    while True:
        obs, _, term, trunc, _ = env.step(masked_choice(rng, obs, n))
        steps += 1
        if term or trunc:
            episode += 1
            obs, _ = env.reset(seed=seed + 1000 * episode)
        if steps >= min_steps and (steps % 10 == 0) and time.perf_counter() - t0 > seconds:
            break
    return steps / (time.perf_counter() - t0), steps


def make(env_id: str, kwargs: dict):
    import gymnasium as gym

    import urban_gym  # noqa: F401 - registers the ids

    # the order-enforcing and checker wrappers are what gym.make gives a user: keep them
    return gym.make(env_id, **kwargs)


def references(seconds: float) -> dict[str, float]:
    """Steps/s of the reference envs: MiniGrid, CartPole and ViZDoom's raw ``DoomGame``
    (160x120 RGB, frame skip 1, screen read each step: :func:`bench_vector.vizdoom_rate`).
    """
    import gymnasium as gym
    import minigrid  # noqa: F401 - registers MiniGrid ids

    from benchmarks.bench_vector import vizdoom_rate

    out = {}
    for name in ("MiniGrid-Empty-8x8-v0", "CartPole-v1"):
        env = gym.make(name)
        out[name] = rollout_rate(env, seconds, min_steps=1000)[0]
        env.close()
    out[VIZDOOM] = vizdoom_rate(seconds)
    return out


VIZDOOM = "ViZDoom basic.cfg 160x120 RGB"


def panorama_ms(repeat: int) -> float:
    """Median ms of a 2048x1024 Helsinki panorama at positions 1 m apart."""
    import statistics

    from urban_gym.render import PanoramaRenderer
    from urban_gym.world.loader import load_city

    city = load_city("helsinki")
    r = PanoramaRenderer(city, 2048, 1024)
    x0, y0 = -190.7, -378.2  # a crossing in Kamppi (the gallery's panorama)
    r.render(x0, y0)
    times = []
    for k in range(repeat):
        t = time.perf_counter()
        r.render(x0 + 1.0 * (k % 5), y0)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


FIRST_STEP = """
import time, sys
t0 = time.perf_counter()
import gymnasium as gym, numpy as np
import urban_gym
env = gym.make({env_id!r})
obs, _ = env.reset(seed=0)
mask = obs.get("action_mask")
a = int(np.flatnonzero(mask)[0]) if mask is not None else 0
env.step(a)
print(time.perf_counter() - t0)
"""

WARM_UP = """
import time
from benchmarks.bench_throughput import make, rollout_rate
t0 = time.perf_counter()
for env_id, kwargs in {rows!r}:
    rollout_rate(make(env_id, kwargs), 0.0, min_steps={steps})
print(time.perf_counter() - t0)
"""

RSS = """
import resource, gymnasium as gym, numpy as np
import urban_gym
envs = [gym.make(i) for i in {ids!r}]
for e in envs:
    rng = np.random.default_rng(0)
    obs, _ = e.reset(seed=0)
    for _ in range({steps}):
        m = obs["action_mask"]
        obs, r, te, tr, _ = e.step(int(rng.choice(np.flatnonzero(m))))
        if te or tr:
            obs, _ = e.reset()
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1
# VmHWM: the peak of this process's own memory map. ru_maxrss is not: on Linux it keeps the
# parent's peak across fork and exec, so a child of a large benchmark process would report
# the parent's memory. RssFile: the resident pages of memory-mapped files (the render
# cache's ground raster and atlases: clean pages, shared by every process that maps them).
try:
    print(status("VmHWM"), status("RssAnon"), status("RssFile"))
except OSError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, -1, -1)
"""

VEC = """
import json, time, gymnasium as gym, numpy as np, psutil
import urban_gym
from benchmarks import busy_env
def run(env_id, n, seconds, **kwargs):
    v = gym.make_vec(env_id, num_envs=n, vectorization_mode="async", **kwargs)
    rng = np.random.default_rng(0)
    obs, _ = v.reset(seed=0)
    def act(obs):
        return np.array([int(rng.choice(np.flatnonzero(m))) for m in obs["action_mask"]])
    for _ in range(30):
        obs, *_ = v.step(act(obs))
    me = psutil.Process()
    kids = me.children()
    cpu = lambda procs: sum(p.cpu_times().user + p.cpu_times().system for p in procs)
    out = []
    for window in range(2):  # the workers' first seconds, then the seconds after them
        c0, m0 = cpu(kids), cpu([me])
        t0, steps = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            obs, *_ = v.step(act(obs))
            steps += n
        wall = time.perf_counter() - t0
        c1, m1 = cpu(kids), cpu([me])
        out += [steps / wall, (c1 - c0) / wall, (m1 - m0) / wall]
    v.close()
    return out
def recorded(seconds):
    # one process, the same loop: each step's seconds, a reset's added to the step that ended
    # the episode (autoreset runs it in that worker before the next step)
    env = gym.make({env_id!r}, **{kwargs!r})
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    times, episode = [], 0
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        t = time.perf_counter()
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if term or trunc:
            episode += 1
            obs, _ = env.reset(seed=1000 * episode)
        times.append(time.perf_counter() - t)
    env.close()
    return times[30:]
env = run({env_id!r}, 1, {seconds}, **{kwargs!r}) + run({env_id!r}, 2, {seconds}, **{kwargs!r})
times = recorded(2 * {seconds})
mean = float(np.mean(times))
const = run(busy_env.ID, 1, {seconds}, times=[mean]) + run(busy_env.ID, 2, {seconds}, times=[mean])
replay = run(busy_env.ID, 1, {seconds}, times=times) + run(busy_env.ID, 2, {seconds}, times=times)
ms = [1e3 * float(v) for v in (mean, *np.percentile(times, [50, 90, 99]))]
print(json.dumps({{"env": env, "step_ms": ms, "constant": const, "replayed": replay}}))
"""


def python_cmd(code: str, timeout: float = 600, **environ: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(environ)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return out.stdout.strip().splitlines()[-1]


def fmt_rate(v: float) -> str:
    return f"{v:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (noisier)")
    ap.add_argument("--only", default="", help="run only rows whose label contains this")
    ap.add_argument("--skip-process", action="store_true", help="skip subprocess sections")
    ap.add_argument(
        "--skip-native", action="store_true", help="skip the native vector env sections"
    )
    ap.add_argument("--json", default="", help="also write the figures to this JSON file")
    ap.add_argument(
        "--first-step",
        type=int,
        default=0,
        metavar="N",
        help="only the first-step table, N fresh processes per id (the first may build caches)",
    )
    args = ap.parse_args()
    if args.first_step < 0:
        ap.error(f"--first-step {args.first_step}: the runs per id must be 1 or more")
    if args.first_step:
        first_step_table(args.first_step)
        return
    seconds = 1.5 if args.quick else 5.0
    load = os.getloadavg()[0]
    from tqdm import tqdm

    figures: dict = {"load_average": load, "rows": {}}
    # one-time set-up, before anything is timed: a fresh checkout compiles the kernels into
    # the package's cache and a fresh machine fills the world cache (one process, the rows'
    # envs with their own kwargs, a few hundred random steps each, so that every kernel --
    # map labels and sprites too -- has run once)
    warm = float(python_cmd(WARM_UP.format(rows=[(r[1], r[2]) for r in ROWS], steps=300)))
    figures["warm_up_s"] = warm
    before = references(seconds)
    rows = [r for r in ROWS if args.only in r[0]]
    measured = []  # (label, rate, goal)
    for label, env_id, kwargs, goal in tqdm(rows, desc="envs", file=sys.stderr):
        env = make(env_id, kwargs)
        rate, steps = rollout_rate(env, seconds)
        figures["rows"][label] = rate
        measured.append((label, rate, goal))
        if label in CACHED_ROWS:
            rate2, _ = rollout_rate(env, seconds)
            figures["rows"][label + " (cached)"] = rate2
            what = "tasks' caches warm" if "CityWalk" in label else "frames cached"
            measured.append((f"{label} -- secondary: same seeds again, {what}", rate2, ""))
        env.close()
    native = {}
    if not args.skip_native:
        from benchmarks.bench_vector import measure_native

        native = measure_native(args.quick)
        figures["native_vector"] = native
    # the references again after the rows: a ratio is to their mean, so that a machine
    # slowing down or speeding up over the run moves both sides of it
    after = references(seconds)
    ref = {k: (before[k] + after[k]) / 2 for k in before}
    figures["references"] = {"before": before, "after": after}
    mg = ref["MiniGrid-Empty-8x8-v0"]
    vz = ref[VIZDOOM]
    table = [
        (
            "MiniGrid-Empty-8x8-v0 (reference; before / after the rows: "
            f"{fmt_rate(before['MiniGrid-Empty-8x8-v0'])} / {fmt_rate(after['MiniGrid-Empty-8x8-v0'])})",
            fmt_rate(mg),
            "1.00x",
            "",
        ),
        (
            "CartPole-v1 (reference)",
            fmt_rate(ref["CartPole-v1"]),
            f"{ref['CartPole-v1'] / mg:.2f}x",
            "",
        ),
    ]
    table.append(
        (
            f"{VIZDOOM} (reference; before / after: {fmt_rate(before[VIZDOOM])} / "
            f"{fmt_rate(after[VIZDOOM])})",
            fmt_rate(vz),
            f"{vz / mg:.3f}x",
            "",
        )
    )
    table += [
        (label, fmt_rate(rate), f"{rate / mg:.3f}x ({rate / vz:.2f}x ViZDoom)", goal)
        for label, rate, goal in measured
    ]
    pano = panorama_ms(5 if args.quick else 15)
    figures["panorama_ms"] = pano
    print(
        f"\n### Throughput, random masked actions, resets counted (load average {load:.1f}, "
        f"{os.cpu_count()} cores)\n"
    )
    print("| env | steps/s | x MiniGrid | goal |")
    print("|---|---|---|---|")
    for r in table:
        print("| " + " | ".join(r) + " |")
    print(
        f"\n(Before the rows, not timed in them: one process ran 300 random steps of every "
        f"row's env, {warm:.1f} s -- on a fresh checkout that compiles the kernels into the "
        "package's cache, on a fresh machine it fills the world cache.)"
    )
    print(f"\nPanorama 2048x1024 (Helsinki): {pano:.1f} ms (goal <= 20 ms)")
    if native:
        from benchmarks.bench_vector import print_native

        print_native(native, mg, vz)
    if not args.skip_process:
        if not args.skip_native:
            from benchmarks.bench_vector import memory_and_ppo

            figures.update(memory_and_ppo(args.quick))
        process_sections(args, figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


def first_step_table(runs: int) -> dict[str, list[float]]:
    """Seconds from start to first step of ``runs`` fresh processes per id, in order,
    printed as a table and returned by id."""
    from urban_gym.tasks.families import env_specs

    ENV_SPECS = env_specs()

    print(f"\n### A fresh process: start to first step, {runs} run(s) per id (goal <= 2 s)\n")
    print("| id | seconds, run by run |")
    print("|---|---|")
    out = {}
    for env_id in ENV_SPECS:
        times = [float(python_cmd(FIRST_STEP.format(env_id=env_id))) for _ in range(runs)]
        out[env_id] = times
        print(f"| {env_id} | {' / '.join(f'{t:.2f}' for t in times)} |")
    # the first use after an install: numba's cache empty (NUMBA_CACHE_DIR moved to a fresh
    # folder), so the kernels a first step runs are compiled in it
    with tempfile.TemporaryDirectory() as empty:
        cold = float(
            python_cmd(FIRST_STEP.format(env_id="UrbanGym/CityWalk-v0"), NUMBA_CACHE_DIR=empty)
        )
    out["UrbanGym/CityWalk-v0 (empty compile cache)"] = [cold]
    print(
        f"| UrbanGym/CityWalk-v0, numba's compile cache empty (first use after install) | {cold:.2f} |"
    )
    return out


def process_sections(args, figures: dict) -> None:
    first = first_step_table(1)
    figures["first_step_s"] = {env_id: times[0] for env_id, times in first.items()}
    print("\n### Peak RSS, the three Helsinki envs in one process (goal <= 1 GiB)\n")
    print("(VmHWM; at the end, the anonymous memory and the resident pages of memory-mapped")
    print("files -- the render cache's ground raster and atlases, shared between processes)\n")
    print("| steps per env | peak RSS | at the end: anonymous / file-backed |")
    print("|---|---|---|")
    for steps in (50, 500) if args.quick else (200, 2000):
        peak, anon, file = map(int, python_cmd(RSS.format(ids=HELSINKI_IDS, steps=steps)).split())
        figures.setdefault("rss_bytes", {})[steps] = peak
        print(
            f"| {steps:,} | {peak / 2**30:.3f} GiB | {anon / 2**30:.3f} / {file / 2**30:.3f} GiB |"
        )
    sec = 3.0 if args.quick else 8.0
    print("\n### gym.make_vec async: 2 workers over 1 (goal >= 1.7x on 2 cores)\n")
    print(
        f"(two windows of {sec:g} s each run: from the 31st step -- fresh workers still fill "
        "their caches -- and the next; cores busy: the workers' CPU seconds per second of "
        "the loop, out of 1 and 2; main: the main process's, which steps the workers in "
        "lockstep -- they wait while it merges their results and sends the next actions)\n"
    )
    print(
        "| env | window | 1 worker steps/s | 2 workers steps/s | scaling "
        "| cores busy (1 / 2) | main (1 / 2) |"
    )
    print("|---|---|---|---|---|---|---|")
    controls = []
    for label, env_id, kwargs in VECTOR_ROWS:
        got = json.loads(
            python_cmd(VEC.format(env_id=env_id, kwargs=kwargs, seconds=sec)).splitlines()[-1]
        )
        figures.setdefault("vector", {})[label] = got
        f = got["env"]
        for w, name in enumerate(("first", "second")):
            one, c1, m1 = f[3 * w : 3 * w + 3]
            two, c2, m2 = f[6 + 3 * w : 6 + 3 * w + 3]
            print(
                f"| {label} | {name} | {one:,.0f} | {two:,.0f} | {two / one:.2f}x | "
                f"{c1:.2f} / {c2:.2f} | {m1:.2f} / {m2:.2f} |"
            )
        controls.append((label, got))
    print(
        "\n### The same scaling for a control env (benchmarks/busy_env.py): steps that only "
        "spend CPU, no info to merge\n"
    )
    print(
        "(its steps as long as the env's mean step, or replaying the env's own step times as "
        "recorded in one process -- resets added to the step before them; second windows)\n"
    )
    print(
        "| env | its step ms: mean / p50 / p90 / p99 | env | control, mean time | control, replayed |"
    )
    print("|---|---|---|---|---|")
    for label, got in controls:
        ms = " / ".join(f"{v:.2f}" for v in got["step_ms"])
        ratios = [got[k][9] / got[k][3] for k in ("env", "constant", "replayed")]
        print(f"| {label} | {ms} | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")


if __name__ == "__main__":
    main()
