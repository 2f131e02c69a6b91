"""The native batched vector env against ViZDoom and against stable-baselines3's
``SubprocVecEnv``; run by ``bench_throughput.py`` (or alone: ``python
benchmarks/bench_vector.py [--quick]``).

* **ViZDoom** (:func:`vizdoom_rate`): the raw ``vizdoom.DoomGame`` of the wheel's
  ``basic.cfg`` at 160x120 RGB, frame skip 1, the screen buffer read every step, uniform
  random actions, a new episode whenever one finishes -- the first-person engine RL uses for
  fast 3D, one process (its engine runs in a child process of its own).
* **Native vector env** (:func:`native_rate`): ``gym.make_vec(id, num_envs=N)`` at N = 1, 8,
  32, 64 with uniform random *valid* actions drawn for the batch from ``action_masks()``;
  resets happen inside ``step`` (autoreset) and count. Each row builds a fresh vector env;
  the process-wide world cache stays warm. ``cores`` is the process's CPU seconds per
  second of the loop: on a machine other jobs share, it says how much of the machine the
  row got.
* **Scaling over cores**: the same N-env row drawn on 1 thread, on 2 threads, and in 2
  worker processes of one thread each (``workers=2``:
  :class:`urban_gym.envs.workers.ShardedVectorEnv`; ``cores`` then counts the workers' CPU
  time too), each vector env built once and the three timed in turn several times, medians
  reported (:func:`scaling_rates`).
* **Memory** (:data:`MEMORY`): peak RSS of one fresh process holding 64 CityWalk envs at
  84x84 in one native vector env after a few hundred batch steps.
* **PPO end to end** (:func:`ppo_rate`): sb3-contrib ``MaskablePPO`` (``MultiInputPolicy``,
  CPU, one torch thread) learning on CityWalk 84x84 with N envs through the native vector env
  (:func:`urban_gym.baselines.vec_env.make_native_vec_env`) and through ``SubprocVecEnv``
  over N processes of the RL face (:func:`urban_gym.wrappers.rl.make_rl_env`, text
  dropped, images kept at 84x84), and through the native vector env over 2 worker
  processes: timesteps per second of ``learn()``, rollouts and updates together, the same
  settings on every side (``--process-only`` runs just these and the memory row).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (label, env id, kwargs, goal) of the native vector env rows
NATIVE_ROWS: list[tuple[str, str, dict, str]] = [
    ("CityWalk 84x84", "UrbanGym/CityWalk-v0", {"view_size": 84}, ">= 2.0x ViZDoom"),
    ("PoseGraph360 84x84", "UrbanGym/PoseGraph360-v0", {"view_size": 84}, ">= 2.0x ViZDoom"),
    (
        "StreetGraph symbolic",
        "UrbanGym/StreetGraph-v0",
        {"observation": "symbolic"},
        ">= 20x MiniGrid",
    ),
]
NUM_ENVS = (1, 8, 32, 64)
#: N of the 1-thread / 2-thread / 2-worker scaling rows
SCALING_N = 32
#: the scaling rows' rounds (each way timed once a round, medians reported)
SCALING_ROUNDS = 5

MEMORY = """
import gymnasium as gym, numpy as np
import urban_gym
v = gym.make_vec("UrbanGym/CityWalk-v0", num_envs=64, view_size=84)
rng = np.random.default_rng(0)
v.reset(seed=0)
for _ in range({steps}):
    m = v.action_masks()
    v.step((rng.random(m.shape) * m).argmax(1))
with open("/proc/self/status") as f:
    print(next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:")))
"""


def vizdoom_rate(seconds: float, seed: int = 0) -> float:
    """Steps/s of the raw ViZDoom ``DoomGame`` (see the module docstring)."""
    import numpy as np
    import vizdoom as vzd

    game = vzd.DoomGame()
    game.load_config(os.path.join(vzd.scenarios_path, "basic.cfg"))
    game.set_screen_resolution(vzd.ScreenResolution.RES_160X120)
    game.set_screen_format(vzd.ScreenFormat.RGB24)
    game.set_window_visible(False)
    game.set_sound_enabled(False)
    game.set_mode(vzd.Mode.PLAYER)
    game.set_seed(seed)
    # ViZDoom writes its settings (_vizdoom.ini) to the working directory unless told where
    ini = tempfile.mkdtemp(prefix="vizdoom_")
    game.set_doom_config_path(os.path.join(ini, "_vizdoom.ini"))
    game.init()
    n = game.get_available_buttons_size()
    actions = [[int(i == j) for j in range(n)] for i in range(n)]
    rng = np.random.default_rng(seed)
    game.new_episode()
    steps, t0 = 0, time.perf_counter()
    while True:
        screen = game.get_state().screen_buffer  # the RGB frame, (120, 160, 3)
        assert screen.shape == (120, 160, 3)
        game.make_action(actions[int(rng.integers(n))], 1)
        steps += 1
        if game.is_episode_finished():
            game.new_episode()
        if steps % 50 == 0 and time.perf_counter() - t0 > seconds:
            break
    rate = steps / (time.perf_counter() - t0)
    game.close()
    shutil.rmtree(ini, ignore_errors=True)
    return rate


def _cpu_seconds(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used so far (Linux)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _make(env_id: str, kwargs: dict, n: int, threads: int | None, workers: int = 1) -> Any:
    """``gym.make_vec(env_id, num_envs=n, threads=threads[, workers=workers])``, reset with
    seed 0 and stepped 5 times (the first draws build the renderers).
    """
    import gymnasium as gym
    import numpy as np

    import urban_gym  # noqa: F401 - registers the ids

    extra = {"workers": workers} if workers > 1 else {}
    v = gym.make_vec(env_id, num_envs=n, threads=threads, **extra, **kwargs)
    v.reset(seed=0)
    v.bench_rng = np.random.default_rng(0)  # the actions' generator, kept with the env
    for _ in range(5):
        _random_step(v)
    return v


def _random_step(v: Any) -> None:
    """One batch step with uniform random valid actions drawn from ``action_masks()``."""
    m = v.action_masks()
    v.step((v.bench_rng.random(m.shape) * m).argmax(1))


def _timed(v: Any, seconds: float) -> tuple[float, float]:
    """``(steps/s, cores busy)`` of ``v`` stepped for ``seconds`` (at least 3 batches);
    cores counts the worker processes' CPU time too.
    """
    pids = list(getattr(v, "worker_pids", []))
    batches, t0 = 0, time.perf_counter()
    c0 = time.process_time() + _cpu_seconds(pids)
    while True:
        _random_step(v)
        batches += 1
        wall = time.perf_counter() - t0
        if batches >= 3 and wall > seconds:
            break
    cores = (time.process_time() + _cpu_seconds(pids) - c0) / wall
    return batches * v.num_envs / wall, cores


def native_rate(
    env_id: str,
    kwargs: dict,
    n: int,
    threads: int | None,
    seconds: float,
    workers: int = 1,
) -> tuple[float, float]:
    """``(steps/s, cores busy)`` of a fresh ``gym.make_vec(env_id, num_envs=n,
    threads=threads, workers=workers)`` with uniform random valid actions (steps/s counts
    every env's step; cores counts the worker processes' CPU time too).
    """
    v = _make(env_id, kwargs, n, threads, workers)
    try:
        return _timed(v, seconds)
    finally:
        v.close()


#: the ways the scaling rows run N envs: (label, threads, workers)
SCALING_WAYS = (("1 thread", 1, 1), ("2 threads", 2, 1), ("2 workers", 1, 2))


def scaling_rates(
    env_id: str, kwargs: dict, n: int, seconds: float, rounds: int
) -> dict[str, tuple[float, float]]:
    """``{way: (median steps/s, median cores)}`` of :data:`SCALING_WAYS`: one vector env
    each, built first, then timed in turn ``rounds`` times (the machine's speed drifts by
    tens of percent within minutes here: alternating gives every way the same drift).
    """
    import statistics

    venvs = {label: _make(env_id, kwargs, n, t, w) for label, t, w in SCALING_WAYS}
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in venvs}
    try:
        for _ in range(rounds):
            for label, v in venvs.items():
                runs[label].append(_timed(v, seconds))
    finally:
        for v in venvs.values():
            v.close()
    return {
        label: (statistics.median(r for r, _ in rs), statistics.median(c for _, c in rs))
        for label, rs in runs.items()
    }


def ppo_rate(kind: str, n: int, n_steps: int, updates: int) -> float:
    """Timesteps/s of ``MaskablePPO.learn`` on CityWalk 84x84 with ``n`` envs through the
    native vector env (``kind="native"``; ``"native-2"`` over 2 worker processes) or
    ``SubprocVecEnv`` (``kind="subproc"``).
    """
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import SubprocVecEnv, VecMonitor

    from urban_gym.baselines.vec_env import make_native_vec_env
    from urban_gym.wrappers.rl import make_rl_env

    torch.set_num_threads(1)
    kwargs = {"view_size": 84}
    if kind.startswith("native"):
        workers = int(kind.partition("-")[2] or 1)
        venv = make_native_vec_env("UrbanGym/CityWalk-v0", n, workers=workers, **kwargs)
    else:

        def one() -> object:
            return make_rl_env(
                "UrbanGym/CityWalk-v0", image_size=None, text="drop", env_kwargs=kwargs
            )

        venv = VecMonitor(SubprocVecEnv([one] * n, start_method="forkserver"))
    model = MaskablePPO(
        "MultiInputPolicy",
        venv,
        n_steps=n_steps,
        batch_size=64,
        n_epochs=1,
        seed=0,
        device="cpu",
    )
    model.learn(total_timesteps=n * n_steps)  # the first rollout: workers load the city
    t0 = time.perf_counter()
    model.learn(total_timesteps=n * n_steps * updates, reset_num_timesteps=False)
    rate = n * n_steps * updates / (time.perf_counter() - t0)
    venv.close()
    return rate


def python_cmd(code: str, timeout: float = 600) -> str:
    """The last line a fresh Python process running ``code`` prints."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return out.stdout.strip().splitlines()[-1]


def measure_native(quick: bool, rows: list[tuple[str, str, dict, str]] = NATIVE_ROWS) -> dict:
    """Steps/s and cores of the native vector env ``rows`` (N = 1, 8, 32, 64 with the
    default threads: measured, :class:`urban_gym.envs.vector.ThreadChoice`) and of the 1- and 2-thread rows at N = :data:`SCALING_N` of those
    that draw images.
    """
    seconds = 1.5 if quick else 4.0
    out: dict = {}
    for label, env_id, kwargs, _ in rows:
        for n in NUM_ENVS:
            out[f"{label} N={n}"] = native_rate(env_id, kwargs, n, None, seconds)
    for label, env_id, kwargs, _ in [r for r in rows if r in NATIVE_ROWS[:2]]:
        rates = scaling_rates(env_id, kwargs, SCALING_N, 2 * seconds, SCALING_ROUNDS)
        for way, rate in rates.items():
            out[f"{label} N={SCALING_N} {way}"] = rate
    return out


def print_native(
    native: dict,
    minigrid: float,
    vizdoom: float,
    rows: list[tuple[str, str, dict, str]] = NATIVE_ROWS,
) -> None:
    """Print :func:`measure_native`'s tables of ``rows`` with ratios to the references'
    steps/s.
    """
    print(
        "\n### Native vector env: gym.make_vec(id, num_envs=N), random valid actions, "
        "autoreset counted\n"
    )
    print(
        "(threads: the default -- 1 or min(N, cores), whichever drew the first batches "
        "faster; cores: CPU seconds per second the row got)\n"
    )
    print("| env | N | steps/s | cores | x ViZDoom | x MiniGrid | goal |")
    print("|---|---|---|---|---|---|---|")
    for label, _, _, goal in rows:
        for n in NUM_ENVS:
            rate, cores = native[f"{label} N={n}"]
            print(
                f"| {label} | {n} | {rate:,.0f} | {cores:.2f} | {rate / vizdoom:.2f}x "
                f"| {rate / minigrid:.2f}x | {goal if n == SCALING_N else ''} |"
            )
    scaled = [r for r in rows if r in NATIVE_ROWS[:2]]
    if not scaled:
        return
    print(
        f"\n### Native vector env over cores: N = {SCALING_N} on 1 thread, on 2 threads, and "
        "in 2 worker processes of 1 thread each (goal >= 1.8x the 1-thread rate); each built "
        f"once, timed in turn {SCALING_ROUNDS} times, medians\n"
    )
    print(
        "| env | 1 thread steps/s (cores) | 2 threads steps/s (cores) | scaling "
        "| 2 workers steps/s (cores) | scaling | 2 workers x ViZDoom |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, _, _, _ in scaled:
        one, c1 = native[f"{label} N={SCALING_N} 1 thread"]
        two, c2 = native[f"{label} N={SCALING_N} 2 threads"]
        wk, cw = native[f"{label} N={SCALING_N} 2 workers"]
        print(
            f"| {label} | {one:,.0f} ({c1:.2f}) | {two:,.0f} ({c2:.2f}) | {two / one:.2f}x "
            f"| {wk:,.0f} ({cw:.2f}) | {wk / one:.2f}x | {wk / vizdoom:.2f}x |"
        )


def memory_and_ppo(quick: bool) -> dict:
    """Measure and print the memory of 64 CityWalk envs and PPO's end-to-end rates."""
    steps = 100 if quick else 300
    peak = int(python_cmd(MEMORY.format(steps=steps)))
    print(
        f"\n### Memory: 64 CityWalk envs at 84x84 in one process (goal <= 2 GiB)\n\n"
        f"Peak RSS (VmHWM) of a fresh process after {steps} batch steps: "
        f"{peak / 2**30:.2f} GiB\n"
    )
    n, n_steps, updates = (4, 32, 2) if quick else (8, 64, 3)
    sub = ppo_rate("subproc", n, n_steps, updates)
    nat = ppo_rate("native", n, n_steps, updates)
    nat2 = ppo_rate("native-2", n, n_steps, updates)
    print(
        f"### MaskablePPO end to end on CityWalk 84x84: N = {n} envs, n_steps={n_steps}, "
        f"batch 64, 1 epoch, {updates} updates timed after a first one\n"
    )
    print("| vector env | timesteps/s | x SubprocVecEnv |")
    print("|---|---|---|")
    print(f"| SubprocVecEnv ({n} processes) | {sub:,.1f} | 1.00x |")
    print(f"| native vector env (one process) | {nat:,.1f} | {nat / sub:.2f}x |")
    print(f"| native vector env (2 worker processes) | {nat2:,.1f} | {nat2 / sub:.2f}x |")
    ppo = {"native": nat, "native_2_workers": nat2, "subproc": sub, "n": n}
    return {"memory_64_citywalk_84_bytes": peak, "ppo": ppo}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (noisier)")
    ap.add_argument("--skip-process", action="store_true", help="skip memory and PPO")
    ap.add_argument("--json", default="", help="also write the figures to this JSON file")
    ap.add_argument(
        "--process-only", action="store_true", help="only the memory and PPO measurements"
    )
    ap.add_argument(
        "--scaling",
        default="",
        metavar="ENV_ID",
        help="only the scaling rows (1 thread, 2 threads, 2 workers) of this id, at "
        "--view-size and --num-envs",
    )
    ap.add_argument("--view-size", type=int, default=84, help="with --scaling")
    ap.add_argument("--num-envs", type=int, default=SCALING_N, help="with --scaling")
    ap.add_argument(
        "--only",
        default="",
        help="run only the native rows whose label contains this text (e.g. StreetGraph), "
        "without memory and PPO",
    )
    args = ap.parse_args()
    rows = [r for r in NATIVE_ROWS if args.only.lower() in r[0].lower()]
    if not rows:
        ap.error(f"--only {args.only!r} matches none of {[r[0] for r in NATIVE_ROWS]}")
    import gymnasium as gym
    import minigrid  # noqa: F401 - registers MiniGrid ids

    from benchmarks.bench_throughput import rollout_rate

    seconds = 1.5 if args.quick else 5.0

    def refs() -> tuple[float, float]:
        env = gym.make("MiniGrid-Empty-8x8-v0")
        mg = rollout_rate(env, seconds, min_steps=1000)[0]
        env.close()
        return mg, vizdoom_rate(seconds)

    load = os.getloadavg()[0]
    if args.scaling:
        rates = scaling_rates(
            args.scaling,
            {"view_size": args.view_size},
            args.num_envs,
            3.0 if args.quick else 6.0,
            SCALING_ROUNDS,
        )
        base = rates["1 thread"][0]
        print(
            f"\nLoad average {load:.1f} on {os.cpu_count()} cores. {args.scaling}, view_size="
            f"{args.view_size}, N = {args.num_envs}; each way built once, timed in turn "
            f"{SCALING_ROUNDS} times, medians\n"
        )
        print("| way | steps/s | cores | over 1 thread |")
        print("|---|---|---|---|")
        for way, (rate, cores) in rates.items():
            print(f"| {way} | {rate:,.0f} | {cores:.2f} | {rate / base:.2f}x |")
        return
    if args.process_only:
        print(f"\nLoad average {load:.1f} on {os.cpu_count()} cores.")
        figures = {"load_average": load, **memory_and_ppo(args.quick)}
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))
        return
    before = refs()
    native = measure_native(args.quick, rows)
    after = refs()
    mg, vz = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
    print(
        f"\nLoad average {load:.1f} on {os.cpu_count()} cores. References before / after "
        f"the rows: MiniGrid {before[0]:,.0f} / {after[0]:,.0f}, ViZDoom {before[1]:,.0f} / "
        f"{after[1]:,.0f} steps/s (ratios to the means)"
    )
    print_native(native, mg, vz, rows)
    figures = {"load_average": load, "references": {"before": before, "after": after}}
    figures["native_vector"] = native
    if not args.skip_process and not args.only:
        figures.update(memory_and_ppo(args.quick))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
